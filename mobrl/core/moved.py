"""Modules that moved, still importable under their old names: Tune's saved experiment state
and RLlib checkpoints of earlier runs pickle mobrl's callbacks by module path, and `--resume`
or a restore must find them there (the object is the new module itself)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any

#: old module path -> where it lives now
MOVED = {
    "mobrl.progress": "mobrl.training.progress",
    "mobrl.diskspace": "mobrl.training.diskspace",
    "mobrl.training_eval": "mobrl.training.periodic_eval",
    "mobrl.tuning": "mobrl.training.tuning",
    "mobrl.algos": "mobrl.training.algos",
    **{
        f"mobrl.{m}": f"mobrl.core.{m}"
        for m in (
            "errors",
            "console",
            "files",
            "protocols",
            "metrics",
            "rundir",
            "checkpoints",
            "safe_load",
        )
    },  # fmt: skip
    "mobrl.cli_options": "mobrl.cli.options",
    # the network model left mobrl.envs for mobrl.network
    **{
        f"mobrl.envs.{m}": f"mobrl.network.{m}"
        for m in (
            "engine",
            "engine_obs",
            "engine_rewards",
            "engine_step",
            "engine_views",
            "radio_engine",
            "power_engine",
            "power_arrays",
            "power_predict",
            "link_utility",
            "service",
            "neighbours",
            "pair_topk",
            "station_slots",
            "channel",
            "mobility",
            "mobility.base",
            "mobility.gauss_markov",
            "mobility.trace",
        )
    },  # fmt: skip
    "mobrl.callbacks": "mobrl.envs.callbacks",
    "mobrl.netstats": "mobrl.envs.netstats",
    "mobrl.faults": "mobrl.core.faults",
    "mobrl.policies": "mobrl.evaluation.policies",
    "mobrl.rollout": "mobrl.evaluation.rollout",
    "mobrl.zoo": "mobrl.evaluation.zoo",
    "mobrl.zoo.commands": "mobrl.evaluation.zoo.commands",
    **{
        f"mobrl.kinds{m}": f"mobrl.scenarios.kinds{m}"
        for m in (
            "",
            ".base",
            ".mobile",
            ".gym",
            ".arena",
        )
    },  # fmt: skip
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: Any) -> None:
        sys.modules[module.__spec__.name] = module  # the new module under its old name too


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())  # before the path finder, which would load a 2nd copy
