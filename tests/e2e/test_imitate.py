"""`run.imitate`: `mobrl train` imitates the oracle (DAgger into the RLModule before RL) and
`mobrl evaluate` of its checkpoint beats greedy on 20 paired seeds, which a smoke PPO run
without imitation does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mobrl.core import metrics as keys
from tests.conftest import run_mobrl
from tests.e2e.conftest import train_smoke

pytestmark = pytest.mark.slow

BASE = ("scenario=small", "env=ma", "env.obs=topk_gain")


def _vs_greedy(run_dir: Path, out: Path) -> dict:
    result = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "20", "--baselines", "greedy",
        "--output", str(out), cwd=out.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    return summary["paired_vs_trained"]["greedy"]["diff"][keys.UTILITY_MEAN]


def test_imitating_the_oracle_beats_greedy_where_smoke_ppo_does_not(tmp_path: Path) -> None:
    imitated = tmp_path / "imitated" / "run"
    train_smoke(imitated, *BASE, "run.imitate.expert=oracle", "run.imitate.episodes=2")
    diff = _vs_greedy(imitated, tmp_path / "eval_imitated")
    assert diff["mean"] - diff["ci95"] > 0, diff  # better than greedy, paired by seed
    plain = tmp_path / "plain" / "run"
    train_smoke(plain, *BASE)
    assert _vs_greedy(plain, tmp_path / "eval_plain")["mean"] < 0
