"""What an env that fails leaves for the trial and the user (`core.envfailures`), the one line
Tune's error text becomes (`error_summary`), and `run.fault` settings that cannot work."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from mobrl.core import envfailures
from mobrl.core.envfailures import EnvFailedError
from mobrl.core.errors import error_summary


class _Breaks(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        raise ValueError("value 1.5 at index 0 outside [0.0, 1.0]")


def test_a_guarded_env_records_its_error_and_raises_it_on(tmp_path) -> None:
    env = envfailures.guard(_Breaks(), str(tmp_path), "scenario.entry=mine.py:make", runner=2)
    env.reset()
    with pytest.raises(ValueError, match="value 1.5"):  # the env's own error, unchanged
        env.step(0)
    (data,) = envfailures.read(tmp_path)
    assert (data["where"], data["runner"], data["type"]) == ("step", 2, "ValueError")
    assert envfailures.one_line(data) == (
        "the env (scenario.entry=mine.py:make) failed in step on env runner 2: "
        "ValueError: value 1.5 at index 0 outside [0.0, 1.0]"
    )
    assert "raise ValueError" in envfailures.detail(data)
    assert envfailures.read(tmp_path, since=data["time"] + 1) == []
    # a trial reads the records of its own placement group (and those written outside Ray)
    assert len(envfailures.read(tmp_path, group="this trial's")) == 1
    (path,) = tmp_path.glob("*.json")
    path.write_text(path.read_text().replace('"group": null', '"group": "another trial\'s"'))
    assert envfailures.read(tmp_path, group="this trial's") == []


def test_making_an_env_records_what_stopped_it(tmp_path) -> None:
    with pytest.raises(ConnectionError):
        with envfailures.making(str(tmp_path), "scenario.address=127.0.0.1:9", runner=1):
            raise ConnectionError("external env at 127.0.0.1:9: no simulator answered")
    (data,) = envfailures.read(tmp_path)
    # the message names the address already: the line does not repeat it
    assert envfailures.one_line(data) == (
        "the env failed in making the env on env runner 1: "
        "ConnectionError: external env at 127.0.0.1:9: no simulator answered"
    )


def test_a_record_never_hides_the_env_error(tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    envfailures.record(blocked, "scenario=small", "step", RuntimeError("x"), 1)  # no raise
    assert envfailures.read(blocked) == []


def test_the_one_line_is_mobrl_s_own_whole_line_not_ray_s_wrapper() -> None:
    line = "the env (scenario.entry=a.py:make) failed in step on env runner 1: " + "x" * 300
    error = EnvFailedError(line, "The env's own traceback:\nTraceback ...\nRuntimeError: deep")
    text = (
        "Failure # 1\nray::PPO.train() (pid=1)\n  File x\nray.exceptions.ActorDiedError: "
        "The actor died unexpectedly.\n\nThe above exception was the direct cause of the "
        f"following exception:\n\nmobrl.core.envfailures.EnvFailedError: {error}\n"
    )
    assert error_summary(text) == line  # whole (no cut), without the type, not the traceback
    assert str(error).splitlines()[0] == line


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (
            ["run.fault.restart_env_runners=true", "run.resources.num_env_runners=0"],
            "run.fault.restart_env_runners=true restarts failed env runners, but the run "
            "samples in its own process",
        ),
        (["run.fault.max_env_runner_restarts=-1"], "must not be negative"),
    ],
)
def test_fault_settings_that_cannot_work_are_one_line(overrides, said) -> None:
    from mobrl.config import compose
    from mobrl.core.errors import UserError
    from mobrl.training.checks import check_numbers

    cfg = compose(["scenario=cartpole", *overrides])
    with pytest.raises(UserError, match=said.replace("(", r"\(")):
        check_numbers(cfg)
