"""Restoring the RLModules of an RLlib checkpoint portably and safely (no Ray, no Algorithm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, first_line

#: where the trained RLModules sit inside an algorithm checkpoint
RL_MODULE_SUBDIR = Path("learner_group") / "learner" / "rl_module"


def _drop_rl_module_config_notice(record: Any) -> bool:
    return "RLModuleConfig" not in record.getMessage()


def load_rl_modules(checkpoint: Path, trust: bool = False) -> dict[str, Any]:
    """Restore the trained RLModules (policy id -> module) without starting Ray. Unless
    `trust`, the checkpoint's pickles are first checked to need nothing but numpy, Gymnasium
    spaces and RLlib's own module classes (mobrl.core.safe_load)."""
    checkpoint = Path(checkpoint).absolute()
    if not checkpoint.exists():
        raise UserError(f"checkpoint '{checkpoint}' does not exist. Check the path.")
    module_dir = checkpoint / RL_MODULE_SUBDIR
    if not module_dir.is_dir():
        raise UserError(
            f"'{checkpoint}' is not an RLlib algorithm checkpoint (no {RL_MODULE_SUBDIR}). "
            "Point --checkpoint at a checkpoint_* dir or a run dir."
        )
    if not trust:
        from mobrl.core.safe_load import check_checkpoint

        check_checkpoint(module_dir, checkpoint)
    import logging

    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
    from ray.rllib.core.rl_module.rl_module import RLModule

    # RLlib's own checkpoints trigger Ray's deprecation notice about RLModuleConfig on restore;
    # drop that one notice, nothing else
    notices = logging.getLogger("ray._common.deprecation")
    if _drop_rl_module_config_notice not in notices.filters:
        notices.addFilter(_drop_rl_module_config_notice)

    try:
        module = RLModule.from_checkpoint(str(module_dir))
    except Exception as err:
        raise UserError(
            f"checkpoint '{checkpoint}' could not be restored ({type(err).__name__}: "
            f"{first_line(err)}). "
            "Use another checkpoint of the run."
        ) from err
    if isinstance(module, MultiRLModule):
        modules = {pid: module[pid] for pid in module.keys()}
        states = {pid: module_dir / pid / MODULE_STATE for pid in modules}
    else:
        modules = {"default_policy": module}
        states = {"default_policy": module_dir / MODULE_STATE}
    for pid, state_file in states.items():
        check_weights(modules[pid], state_file, pid, checkpoint, trust)
    return modules


#: the pickle of an RLModule's weights inside its checkpoint dir
MODULE_STATE = "module_state.pkl"


def check_weights(module: Any, state_file: Path, pid: str, checkpoint: Path, trust: bool) -> None:
    """The restored module acts with the checkpoint's weights: every tensor it has is in the
    saved state, with the same values. (RLlib restores a state that lacks weights without a
    word, leaving the freshly initialized ones.)"""
    import pickle

    import numpy as np

    state_dict = getattr(module, "state_dict", None)
    if state_dict is None or not state_file.is_file():
        return  # not a torch module, or a layout RLlib reads its own way
    with state_file.open("rb") as handle:
        if trust:
            saved = pickle.load(handle)
        else:
            from mobrl.core.safe_load import RestrictedUnpickler

            saved = RestrictedUnpickler(handle).load()  # already vetted by check_checkpoint
    saved = saved if isinstance(saved, dict) else {}
    params = {key: value.detach().cpu().numpy() for key, value in state_dict().items()}
    missing = [key for key in params if key not in saved]
    differ = [
        key
        for key in params
        if key in saved and not np.array_equal(np.asarray(saved[key]), params[key])
    ]
    if missing or differ:
        bad = missing or differ
        raise UserError(
            f"checkpoint '{checkpoint}' holds no trained weights for {len(bad)} of the "
            f"{len(params)} tensors of policy '{pid}' (e.g. {bad[0]}): it would act with "
            "untrained weights. Use another checkpoint of the run."
        )
