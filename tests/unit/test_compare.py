"""`mobrl compare`'s numbers: normalised scores by hand, the runs that line up and those
refused in one line, and the statistics against their definitions on small samples."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.reporting import compare_stats as st
from mobrl.reporting.compare_scores import at_budget, line_up, score
from mobrl.reporting.runs import Trial


def _trial(
    algo: str,
    seed: int,
    scores: list[float],
    scenario: str = "small",
    baselines: dict[str, float] | None = None,
    steps: int = 1000,
    **settings: object,
) -> Trial:
    """A trial evaluated at every iteration: `scores` of the eval metric, baselines' means."""
    baselines = {"greedy": 0.5, "oracle2": 0.7} if baselines is None else baselines
    n = len(scores)
    frame = pd.DataFrame(
        {
            keys.ITERATION: range(1, n + 1),
            keys.ENV_STEPS: [steps * (i + 1) for i in range(n)],
            keys.TIME_TOTAL: [2.0 * (i + 1) for i in range(n)],
            keys.EVAL_SCORE: scores,
        }
        | {f"evaluation/gap/{b}/mean": [s - v for s in scores] for b, v in baselines.items()}
    )
    base = {"algo.name": algo, "run.seed": seed, "scenario.name": scenario, "env.mode": "ma"}
    return Trial(Path(f"/runs/{algo}_{seed}"), f"T_{algo}_{seed}", base | settings, frame)


def test_score_is_normalised_from_greedy_to_the_reference() -> None:
    s = score(_trial("ppo", 0, [0.5, 0.6, 0.65]))
    assert (s.floor, s.ceiling) == ("greedy", "oracle2")
    np.testing.assert_allclose(s.score, [0.0, 0.5, 0.75])
    np.testing.assert_allclose(s.raw, [0.5, 0.6, 0.65])


def test_energy_runs_are_normalised_from_the_strongest_rule_to_energy_oracle() -> None:
    values = {"all_on": 0.30, "threshold": 0.40, "energy_oracle": 0.50}
    s = score(_trial("ppo", 0, [0.45], "uma19_energy", values, **{"env.mode": "cells"}))
    assert (s.floor, s.ceiling, s.task) == (
        "threshold",
        "energy_oracle",
        "uma19_energy (env=cells)",
    )
    assert s.score[0] == pytest.approx(0.5)


def test_gymnasium_tasks_score_the_return_over_the_solved_threshold() -> None:
    frame = pd.DataFrame(
        {keys.ENV_STEPS: [4000, 8000], keys.TIME_TOTAL: [1.0, 2.0], keys.RETURN_MEAN: [95.0, 237.5]}
    )
    settings = {"algo.name": "dqn", "run.seed": 0, "scenario.name": "cartpole"}
    settings |= {"scenario.kind": "gym", "scenario.id": "CartPole-v1"}
    s = score(Trial(Path("/r"), "T", settings, frame))
    np.testing.assert_allclose(s.score, [95 / 475, 0.5])  # CartPole-v1 is solved at 475


def test_a_task_solved_below_return_0_scores_from_the_random_policys_return() -> None:
    """Acrobot-v1 is solved at -100 from returns as low as -500: its 0 is the random
    policy's return on the evaluation's seeds (-480 here), so -100 scores 1 and -290 0.5."""
    gym = {"scenario.kind": "gym", "scenario.id": "Acrobot-v1", "scenario.name": "acrobot"}
    run = _trial("dqn", 0, [-480.0, -290.0, -100.0], baselines={"random": -480.0}, **gym)
    run.progress[keys.EVAL_RETURN_MEAN] = run.progress[keys.EVAL_SCORE]
    s = score(run)
    normalised_by = (s.floor, s.floor_value, s.ceiling, s.ceiling_value)
    assert normalised_by == ("random", -480.0, "solved", -100.0)
    np.testing.assert_allclose(s.score, [0.0, 0.5, 1.0])
    without = _trial("dqn", 0, [-290.0], baselines={}, **gym)
    without.progress[keys.EVAL_RETURN_MEAN] = without.progress[keys.EVAL_SCORE]
    with pytest.raises(UserError, match="solved at a return of -100, .*random among run.eval"):
        score(without)


