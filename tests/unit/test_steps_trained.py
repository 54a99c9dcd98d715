"""Env steps trained: rows trained as env steps, not the train batch once per minibatch."""

from __future__ import annotations

import pytest

from mobrl.training.steps_trained import count_env_steps_trained


def _result(env: float, env_life: float, rows: float, rows_life: float, **runners) -> dict:
    """A result as RLlib 2.60 hands it to `on_train_result` (the keys that matter here)."""
    return {
        "env_runners": {"num_env_steps_sampled": 200.0, **runners},
        "learners": {
            "__all_modules__": {
                "num_env_steps_trained": env,
                "num_env_steps_trained_lifetime": env_life,
                "num_module_steps_trained": rows,
                "num_module_steps_trained_lifetime": rows_life,
                "num_env_steps_trained_throughput": env / 2.0,
                "num_env_steps_trained_lifetime_throughput": {
                    "throughput_since_last_reduce": env / 2.0,
                    "throughput_since_last_restore": env_life / 4.0,
                },
            },
            "default_policy": {"num_module_steps_trained": rows},
        },
    }


def test_ue_slots_count_env_steps_of_the_network() -> None:
    # small (5 UEs), run=smoke, 2nd iteration: 200 env steps = 1,000 slot steps + 10 bootstrap
    # rows, 11 minibatches of 100 rows (1 epoch); RLlib logs 1,010 per minibatch
    result = _result(11_110.0, 22_220.0, 1_100.0, 2_200.0)
    count_env_steps_trained(result=result, rows_per_env_step=5)
    totals = result["learners"]["__all_modules__"]
    assert totals["num_env_steps_trained"] == 220.0
    assert totals["num_env_steps_trained_lifetime"] == 440.0
    assert totals["num_env_steps_trained_throughput"] == pytest.approx(110.0)
    lifetime_rate = totals["num_env_steps_trained_lifetime_throughput"]
    assert lifetime_rate["throughput_since_last_reduce"] == pytest.approx(110.0)
    assert lifetime_rate["throughput_since_last_restore"] == pytest.approx(110.0)
    # RLlib's own counts of rows stay as they were
    assert totals["num_module_steps_trained"] == 1_100.0
    assert result["learners"]["default_policy"]["num_module_steps_trained"] == 1_100.0


def test_ue_slots_quick_run_counts_every_epoch() -> None:
    # small, run=quick: 1,000 env steps (5,080 rows), 2 epochs in 21 minibatches of 500
    result = _result(106_680.0, 106_680.0, 10_500.0, 10_500.0)
    count_env_steps_trained(result=result, rows_per_env_step=5)
    totals = result["learners"]["__all_modules__"]
    assert totals["num_env_steps_trained"] == 2_100.0
    assert totals["num_env_steps_trained_lifetime"] == 2_100.0


def test_single_agent_env_counts_its_rows_trained() -> None:
    # env=central (and stock CartPole): one row per env step; RLlib logged 3 x 202 rows
    result = _result(
        606.0,
        1_212.0,
        300.0,
        600.0,
        num_module_steps_sampled={"default_policy": 200.0},
        num_env_steps_sampled_lifetime=400.0,
        num_module_steps_sampled_lifetime={"default_policy": 400.0},
    )
    count_env_steps_trained(result=result)
    totals = result["learners"]["__all_modules__"]
    assert totals["num_env_steps_trained"] == 300.0
    assert totals["num_env_steps_trained_lifetime"] == 600.0


def test_multi_agent_sampler_counts_env_steps_per_agent_step_sampled() -> None:
    # two policies, 5 UEs a step: 1,000 agent steps sampled in 200 env steps
    result = _result(
        9_999.0,
        9_999.0,
        2_000.0,
        2_000.0,
        num_module_steps_sampled={"p0": 400.0, "p1": 600.0},
        num_env_steps_sampled_lifetime=200.0,
        num_module_steps_sampled_lifetime={"p0": 400.0, "p1": 600.0},
    )
    count_env_steps_trained(result=result)
    assert result["learners"]["__all_modules__"]["num_env_steps_trained"] == 400.0


def test_results_without_learner_counts_pass_unchanged() -> None:
    for result in ({}, {"learners": {}}, {"env_runners": {"num_env_steps_sampled": 1.0}}):
        before = repr(result)
        count_env_steps_trained(result=result, rows_per_env_step=5)
        assert repr(result) == before
