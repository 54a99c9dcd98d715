"""`scenario=external` end to end: mobile-env's `small` served by `mobrl.external` from other
processes trains to the same numbers as in process for the same seed (returns and every UE
metric in progress.csv, 3 iterations, with 1 and with 2 env runners, one simulator per env
runner), and a simulator that dies mid-run gives one line and a run dir that resumes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_mobrl
from tests.e2e.conftest import free_address

pytestmark = pytest.mark.slow

SMALL = json.dumps({"scenario": "small", "mode": "ma"})

#: a simulator that serves `small` and dies (the whole process, no goodbye) at a given step
DYING = """
import os, sys
from mobrl.external import mobile, serve_env

steps = 0


class Dying:
    def __init__(self):
        self.env = mobile("small", "ma")
        for name in ("possible_agents", "observation_spaces", "action_spaces", "core"):
            setattr(self, name, getattr(self.env, name))
        self.agents = []

    def reset(self, *, seed=None, options=None):
        out = self.env.reset(seed=seed, options=options)
        self.agents = self.env.agents
        return out

    def step(self, actions):
        global steps
        steps += 1
        if steps == int(sys.argv[2]):
            os._exit(1)
        out = self.env.step(actions)
        self.agents = self.env.agents
        return out

    def close(self):
        self.env.close()


serve_env(Dying, sys.argv[1])
"""


def _serve_small(start, address: str = "127.0.0.1:0") -> str:
    argv = [sys.executable, "-m", "mobrl.external", "mobrl.external:mobile", "--kwargs", SMALL]
    return start([*argv, "--address", address])


def _train(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    return run_mobrl("train", "run=smoke", f"hydra.run.dir={run_dir}", *overrides)


def _progress(run_dir: Path) -> pd.DataFrame:
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    return pd.read_csv(trial / "progress.csv")


@pytest.mark.parametrize("runners", [0, 2], ids=["in the trial's process", "2 env runners"])
def test_small_served_elsewhere_trains_to_the_in_process_numbers(
    simulators, tmp_path: Path, runners: int
) -> None:
    # one simulator per env runner (the trial's own process samples when there are none)
    addresses = [_serve_small(simulators) for _ in range(max(runners, 1))]
    common = ["run.stop.iterations=3", f"run.resources.num_env_runners={runners}"]
    local = _train(tmp_path / "local", "scenario=small", "env.sampler=multi_agent", *common)
    assert local.returncode == 0, local.stdout + local.stderr
    remote = _train(
        tmp_path / "remote", "scenario=external", f"scenario.address=[{','.join(addresses)}]",
        "preset=ppo/small/ma", *common,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stdout + remote.stderr
    ours, theirs = _progress(tmp_path / "local"), _progress(tmp_path / "remote")
    measured = [
        c
        for c in ours.columns
        if c.startswith(("env_runners/ue/", "env_runners/network/", "env_runners/fairness/"))
        or c in ("env_runners/episode_return_mean", "num_env_steps_sampled_lifetime")
    ]
    assert len(ours) == len(theirs) == 3
    assert "env_runners/ue/utility/mean" in measured and len(measured) > 20
    pd.testing.assert_frame_equal(ours[measured], theirs[measured], check_exact=True)


def test_a_simulator_that_dies_is_one_line_and_the_run_resumes(simulators, tmp_path: Path) -> None:
    address = free_address()
    script = tmp_path / "dying.py"
    script.write_text(DYING)
    simulators([sys.executable, str(script), address, "650"])  # dies in the 4th iteration
    run_dir = tmp_path / "run"
    overrides = ["scenario=external", f"scenario.address={address}", "run.stop.iterations=5"]
    died = _train(run_dir, *overrides)
    assert died.returncode == 1, died.stdout + died.stderr
    lines = [line for line in died.stderr.splitlines() if line.strip()]
    assert "Traceback" not in died.stdout + died.stderr
    assert lines[0].startswith("trial failed: ") and f"external env at {address}" in lines[0]
    assert "--retry-errored" in lines[1]
    assert len(_progress(run_dir)) == 3  # what was done is kept

    _serve_small(simulators, address)  # the simulator is back
    resumed = run_mobrl("train", "--resume", str(run_dir), "--retry-errored")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _progress(run_dir)["training_iteration"].iloc[-1] == 5
    assert not list((run_dir / "tune").glob("*/error.txt"))  # no stale error of the failure


#: a simulator of a small env whose infos carry a cost, `energy`
METERED = """
import sys
import gymnasium as gym
import numpy as np
from mobrl.external import serve_env


class Metered(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, False, self.t >= 20, {"energy": 2.0 + int(action)}


serve_env(Metered, sys.argv[1])
"""


def test_a_run_evaluates_on_its_simulator_moved_to_another_address(
    simulators, tmp_path: Path
) -> None:
    script = tmp_path / "metered.py"
    script.write_text(METERED)
    first = simulators([sys.executable, str(script), "127.0.0.1:0"])
    run_dir = tmp_path / "run"
    trained = _train(
        run_dir, "scenario=external", f"scenario.address={first}",
        "scenario.metrics=[energy:sum:min]", "+scenario.kwargs.step_timeout=5",
    )  # fmt: skip
    assert trained.returncode == 0, trained.stdout + trained.stderr
    simulators.kill_all()  # the training's simulator is gone; another serves elsewhere
    moved = simulators([sys.executable, str(script), "127.0.0.1:0"])
    began = time.monotonic()
    done = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "3", "--baselines", "random",
        "--output", str(tmp_path / "ev"), f"scenario.address={moved}",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - began < 25  # the old address is not waited for (timeout 30 s)
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    assert "info/energy" in json.dumps(summary)  # the run's metrics are kept