def test_a_run_without_anything_to_normalise_by_is_refused() -> None:
    with pytest.raises(UserError, match="run.eval.baselines"):
        score(_trial("ppo", 0, [0.5], baselines={"greedy": 0.5}))


def test_the_budget_is_what_every_run_reached_and_scores_hold_since_the_last_evaluation() -> None:
    runs = [
        score(_trial("ppo", 0, [0.5, 0.6, 0.7])),
        score(_trial("dqn", 0, [0.6, 0.55], steps=1400)),
    ]
    tasks = line_up(runs)
    limits = at_budget(tasks, "env_steps")
    assert limits == {"small": 2800}  # dqn's 2 iterations of 1400
    assert [r.at["env_steps"] for r in runs] == pytest.approx([0.5, 0.25])  # ppo's 2000, dqn's 2800
    assert at_budget(tasks, "seconds") == {"small": 4.0}
    assert [r.at["seconds"] for r in runs] == pytest.approx([0.5, 0.25])


def test_evaluations_by_env_steps_line_up_at_their_marks() -> None:
    """With run.eval.every_env_steps each run is scored at the marks its evaluations stand
    for, not at the env steps of the iteration that passed them: an APPO whose iterations
    overshoot the 30k budget by 4k is scored at 30k like the PPO that stopped on it."""
    ppo = _trial("ppo", 0, [0.5, 0.55, 0.6, 0.6])
    ppo.progress[keys.ENV_STEPS] = [1000, 10000, 20000, 30000]
    ppo.progress[keys.EVAL_AT_ENV_STEPS] = [math.nan, 10000, 20000, 30000]
    appo = _trial("appo", 0, [0.5, 0.6, 0.55, 0.65, 0.7])
    appo.progress[keys.ENV_STEPS] = [3000, 13000, 22000, 27000, 34000]
    appo.progress[keys.EVAL_AT_ENV_STEPS] = [math.nan, 10000, 20000, math.nan, 30000]
    runs = [score(ppo), score(appo)]
    np.testing.assert_allclose(runs[1].env_steps, [10000, 20000, 30000])
    np.testing.assert_allclose(runs[1].score, [0.5, 0.25, 1.0])
    tasks = line_up(runs)
    assert at_budget(tasks, "env_steps") == {"small": 30000}
    assert [r.at["env_steps"] for r in runs] == pytest.approx([0.5, 1.0])
    # what the scoring evaluation cost: APPO's 30k mark came at its 5th iteration, 10 s in
    assert runs[1].cost_at("env_steps", 30000) == (30000, 10.0)
    # resumed after the 20k mark, a trial evaluates again at 20k: the first one counts
    resumed = _trial("appo", 0, [0.5, 0.6, 0.55, 0.65, 0.7])
    resumed.progress[keys.EVAL_AT_ENV_STEPS] = [math.nan, 10000, 20000, 20000, 30000]
    np.testing.assert_allclose(score(resumed).score, [0.5, 0.25, 1.0])
    # without the marks, APPO's 30k would be its evaluation at 27k: the budget's overshoot
    # costs it a whole iteration
    plain = score(
        Trial(appo.run_dir, appo.name, appo.settings, appo.progress.drop(
            columns=[keys.EVAL_AT_ENV_STEPS]))
    )  # fmt: skip
    assert plain.value_at("env_steps", 30000) == pytest.approx(0.75)  # its 0.65 at 27k


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([_trial("ppo", 0, [0.6]), _trial("ppo", 1, [0.6])], "two algorithms at least"),
        (
            [_trial("ppo", 0, [0.6]), _trial("dqn", 1, [0.6])],
            r"dqn ran seeds \[1\] and ppo \[0\]; compare runs with the same seeds",
        ),
        (
            [_trial("ppo", 0, [0.6]), _trial("ppo", 0, [0.6]), _trial("dqn", 0, [0.6])],
            "two runs with run.seed=0",
        ),
        (
            [
                _trial("ppo", 0, [0.6], **{"run.stop.iterations": 5}),
                _trial("dqn", 0, [0.6], **{"run.stop.iterations": 9}),
            ],
            r"differ in run.stop.iterations \(ppo: 5, dqn: 9\)",
        ),
        (
            [
                _trial("ppo", 0, [0.6], **{"run.eval.episodes": 20}),
                _trial("dqn", 0, [0.6], **{"run.eval.episodes": 5}),
            ],
            "run.eval.episodes",
        ),
        (
            [
                _trial("ppo", 0, [0.6], **{"run.eval.every_env_steps": 5000}),
                _trial("dqn", 0, [0.6], **{"run.eval.every_env_steps": 0}),
            ],
            r"differ in run.eval.every_env_steps \(ppo: 5000, dqn: 0\)",
        ),
        (
            [
                _trial("ppo", 0, [0.6]),
                _trial("dqn", 0, [0.6], baselines={"greedy": 0.5, "oracle": 0.8}),
            ],
            "normalised by different baselines",
        ),
    ],
)
def test_runs_that_do_not_line_up_are_refused_in_one_line(runs: list[Trial], message: str) -> None:
    with pytest.raises(UserError, match=message) as err:
        line_up([score(t) for t in runs])
    assert "\n" not in str(err.value)


