"""`mobrl baselines`/`evaluate` of a user's env that raises mid-episode: one line naming the
env, the episode and the error, exit 1, no traceback; the finished episodes stay in the
journal, and the same command continues from them once the env is fixed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: a user's env that raises at its process's 120th step (50-step episodes: in the 3rd)
BREAKS = """
import os
import gymnasium as gym
import numpy as np

steps = 0


class Breaks(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        global steps
        steps += 1
        if steps == 120 and os.environ.get("BREAKS_FIXED") != "1":
            raise RuntimeError("value 1.5 at index 0 outside [0.0, 1.0]")
        self.t += 1
        return np.zeros(2, np.float32), 1.0, False, self.t >= 50, {}


def make():
    return Breaks()
"""


def _baselines(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "breaks.py").write_text(BREAKS)
    return subprocess.run(
        [sys.executable, "-m", "mobrl", "baselines", "scenario=custom",
         "scenario.entry=breaks.py:make", "--episodes", "5", "--workers", "1",
         "--output", "ev"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "COLUMNS": "200", **env},
    )  # fmt: skip


def test_an_env_that_raises_is_one_line_and_the_evaluation_continues(tmp_path: Path) -> None:
    failed = _baselines(tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stdout + failed.stderr
    (line,) = [x for x in failed.stderr.splitlines() if x.strip()]
    assert line == (
        f"error: the env (scenario.entry={tmp_path / 'breaks.py'}:make) failed in step "
        "(episode seed 2): RuntimeError: value 1.5 at index 0 outside [0.0, 1.0]; the "
        "evaluation stopped after 2 of 5 episodes; they are kept in 'ev': run the same "
        "command with --output ev to play the rest."
    )
    journal = tmp_path / "ev" / ".episodes.journal"
    assert len(journal.read_text().splitlines()) == 1 + 2  # its settings, then 2 episodes
    fixed = _baselines(tmp_path, BREAKS_FIXED="1")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "2 of 5 episodes played before" in fixed.stdout + fixed.stderr
    assert json.loads((tmp_path / "ev" / "summary.json").read_text())
