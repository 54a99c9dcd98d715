"""Run-dir bookkeeping: the manifest, finding checkpoints, and restoring RLModules portably."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from mobrl.errors import UserError, first_line

MANIFEST = "manifest.json"
#: a run's training outcome (best return, best and last checkpoints), written by `mobrl train`
RUN_SUMMARY = "summary.json"
RESOLVED_CONFIG = "config.yaml"
#: Tune's experiment dir inside a run dir
TUNE_DIR = "tune"
#: marker file RLlib writes into every algorithm checkpoint
RLLIB_CHECKPOINT_MARKER = "rllib_checkpoint.json"
#: where the trained RLModules sit inside an algorithm checkpoint
RL_MODULE_SUBDIR = Path("learner_group") / "learner" / "rl_module"

_PACKAGES = ("mobrl", "ray", "torch", "gymnasium", "mobile-env", "hydra-core", "numpy")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def build_manifest(
    cfg: Any, env_config: dict[str, Any], policy_ids: list[str], command: list[str]
) -> dict[str, Any]:
    """Everything needed to rebuild env and policies of a run on another machine."""
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "python": platform.python_version(),
        "scenario": cfg.scenario.name,
        "scenario_kind": cfg.scenario.kind,
        "scenario_id": cfg.scenario.id,
        "env_mode": env_config["mode"],
        "env_config": env_config,
        "algo": cfg.algo.name,
        "policy_ids": policy_ids,
        "seed": cfg.run.seed,
        "command": " ".join(command),
        "mobrl_commit": source_commit(),
    }


def source_commit() -> str | None:
    """The git commit of the mobrl source tree when it runs from a checkout (else None),
    with `-dirty` when the package's files differ from that commit."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return None

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "mobrl")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not commit:
        return None
    return f"{commit}-dirty" if changed else commit


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> Path:
    from mobrl.files import atomic_write_json

    return atomic_write_json(run_dir / MANIFEST, manifest)


def find_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the run that `path` (a checkpoint, trial or run dir) belongs to."""
    for folder in [path, *path.parents]:
        candidate = folder / MANIFEST
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text())
            except json.JSONDecodeError as err:
                raise UserError(
                    f"manifest '{candidate}' is not valid JSON ({err}). Restore it from a backup "
                    "or name the scenario with overrides."
                ) from err
    return None


def list_checkpoints(path: Path) -> list[Path]:
    """All RLlib algorithm checkpoints at or below `path`, oldest first within each trial."""
    path = Path(path)
    if (path / RLLIB_CHECKPOINT_MARKER).is_file():
        return [path]
    found = sorted(p.parent for p in path.rglob(RLLIB_CHECKPOINT_MARKER))
    return [p for p in found if p.name.startswith("checkpoint_")]


def _drop_rl_module_config_notice(record: Any) -> bool:
    return "RLModuleConfig" not in record.getMessage()


def load_rl_modules(checkpoint: Path, trust: bool = False) -> dict[str, Any]:
    """Restore the trained RLModules (policy id -> module) without starting Ray. Unless
    `trust`, the checkpoint's pickles are first checked to need nothing but numpy, Gymnasium
    spaces and RLlib's own module classes (mobrl.safe_load)."""
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
        from mobrl.safe_load import check_checkpoint

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
            from mobrl.safe_load import RestrictedUnpickler

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
