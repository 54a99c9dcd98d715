"""Evaluation during training (`run.eval.*`, `run.stop.beat`): config checks, the stop rule,
and the callback's numbers against `mobrl evaluate`'s own rollout (no Ray)."""

from __future__ import annotations

import pytest

from mobrl.core import metrics
from mobrl.core.errors import UserError
from mobrl.evaluation.paired import mean_ci
from mobrl.training.checks import validate_command_line
from mobrl.training.tuning import rank_by_evaluation, stop_criteria


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["run.eval.interval=-1"], "run.eval.interval must be >= 0"),
        (["run.eval.interval=2", "run.eval.episodes=1"], "run.eval.episodes must be at least 2"),
        (["run.stop.beat=greedy"], "run.stop.beat=greedy needs evaluation during training"),
        (
            ["run.eval.interval=2", "run.eval.baselines=[gredy]"],
            "unknown baseline 'gredy'. Did you mean 'greedy'",
        ),
        (
            ["run.eval.interval=2", "run.eval.baselines=[full]", "run.stop.beat=greedy"],
            "run.stop.beat=greedy is not among run.eval.baselines",
        ),
        (
            ["scenario=cartpole", "run.eval.interval=2", "run.stop.beat=greedy"],
            "baseline 'greedy' does not apply to CartPole-v1",
        ),
    ],
)
def test_bad_eval_settings_are_one_line_errors(overrides: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        validate_command_line(overrides)


def test_beat_stops_on_the_evaluations_verdict_and_ranking_uses_evaluation() -> None:
    cfg = validate_command_line(["run.eval.interval=5", "run.stop.beat=greedy"])
    assert stop_criteria(cfg)[metrics.eval_beats("greedy")] == 1
    rank_by_evaluation(cfg)
    assert cfg.tune.metric == metrics.EVAL_SCORE
    other = validate_command_line(["run.eval.interval=5", "tune.metric=time_total_s"])
    rank_by_evaluation(other)
    assert other.tune.metric == metrics.TIME_TOTAL  # a metric the user chose stays


def test_evaluation_is_due_at_start_every_interval_at_checkpoints_and_at_the_end() -> None:
    from mobrl.envs.factory import env_config_from
    from mobrl.training.periodic_eval import PeriodicEvaluation, periodic_evaluation

    ev = PeriodicEvaluation({"kind": "gym"}, 4, 2, 0, [], [], checkpoint_frequency=10)
    assert [i for i in range(1, 21) if ev.due(i)] == [1, 4, 8, 10, 12, 16, 20]
    # the result that ends the trial on budget is evaluated too (its checkpoint is the last)
    cfg = validate_command_line(
        ["scenario=cartpole", "run.eval.interval=4", "run.stop.iterations=7",
         "run.stop.env_steps=5000", "run.stop.beat=random"]
    )  # fmt: skip
    ev = periodic_evaluation(cfg, env_config_from(cfg))
    assert metrics.eval_beats("random") not in ev.final_when
    assert ev.is_last({metrics.ITERATION: 7, metrics.ENV_STEPS: 100})
    assert ev.is_last({metrics.ITERATION: 3, metrics.ENV_STEPS: 5100})
    assert not ev.is_last({metrics.ITERATION: 6, metrics.ENV_STEPS: 4000})
    nested = validate_command_line(["run.eval.interval=4", "run.stop.return_mean=-30"])
    ev = periodic_evaluation(nested, env_config_from(nested))
    assert ev.is_last({"env_runners": {"episode_return_mean": -20.0}})
    assert not ev.is_last({"env_runners": {"episode_return_mean": float("nan")}})


def test_evaluation_by_env_steps_stands_for_the_mark_it_passed(monkeypatch) -> None:
    """run.eval.every_env_steps: the first result past each multiple is evaluated and
    recorded as that multiple (the largest, where an iteration passes several); the other
    results carry nan, so progress.csv has the column from the first row on."""
    import math

    import mobrl.training.periodic_eval as pe

    ev = pe.PeriodicEvaluation({"kind": "gym"}, 0, 2, 0, [], [], every_env_steps=5000)
    steps = [1000, 4999, 5000, 9000, 11000, 26000, 29000, 30500]
    assert [ev.mark(n) for n in steps] == [None, None, 5000, None, 10000, 25000, None, 30000]
    assert [i for i in range(1, 12) if ev.due(i)] == [1]  # no interval: the first only

    ev = pe.PeriodicEvaluation({"kind": "gym"}, 0, 2, 0, [], [], every_env_steps=5000)
    evaluated: list[int] = []
    monkeypatch.setattr(pe, "learned_modules", lambda algorithm, ids: {})
    monkeypatch.setattr(ev, "evaluate", lambda modules: evaluated.append(1) or {"gap": {}})
    marks = []
    for i, n in enumerate([1000, 6000, 8000, 12000], start=1):
        result = {metrics.ITERATION: i, metrics.ENV_STEPS: n}
        ev(algorithm=None, result=result)
        marks.append(result[metrics.EVALUATION]["at_env_steps"])
    assert len(evaluated) == 3  # the first iteration, then the marks 5000 and 10000
    assert math.isnan(marks[0]) and math.isnan(marks[2]) and marks[1::2] == [5000, 10000]

    # a restored trial's callback is new: its first result (the iteration after the
    # checkpoint at 10000 env steps) passed the marks 5000 and 10000 already; a run that
    # started afresh evaluates the marks its first iteration passes
    for since, iteration, expected in [(1, 6, 15000), (1, 1, 15000), (3, 6, 15000)]:
        ev = pe.PeriodicEvaluation({"kind": "gym"}, 0, 2, 0, [], [], every_env_steps=5000)
        monkeypatch.setattr(ev, "evaluate", lambda modules: {"gap": {}})
        result = {
            metrics.ITERATION: iteration,
            metrics.RESTORED_ITERATIONS: since,
            metrics.ENV_STEPS: 16000,
            "env_runners": {"num_env_steps_sampled": 6000},
        }
        ev(algorithm=None, result=result)
        assert result[metrics.EVALUATION]["at_env_steps"] == expected
        assert ev._marks == 3
        result = {metrics.ITERATION: 7, metrics.RESTORED_ITERATIONS: 2, metrics.ENV_STEPS: 19000}
        ev(algorithm=None, result=result)
        assert math.isnan(result[metrics.EVALUATION]["at_env_steps"])
    ev = pe.PeriodicEvaluation({"kind": "gym"}, 0, 2, 0, [], [], every_env_steps=5000)
    ev._restored_marks(
        {metrics.ITERATION: 6, metrics.RESTORED_ITERATIONS: 1, metrics.ENV_STEPS: 16000,
         "env_runners": {"num_env_steps_sampled": 1000}}
    )  # fmt: skip
    assert ev.mark(16000) is None and ev.mark(20000) == 20000  # 15000 passed before

    cfg = validate_command_line(["run.eval.every_env_steps=5000", "run.stop.beat=greedy"])
    assert pe.evaluates(cfg) and stop_criteria(cfg)[metrics.eval_beats("greedy")] == 1
    with pytest.raises(UserError, match="run.eval.every_env_steps must be >= 0"):
        validate_command_line(["run.eval.every_env_steps=-5"])


def test_callback_reports_paired_gaps_that_match_evaluate(monkeypatch) -> None:
    """The callback's return and gap to `full` equal those computed from `mobrl evaluate`'s
    rollout of the same policy on the same seeds; `beats` follows the CI's lower bound."""
    from mobrl.envs.factory import env_config_from
    from mobrl.evaluation.policies import FullPolicy, GreedyPolicy
    from mobrl.evaluation.rollout import run_episode
    from mobrl.training.periodic_eval import PeriodicEvaluation

    cfg = validate_command_line(["scenario=small", "env.sampler=multi_agent"])
    env_config = env_config_from(cfg)
    seeds = list(range(500, 506))
    ev = PeriodicEvaluation(env_config, 1, len(seeds), 500, ["full", "noop"], ["default_policy"])
    # the policy under test: greedy, through TrainedPolicy's place in the callback
    monkeypatch.setattr(
        "mobrl.evaluation.policies.TrainedPolicy",
        lambda modules, env_config, explore: GreedyPolicy(),
    )
    result = {metrics.ITERATION: 1}
    ev(algorithm=type("A", (), {"get_module": lambda self, pid: None})(), result=result)
    section = result[metrics.EVALUATION]
    greedy = [run_episode(env_config, GreedyPolicy(), s)["return"] for s in seeds]
    full = [run_episode(env_config, FullPolicy(), s)["return"] for s in seeds]
    assert section["return_mean"] == pytest.approx(sum(greedy) / len(seeds))
    gap, half, _ = mean_ci([g - f for g, f in zip(greedy, full)])
    assert section["gap"]["full"]["mean"] == pytest.approx(gap)
    assert section["gap"]["full"]["ci_low"] == pytest.approx(gap - half)
    assert section["beats"]["full"] == float(gap - half > 0)
    assert section["beats"]["noop"] == 1.0  # never connecting loses on every seed
    assert section["iteration"] == 1 and metrics.UTILITY_MEAN in section
    # between evaluations only the verdict and the iteration it comes from are reported
    later = {metrics.ITERATION: 2}
    ev.interval = 5
    ev(algorithm=None, result=later)
    assert "closed" not in section  # no share of a gap without greedy and a reference
    assert later[metrics.EVALUATION] == {
        "iteration": 1,
        "beats": section["beats"],
        "time_total_s": section["time_total_s"],  # what evaluating cost so far
    }
    assert section["time_total_s"] > 0


def test_evaluation_scores_by_mean_ue_utility_on_mobile_layouts(monkeypatch) -> None:
    """mobile-env layouts rank by mean UE utility by default (their return can be gamed):
    the score and the gaps are in utility, paired with the baselines on the same seeds."""
    from mobrl.envs.factory import env_config_from
    from mobrl.evaluation.policies import CappedPolicy, GreedyPolicy, OraclePolicy
    from mobrl.evaluation.rollout import run_episode
    from mobrl.training.periodic_eval import PeriodicEvaluation, eval_metric, periodic_evaluation

    cfg = validate_command_line(["scenario=small", "run.eval.interval=5"])
    assert eval_metric(cfg) == "utility"
    assert eval_metric(validate_command_line(["scenario=cartpole"])) == "return"
    ev = periodic_evaluation(cfg, env_config_from(cfg))
    assert ev.metric == metrics.UTILITY_MEAN
    seeds = list(range(700, 704))
    env_config = env_config_from(cfg)
    ev = PeriodicEvaluation(
        env_config, 1, len(seeds), 700, ["greedy", "oracle"], ["shared"],
        metric=metrics.UTILITY_MEAN,
    )  # fmt: skip
    monkeypatch.setattr(
        "mobrl.evaluation.policies.TrainedPolicy",
        lambda modules, env_config, explore: CappedPolicy(),
    )
    result = {metrics.ITERATION: 1}
    ev(algorithm=type("A", (), {"get_module": lambda self, pid: None})(), result=result)
    section = result[metrics.EVALUATION]
    capped = [run_episode(env_config, CappedPolicy(), s) for s in seeds]
    greedy = [run_episode(env_config, GreedyPolicy(), s) for s in seeds]
    utility = [r[metrics.UTILITY_MEAN] for r in capped]
    assert section["score"] == pytest.approx(sum(utility) / len(seeds))
    gap, _, _ = mean_ci([a - b[metrics.UTILITY_MEAN] for a, b in zip(utility, greedy)])
    assert section["gap"]["greedy"]["mean"] == pytest.approx(gap)
    assert gap < -0.1 and section["beats"]["greedy"] == 0.0  # capped serves far worse
    # the share of the greedy -> oracle gap closed, as `mobrl evaluate` defines it
    oracle = [run_episode(env_config, OraclePolicy(), s)[metrics.UTILITY_MEAN] for s in seeds]
    base = sum(g[metrics.UTILITY_MEAN] for g in greedy) / len(seeds)
    room = sum(oracle) / len(seeds) - base
    assert room > 0
    assert section["closed"] == pytest.approx((sum(utility) / len(seeds) - base) / room)
    assert section["closed"] < -1  # below greedy by more than the whole gap


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["run.eval.interval=5", "run.eval.metric=utlity"], "Did you mean 'utility'"),
        (
            ["scenario=cartpole", "run.eval.interval=5", "run.eval.metric=utility"],
            "Use run.eval.metric=return",
        ),
    ],
)
def test_bad_eval_metric_is_one_line(overrides: list[str], message: str) -> None:
    from mobrl.core.errors import UserError
    from mobrl.training.periodic_eval import check_eval_config

    with pytest.raises(UserError, match=message):
        check_eval_config(validate_command_line(overrides))  # (or validation itself)


@pytest.mark.parametrize(
    ("algo", "default"), [("ppo", None), ("appo", 10), ("impala", 10), ("dqn", None), ("sac", 1)]
)
def test_run_compare_shortens_timed_iterations_only(algo: str, default: float | None) -> None:
    """run=compare: APPO's and IMPALA's 10-s iterations last 1 s (run.iteration_s), SAC's
    stay 1 s; PPO and DQN, whose iterations are counted in batches or env steps, stay
    untimed."""
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    def timed(overrides: list[str]) -> float | None:
        cfg = compose([*overrides, f"algo={algo}"])
        config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
        return config.min_time_s_per_iteration

    assert timed([]) == default
    assert timed(["run=compare"]) == (None if default is None else 1)
    assert compose(["run=compare"]).run.eval.every_env_steps == 5000
