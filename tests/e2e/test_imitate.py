"""`run.imitate`: `mobrl train` imitates the oracle (DAgger into the RLModule before RL, with UEs
deciding in turns, each turn also observing the later UEs' greedy moves: RLlib's multi-agent
runner samples the turn-based env) and `mobrl evaluate`
of its checkpoint, which plays the turns in a fresh process, beats greedy on 20 paired seeds,
which a smoke PPO run without imitation does not."""

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
    """...and the zoo entry of the imitated run records its training time with the imitation
    in it, and when its evaluation during training first beat greedy."""
    imitated = tmp_path / "imitated" / "run"
    train_smoke(
        imitated, *BASE, "env.decide=in_turns", "env.turn_obs=greedy_ahead",
        "run.imitate.expert=oracle",
        "run.imitate.episodes=2",
        "run.eval.interval=1", "run.eval.episodes=4", "run.eval.baselines=[greedy,oracle]",
    )  # fmt: skip
    diff = _vs_greedy(imitated, tmp_path / "eval_imitated")
    assert diff["mean"] - diff["ci95"] > 0, diff  # better than greedy, paired by seed
    (results,) = imitated.glob("tune/*/result.json")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    imitation_s = rows[0]["imitation"]["time_s"]
    assert imitation_s > 0 and all(r["imitation"]["time_s"] == imitation_s for r in rows)
    # the last DAgger round's agreement, in every result (the trial's own lines go to its logs)
    agrees = rows[0]["imitation"]["agrees"]
    assert 0.8 < agrees <= 1 and all(r["imitation"]["agrees"] == agrees for r in rows), agrees
    assert all(0 <= r["evaluation"]["closed"] for r in rows)  # greedy and oracle evaluated
    exported = run_mobrl(
        "zoo", "export", "--checkpoint", str(imitated), "--name", "imitated",
        "--evaluation", str(tmp_path / "eval_imitated"), "--output", str(tmp_path / "zoo"),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stdout + exported.stderr
    training = json.loads((tmp_path / "zoo" / "imitated.json").read_text())["training"]
    last = rows[-1]
    assert training["imitation_s"] == round(imitation_s, 1)
    assert training["wall_time_s"] == round(last["time_total_s"] + imitation_s, 1)
    first = next((r for r in rows if r["evaluation"]["beats"]["greedy"]), None)  # 4 seeds
    if first is None:
        assert training["beat_greedy"] is None
    else:
        assert training["beat_greedy"]["iteration"] == first["training_iteration"]
        assert training["beat_greedy"]["s"] == round(first["time_total_s"] + imitation_s, 1)
    assert "closed_90" in training  # measured (reached or None)
    plain = tmp_path / "plain" / "run"
    train_smoke(plain, *BASE)
    assert _vs_greedy(plain, tmp_path / "eval_plain")["mean"] < 0


def test_imitating_a_planner_labels_its_moves_ahead(tmp_path: Path) -> None:
    """`run.imitate.expert=oracle_horizon` with `run.imitate.horizon` and `run.imitate.ahead`:
    the plan labels the turns where it departs from oracle's step, and the imitated policy,
    restored in a fresh process, beats greedy on 20 paired seeds."""
    run = tmp_path / "planned" / "run"
    train_smoke(
        run, *BASE, "env.decide=in_turns", "env.turn_obs=greedy_ahead",
        "run.imitate.expert=oracle_horizon", "run.imitate.horizon=2", "run.imitate.ahead=10",
        "run.imitate.episodes=2",
    )  # fmt: skip
    diff = _vs_greedy(run, tmp_path / "eval_planned")
    assert diff["mean"] - diff["ci95"] > 0, diff


def test_appo_imitates_into_its_policy_head_and_plays_the_imitated_policy(tmp_path: Path) -> None:
    """`run.imitate` with algo=appo: DAgger fits APPO's policy head before RL, and the
    evaluation at the first iteration, which plays the learner's weights (at a learning rate
    that leaves them as imitated), serves better than greedy, paired by seed, where an APPO
    smoke run without imitation plays far below it."""
    settings = ("algo=appo", "algo.training.lr=1e-7", "run.stop.iterations=1")
    evaluation = ("run.eval.interval=1", "run.eval.episodes=4", "run.eval.baselines=[greedy]")

    def first_result(run_dir: Path) -> dict:
        (results,) = run_dir.glob("tune/*/result.json")
        return json.loads(results.read_text().splitlines()[0])

    imitated = tmp_path / "imitated" / "run"
    train_smoke(
        imitated, *BASE, *settings, *evaluation,
        "run.imitate.expert=oracle", "run.imitate.episodes=2", "run.imitate.rounds=1",
    )  # fmt: skip
    first = first_result(imitated)
    assert first["imitation"]["time_s"] > 0
    assert first["evaluation"]["gap"]["greedy"]["mean"] > 0, first["evaluation"]["gap"]
    plain = tmp_path / "plain" / "run"
    train_smoke(plain, *BASE, *settings, *evaluation)
    assert "imitation" not in first_result(plain)
    assert first_result(plain)["evaluation"]["gap"]["greedy"]["mean"] < -0.05