def test_aggregates_by_their_definitions() -> None:
    # two tasks, four runs each
    a = np.array([0.0, 0.2, 0.4, 1.6])
    b = np.array([0.5, 0.5, 0.9, 1.0])
    everything = np.sort(np.concatenate([a, b]))  # 0, .2, .4, .5, .5, .9, 1, 1.6
    assert st.iqm(a, b) == pytest.approx(everything[2:6].mean())  # the middle half: .4 .5 .5 .9
    assert st.mean(a, b) == pytest.approx((0.55 + 0.725) / 2)
    assert st.median(a, b) == pytest.approx((0.55 + 0.725) / 2)  # two task means
    # 1 − mean(min(score, 1)): 1.6 counts as 1
    assert st.optimality_gap(a, b) == pytest.approx(
        1 - (0 + 0.2 + 0.4 + 1 + 0.5 + 0.5 + 0.9 + 1) / 8
    )


def test_intervals_hold_the_point_are_reproducible_and_need_two_runs() -> None:
    rng = np.random.default_rng(3)
    tasks = [rng.normal(0.5, 0.2, 5), rng.normal(0.8, 0.1, 5)]
    first = st.aggregates(tasks, reps=500)
    assert first == st.aggregates(tasks, reps=500)
    for name, (point, low, high) in first.items():
        assert low <= point <= high, name
    point, low, high = st.interval([np.array([0.3]), np.array([0.4])], st.iqm)
    assert point == pytest.approx(0.35) and math.isnan(low) and math.isnan(high)


def test_probability_of_improvement_counts_pairs_and_ties() -> None:
    # task 1: x beats y in 3 of 4 pairs; task 2: one tie of one pair -> 0.5
    x = [np.array([2.0, 3.0]), np.array([1.0])]
    y = [np.array([1.0, 2.5]), np.array([1.0])]
    # pairs on task 1: (2,1) win, (2,2.5) loss, (3,1) win, (3,2.5) win -> 0.75
    p, low, high = st.improvement(x, y, reps=200)
    assert p == pytest.approx((0.75 + 0.5) / 2)
    assert math.isnan(low)  # task 2 has one run each: nothing to resample


def test_the_profile_is_the_share_of_runs_above_each_level() -> None:
    tasks = [np.array([0.1, 0.6]), np.array([0.9, 0.3])]
    point, low, high = st.profile(tasks, np.array([0.0, 0.5, 1.0]), reps=200)
    np.testing.assert_allclose(point, [1.0, 0.5, 0.0])
    assert np.all(low <= point) and np.all(point <= high)
