"""The keep policy of a trial's checkpoints: the best `run.checkpoint.keep` by the run's
metric, always the latest, as Tune keeps them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mobrl.training.checkpoint_policy import KeepPolicy

METRIC = "env_runners/episode_return_mean"


def _result(iteration: int, score: float | None) -> dict:
    """A result as RLlib returns it: the score nested, absent when `score` is None."""
    runners = {} if score is None else {"episode_return_mean": score}
    return {"training_iteration": iteration, "env_runners": runners}


def _register(policy: KeepPolicy, scores: list[float | None]) -> list[str]:
    """Register one checkpoint per score; return the names of the dirs dropped, in order."""
    dropped: list[str] = []
    for i, score in enumerate(scores):
        path = Path(f"/trial/checkpoint_{i:06d}")
        dropped += [p.name for p in policy.register(path, _result(i + 1, score))]
    return dropped


def _kept(policy: KeepPolicy) -> list[str]:
    return [c["dir"] for c in policy.kept()]


def _best(policy: KeepPolicy) -> list[str]:
    return [k.path.name for k in policy.best()]


def test_max_keeps_the_highest_scores_and_the_latest() -> None:
    policy = KeepPolicy(2, METRIC, "max")
    dropped = _register(policy, [1.0, 5.0, 3.0, 4.0, 0.5])
    assert _kept(policy) == ["checkpoint_000001", "checkpoint_000003", "checkpoint_000004"]
    assert _best(policy) == ["checkpoint_000003", "checkpoint_000001"]  # the best last
    assert sorted(dropped) == ["checkpoint_000000", "checkpoint_000002"]
    assert policy.latest().path.name == "checkpoint_000004"


def test_min_keeps_the_lowest_scores() -> None:
    policy = KeepPolicy(1, METRIC, "min")
    dropped = _register(policy, [1.0, 5.0, 3.0, 0.5, 2.0])
    assert _kept(policy) == ["checkpoint_000003", "checkpoint_000004"]
    assert _best(policy) == ["checkpoint_000003"]
    # each dropped once, when it stopped being the latest or the best
    assert dropped == [
        "checkpoint_000001", "checkpoint_000002", "checkpoint_000000",
    ]  # fmt: skip


def test_a_checkpoint_is_deleted_once_it_is_neither_best_nor_latest() -> None:
    policy = KeepPolicy(1, METRIC, "max")
    assert _register(policy, [2.0]) == []
    assert [p.name for p in policy.register(Path("/t/checkpoint_000001"), _result(2, 1.0))] == []
    assert _kept(policy) == ["checkpoint_000000", "checkpoint_000001"]
    dropped = policy.register(Path("/t/checkpoint_000002"), _result(3, 0.0))
    assert [p.name for p in dropped] == ["checkpoint_000001"]  # the former latest, worse


def test_of_equal_scores_the_later_checkpoint_ranks_higher() -> None:
    policy = KeepPolicy(1, METRIC, "max")
    dropped = _register(policy, [3.0, 3.0, 1.0])
    assert _best(policy) == ["checkpoint_000001"]
    assert _kept(policy) == ["checkpoint_000001", "checkpoint_000002"]
    assert dropped == ["checkpoint_000000"]
    policy = KeepPolicy(1, METRIC, "min")
    _register(policy, [3.0, 3.0, 5.0])
    assert _best(policy) == ["checkpoint_000001"]


@pytest.mark.parametrize("mode", ["max", "min"])
def test_nan_and_missing_scores_rank_below_every_number(mode: str) -> None:
    policy = KeepPolicy(2, METRIC, mode)
    worst = -math.inf if mode == "max" else math.inf
    _register(policy, [math.nan, None, worst, "n/a", 7.0])  # type: ignore[list-item]
    assert _best(policy) == ["checkpoint_000002", "checkpoint_000004"]
    assert policy.score(_result(1, math.nan)) == policy.score(_result(1, None))
    assert policy.score(_result(1, None)) < policy.score(_result(1, worst))


def test_the_latest_is_kept_however_it_scores() -> None:
    policy = KeepPolicy(1, METRIC, "max")
    for i, score in enumerate([9.0, 1.0, math.nan, None]):
        policy.register(Path(f"/t/checkpoint_{i:06d}"), _result(i + 1, score))
        assert policy.kept()[-1] == {"dir": f"checkpoint_{i:06d}", "iteration": i + 1}
    assert _kept(policy) == ["checkpoint_000000", "checkpoint_000003"]


def test_keep_none_keeps_every_checkpoint_in_age_order() -> None:
    policy = KeepPolicy(None)
    assert _register(policy, [5.0, 1.0, None, 3.0]) == []
    names = [f"checkpoint_{i:06d}" for i in range(4)]
    assert _kept(policy) == names and _best(policy) == names
    assert policy.kept()[0] == {"dir": "checkpoint_000000", "iteration": 1}


def test_a_flat_score_counts_as_the_nested_one() -> None:
    policy = KeepPolicy(1, METRIC, "max")
    assert policy.score({METRIC: 2.0}) == policy.score(_result(1, 2.0)) == (True, 2.0)


def test_the_policy_of_a_run_config() -> None:
    def cfg(keep: int | None, mode: str = "max") -> object:
        return OmegaConf.create(
            {"run": {"checkpoint": {"keep": keep}}, "tune": {"metric": METRIC, "mode": mode}}
        )

    policy = KeepPolicy.from_config(cfg(3, "min"))
    assert (policy.keep, policy.metric, policy.mode) == (3, METRIC, "min")
    assert KeepPolicy.from_config(cfg(None)).metric is None
    with pytest.raises(ValueError, match="keep must be >= 1"):
        KeepPolicy.from_config(cfg(0))
