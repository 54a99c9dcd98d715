"""Safe loading: a checkpoint's pickles may name nothing but numpy, Gymnasium spaces and RLlib's
own module classes; anything else is refused before RLlib unpickles it, and never runs."""

from __future__ import annotations

import os
import pickle
from collections import OrderedDict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.core.safe_load import check_checkpoint


class _Planted:
    """Unpickling this runs a shell command (here: creating a marker file)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _module_dir(tmp_path: Path, state: object) -> Path:
    module_dir = tmp_path / "rl_module"
    (module_dir / "default_policy").mkdir(parents=True)
    spaces = {"obs": gym.spaces.Box(-1.0, 1.0, (17,), np.float32), "act": gym.spaces.Discrete(4)}
    (module_dir / "default_policy" / "class_and_ctor_args.pkl").write_bytes(pickle.dumps(spaces))
    (module_dir / "default_policy" / "module_state.pkl").write_bytes(pickle.dumps(state))
    return module_dir


def test_weights_spaces_and_generators_load(tmp_path: Path) -> None:
    state = OrderedDict(w=np.ones((3, 4), np.float32), b=np.zeros(4), n=np.int64(3))
    state["rng"] = np.random.default_rng(0)
    check_checkpoint(_module_dir(tmp_path, state), tmp_path)


def test_a_planted_command_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    module_dir = _module_dir(tmp_path, {"weights": np.ones(3), "x": _Planted(marker)})
    with pytest.raises(UserError, match=r"needs '(posix|os)\.system'.*--trust-checkpoint"):
        check_checkpoint(module_dir, tmp_path)
    assert not marker.exists()
    pickle.loads((module_dir / "default_policy" / "module_state.pkl").read_bytes())
    assert marker.exists()  # the pickle is live: the check is what kept it from running


@pytest.mark.parametrize(
    "obj,name",
    [
        (eval, "builtins.eval"),
        (pytest.raises, "_pytest.*raises"),
        (_Planted, "tests.unit.test_safe_load._Planted"),
        (np.load, "numpy.load"),
    ],
)
def test_functions_and_foreign_classes_are_refused(tmp_path: Path, obj, name: str) -> None:
    with pytest.raises(UserError, match=f"needs '{name}'"):
        check_checkpoint(_module_dir(tmp_path, {"x": obj}), tmp_path)


def test_rllib_module_classes_pass_but_not_other_rllib_names(tmp_path: Path) -> None:
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.utils import try_import_torch

    check_checkpoint(_module_dir(tmp_path / "a", {"cls": DefaultPPOTorchRLModule}), tmp_path)
    with pytest.raises(UserError, match="try_import_torch"):
        check_checkpoint(_module_dir(tmp_path / "b", {"f": try_import_torch}), tmp_path)


def test_a_corrupt_pickle_is_left_to_rllibs_own_error(tmp_path: Path) -> None:
    module_dir = _module_dir(tmp_path, {"w": np.ones(2)})
    (module_dir / "default_policy" / "module_state.pkl").write_bytes(b"\x80\x05garbage")
    check_checkpoint(module_dir, tmp_path)  # no verdict: restoring then fails with its message
