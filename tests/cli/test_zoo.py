"""Zoo entries play in a fresh process that never imports Ray or torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mobrl.evaluation import zoo


@pytest.mark.parametrize("name", zoo.names())
def test_entry_and_baselines_play_without_ray_or_torch(name: str) -> None:
    probe = f"""
import sys, numpy as np
from mobrl.evaluation import zoo
policy = zoo.ZooPolicy.load("zoo:{name}")
width = policy.layers[0][1][0].shape[1]
obs = np.zeros((7, width), dtype=np.float32)
assert policy.actions(obs).shape[0] == 7
# a whole episode of the entry and of a baseline, as `mobrl evaluate` plays them
from mobrl.evaluation.policies import make_baseline
from mobrl.evaluation.rollout import run_episode
cells = zoo.entry("{name}").get("env_mode") in ("cells", "hierarchical")
for player in (policy, make_baseline("all_on" if cells else "greedy")):
    assert run_episode(policy.env_config, player, 0, max_steps=3)["length"] == 3
heavy = [m for m in sys.modules if m.split('.')[0] in ('ray', 'torch')]
assert not heavy, heavy[:5]
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
