"""Loading a checkpoint without running code it carries: a restricted unpickler as gatekeeper.

RLlib stores RLModules as pickles (`class_and_ctor_args.pkl`, `module_state.pkl`). A pickle
names the callables that rebuild its objects, and unpickling calls them: a crafted checkpoint can
name `os.system`. Before RLlib restores anything, `check_checkpoint` unpickles every pickle of
the RLModule dir with an unpickler that resolves only what RLlib's own checkpoints need:

- numpy arrays, dtypes and scalars, and numpy's random generator states;
- Gymnasium spaces; `collections.OrderedDict`; plain builtin containers;
- classes from Ray RLlib's own package that are RLModules, RLModule specs or model catalogs.

Anything else (a function, a class from another package, your own RLModule class) stops the
load with a one-line error, unless the user vouches for the checkpoint (`--trust-checkpoint`).
The same opcodes then run again in RLlib's own load, which can therefore only call what was
admitted here.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError

#: exact (module, name) pairs admitted besides the RLlib classes below
ALLOWED = {
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "slice"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("numpy", "dtype"),
    ("numpy", "ndarray"),
    *{
        (f"numpy.{core}.{mod}", name)
        for core in ("core", "_core")
        for mod, name in (
            ("multiarray", "_reconstruct"),
            ("multiarray", "scalar"),
            ("numeric", "_frombuffer"),
        )
    },
    # mobrl's own RLModule (algo=mappo's team critic)
    ("mobrl.training.mappo", "TeamCriticPPOModule"),
    ("numpy.random._pickle", "__bit_generator_ctor"),
    ("numpy.random._pickle", "__generator_ctor"),
    ("numpy.random._pickle", "__randomstate_ctor"),
    ("numpy.random._pcg64", "PCG64"),
    ("numpy.random._pcg64", "PCG64DXSM"),
    ("numpy.random._mt19937", "MT19937"),
    ("numpy.random._philox", "Philox"),
    ("numpy.random._sfc64", "SFC64"),
    ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
    *{
        (f"gymnasium.spaces.{mod}", cls)
        for mod, cls in (
            ("box", "Box"),
            ("discrete", "Discrete"),
            ("multi_discrete", "MultiDiscrete"),
            ("multi_binary", "MultiBinary"),
            ("dict", "Dict"),
            ("tuple", "Tuple"),
        )
    },
}
#: the flag that admits everything, named in the error message
TRUST_FLAG = "--trust-checkpoint"


def _rllib_class(module: str, name: str) -> bool:
    """A class of Ray RLlib's own package that is an RLModule, a spec of one, or a catalog."""
    if not module.startswith("ray.rllib."):
        return False
    import importlib

    from ray.rllib.core.models.catalog import Catalog
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec

    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    bases = (RLModule, RLModuleSpec, MultiRLModuleSpec, Catalog)
    return isinstance(obj, type) and issubclass(obj, bases)


class _Refused(Exception):
    def __init__(self, module: str, name: str) -> None:
        super().__init__(f"{module}.{name}")
        self.module, self.name = module, name


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the names in ALLOWED and RLlib's own RLModule, spec and catalog classes."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED or _rllib_class(module, name):
            return super().find_class(module, name)
        raise _Refused(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("persistent_load", str(pid)[:40])


def check_checkpoint(module_dir: Path, checkpoint: Path) -> None:
    """Unpickle every pickle under `module_dir` restrictedly; a one-line error naming the first
    object that is not admitted (the checkpoint is then not restored at all)."""
    for path in sorted(Path(module_dir).rglob("*.pkl")):
        try:
            with path.open("rb") as handle:
                RestrictedUnpickler(handle).load()
        except _Refused as refused:
            where = path.relative_to(module_dir)
            raise UserError(
                f"checkpoint '{checkpoint}' needs '{refused.module}.{refused.name}' to load "
                f"({where}), which mobrl does not run from a checkpoint it cannot vouch for. "
                f"If you trust where the checkpoint comes from, add {TRUST_FLAG}."
            ) from None
        except Exception:  # noqa: BLE001
            # corrupt or truncated: RLlib's own load stops at the same opcode (pickles run in
            # order) and reports it, so what follows the error can never run either
            continue
