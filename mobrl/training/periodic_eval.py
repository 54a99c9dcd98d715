"""Evaluation during training (`run.eval.*`): every N iterations the current policy plays
fixed episode seeds with deterministic actions, through the same rollout as `mobrl evaluate`,
and is compared, seed by seed, with the heuristic baselines on those seeds.

The baselines' returns are computed once, at the first evaluation. Results go under
`evaluation/...` (see mobrl.core.metrics): Tune writes them to progress.csv and TensorBoard, the
ranking of checkpoints uses them, and `run.stop.beat` stops a trial once the 95 % CI of the
paired gap to a baseline lies above 0.
"""

from __future__ import annotations

import time
from statistics import fmean
from typing import Any

from mobrl.core import metrics as keys

#: what an evaluation records of the policy and of each baseline, where the episodes have it:
#: the service measures, and on layouts with `power:` the demand served and the energy
#: measures (the sweep's energy–service front in `mobrl report` is drawn from them)
MEASURED = (*keys.EPISODE_METRICS, keys.NET_DEMAND_SERVED, *keys.ENERGY_KEYS)

#: first episode seed of evaluation during training: apart from training copies (1,000,000+,
#: mobrl.envs.slots) and from `mobrl evaluate`'s default test seeds (0, 1, ...)
EVAL_SEED_BASE = 100_000


def eval_baselines(cfg: Any) -> list[str]:
    """The baselines evaluation during training compares with (`run.eval.baselines`, or all
    that apply to the scenario)."""
    from mobrl.evaluation.policies import baselines_for

    if cfg.run.eval.baselines is not None:
        return list(cfg.run.eval.baselines)
    return baselines_for(_scenario(cfg))


def eval_metric(cfg: Any) -> str:
    """`run.eval.metric`, or the scenario kind's default (mobile-env layouts: utility)."""
    from mobrl.scenarios.kinds import kind_of

    return cfg.run.eval.get("metric") or kind_of(_scenario(cfg)).eval_metric


def _scenario(cfg: Any) -> dict[str, str]:
    """What `baselines_for`/`check_baselines` read of a scenario, without building its env."""
    return {"kind": cfg.scenario.kind, "id": str(cfg.scenario.get("id", ""))}  # for kind_of


def _has_power(cfg: Any) -> bool:
    """Whether the run's mobile-env layout has a `power:` section (the objective's energy)."""
    from mobrl import scenarios

    path = cfg.scenario.get("path")
    layout = scenarios.load(path) if path else None
    return isinstance(layout, dict) and "power" in layout


def check_eval_config(cfg: Any) -> None:
    """One-line errors for `run.eval.*` and `run.stop.beat` (no Ray, no env built)."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.evaluation.policies import check_baselines
    from mobrl.scenarios.kinds import kind_of

    ev, beat = cfg.run.eval, cfg.run.stop.beat
    metric = eval_metric(cfg)
    if metric not in keys.EVAL_METRICS:
        raise unknown_choice(
            "run.eval.metric", str(metric), keys.EVAL_METRICS, "Use e.g. run.eval.metric=utility."
        )
    if metric != "return" and kind_of(_scenario(cfg)).eval_metric == "return":
        raise UserError(
            f"run.eval.metric={metric} measures mobile-env's UEs; scenario="
            f"{cfg.scenario.name} has none. Use run.eval.metric=return."
        )
    if metric == "objective" and not _has_power(cfg):
        raise UserError(
            f"run.eval.metric=objective weighs energy against service; scenario="
            f"{cfg.scenario.name} has no power: section. Use run.eval.metric=utility, or a "
            "layout with power: (uma19_energy)."
        )
    if ev.interval < 0:
        raise UserError(
            f"run.eval.interval must be >= 0 (0: no evaluation), got {ev.interval}. "
            "Set e.g. run.eval.interval=5."
        )
    every = ev.get("every_env_steps", 0)  # absent from configs saved before it existed
    if every < 0:
        raise UserError(
            f"run.eval.every_env_steps must be >= 0 (0: not by env steps), got {every}. "
            "Set e.g. run.eval.every_env_steps=10000."
        )
    if ev.episodes < 2:
        raise UserError(
            f"run.eval.episodes must be at least 2 (a confidence interval needs two episodes), "
            f"got {ev.episodes}. Set e.g. run.eval.episodes=20."
        )
    if beat is None and not evaluates(cfg):
        return
    names = eval_baselines(cfg)
    env = _scenario(cfg)
    check_baselines(names, env, flag="run.eval.baselines")
    if beat is not None:
        if not evaluates(cfg):
            raise UserError(
                f"run.stop.beat={beat} needs evaluation during training. "
                "Add run.eval.interval=N (e.g. 5) or run.eval.every_env_steps=N."
            )
        if beat not in names:
            check_baselines([beat], env, flag="run.stop.beat")
            raise UserError(
                f"run.stop.beat={beat} is not among run.eval.baselines ({', '.join(names)}). "
                f"Add it there or drop run.eval.baselines."
            )


def evaluates(cfg: Any) -> bool:
    """Whether the run evaluates during training (`run.eval.interval` or
    `run.eval.every_env_steps` set)."""
    ev = cfg.run.eval
    return ev.interval > 0 or ev.get("every_env_steps", 0) > 0


def periodic_evaluation(cfg: Any, env_config: dict[str, Any]) -> PeriodicEvaluation | None:
    """The callback for this config (None when it does not evaluate during training)."""
    from mobrl.envs.factory import policy_ids

    ev = cfg.run.eval
    if not evaluates(cfg):
        return None
    return PeriodicEvaluation(
        env_config,
        interval=ev.interval,
        every_env_steps=ev.get("every_env_steps", 0),
        episodes=ev.episodes,
        seed=ev.seed,
        baselines=eval_baselines(cfg),
        policy_ids=policy_ids(env_config),
        metric=keys.EVAL_METRICS[eval_metric(cfg)],
        checkpoint_frequency=cfg.run.checkpoint.frequency,
        final_when=_budget(cfg),
    )


def _budget(cfg: Any) -> dict[str, float]:
    """The stop criteria that end a trial on budget (the last result gets evaluated too, so
    that the final checkpoint is ranked by evaluation like the periodic ones)."""
    return {
        k: v
        for k, v in keys.stop_criteria(cfg.run.stop).items()
        if not k.startswith(keys.EVALUATION)
    }


class PeriodicEvaluation:
    """An RLlib `on_train_result` callback (picklable: Tune ships it to the trial's process)."""

    def __init__(
        self,
        env_config: dict[str, Any],
        interval: int,
        episodes: int,
        seed: int,
        baselines: list[str],
        policy_ids: list[str],
        checkpoint_frequency: int = 0,
        final_when: dict[str, float] | None = None,
        metric: str = "return",
        every_env_steps: int = 0,
    ) -> None:
        self.env_config = {**env_config, "render_mode": None}
        self.interval = interval
        self.every_env_steps = every_env_steps
        #: the multiples of `every_env_steps` passed so far (a restored trial's callback is
        #: new: its first result tells how many its checkpoint had passed, `_restored_marks`)
        self._marks = 0
        self.checkpoint_frequency = checkpoint_frequency
        self.final_when = final_when or {}
        self.seeds = [seed + i for i in range(episodes)]
        self.baselines = baselines
        self.policy_ids = policy_ids
        #: the episode column that scores the policy and its gaps (metrics.EVAL_METRICS)
        self.metric = metric
        self._baseline_rows: dict[str, list[dict[str, float]]] | None = None
        self._beats = dict.fromkeys(baselines, 0.0)
        self._last_iteration = 0
        #: wall time spent in these evaluations so far (baselines included)
        self._seconds = 0.0

    def due(self, iteration: int) -> bool:
        """The first iteration (so every result file has the columns), every `interval`-th,
        and every iteration with a periodic checkpoint (so checkpoints rank by evaluation)."""
        ckpt, every = self.checkpoint_frequency, self.interval
        return (
            iteration == 1
            or (every > 0 and iteration % every == 0)
            or (ckpt > 0 and iteration % ckpt == 0)
        )

    def _restored_marks(self, result: dict) -> None:
        """The marks passed before a restored trial's first result (its env steps less the
        iteration's own), so that a resumed run does not evaluate its last mark again."""
        since, iteration = result.get(keys.RESTORED_ITERATIONS), result.get(keys.ITERATION)
        if since != 1 or (iteration or 0) <= 1 or self.every_env_steps <= 0:
            return
        lifetime = keys.result_value(result, keys.ENV_STEPS)
        own = keys.result_value(result, keys.ITERATION_ENV_STEPS)
        if lifetime is None or own is None:  # unknown: evaluate, compare keeps the first
            return
        self._marks = max(self._marks, int((lifetime - own) // self.every_env_steps))

    def mark(self, env_steps: float) -> int | None:
        """The multiple of `every_env_steps` that a result at `env_steps` is the first past
        (the largest, where one iteration passes several), or None."""
        if self.every_env_steps <= 0:
            return None
        passed = int(env_steps // self.every_env_steps)
        if passed <= self._marks:
            return None
        self._marks = passed
        return passed * self.every_env_steps

    def is_last(self, result: dict) -> bool:
        """Whether a budget criterion (run.stop.*) ends the trial with this result."""
        for key, limit in self.final_when.items():
            value = keys.result_value(result, key)
            if value is not None and value == value and value >= limit:
                return True
        return False

    def __call__(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        iteration = int(result.get(keys.ITERATION, 0))
        section: dict[str, Any] = {}
        self._restored_marks(result)
        mark = self.mark(keys.result_value(result, keys.ENV_STEPS) or 0)
        if mark is not None or self.due(iteration) or self.is_last(result):
            started = time.perf_counter()
            modules = learned_modules(algorithm, self.policy_ids)
            section = self.evaluate(modules)
            self._seconds += time.perf_counter() - started
            self._last_iteration = iteration
            for name in self.baselines:
                low = section["gap"][name]["ci_low"]
                self._beats[name] = float(low == low and low > 0)
        # present on every result, so that Tune's stop rule and progress.csv always see them
        section["iteration"] = self._last_iteration
        if self.every_env_steps > 0:  # keys.EVAL_AT_ENV_STEPS: nan where no mark was passed
            section["at_env_steps"] = float("nan") if mark is None else mark
        section["beats"] = dict(self._beats)
        # RLlib's time_total_s leaves the callbacks out: what evaluation costs on top
        section["time_total_s"] = self._seconds
        result[keys.EVALUATION] = section

    def evaluate(self, modules: dict[str, Any]) -> dict[str, Any]:
        """Returns, episode metrics, the score (mean of `metric`) and the paired gaps in
        `metric` of the policy made of `modules`, and each baseline's means of the measures
        (`MEASURED`) on the same seeds."""
        from mobrl.evaluation.paired import mean_ci
        from mobrl.evaluation.policies import TrainedPolicy
        from mobrl.evaluation.rollout import run_episode

        policy = TrainedPolicy(modules, self.env_config, explore=False)
        rows = [run_episode(self.env_config, policy, seed) for seed in self.seeds]
        returns = [row["return"] for row in rows]
        mean, half, _ = mean_ci(returns)
        section: dict[str, Any] = {"return_mean": mean, "return_ci95": half}
        section.update(_means(rows))
        mine = [row[self.metric] for row in rows]
        section["score"] = mean_ci(mine)[0]
        section["gap"] = {}
        section["baselines"] = {name: _means(r) for name, r in self.baseline_rows().items()}
        for name, base in self.baseline_values().items():
            gap_mean, gap_half, _ = mean_ci([a - b for a, b in zip(mine, base)])
            section["gap"][name] = {
                "mean": gap_mean,
                "ci95": gap_half,
                "ci_low": gap_mean - gap_half,
            }
        closed = self.closed(section["score"])
        if closed is not None:
            section["closed"] = closed
        return section

    def closed(self, score: float) -> float | None:
        """The share of the greedy -> reference gap in mean UE utility that a policy scoring
        `score` closes on these seeds (as `mobrl evaluate`'s, paired.gap_closed), when the
        metric is the utility and greedy and a reference are among the baselines."""
        from mobrl.evaluation.paired import gap_reference

        values = self.baseline_values()
        ref = gap_reference(values)
        if self.metric != keys.UTILITY_MEAN or ref is None or "greedy" not in values:
            return None
        base = fmean(values["greedy"])
        room = fmean(values[ref]) - base
        return (score - base) / room if room > 1e-9 else None

    def baseline_values(self) -> dict[str, list[float]]:
        """Each baseline's `metric` on the evaluation seeds (computed once)."""
        return {
            name: [row[self.metric] for row in rows] for name, rows in self.baseline_rows().items()
        }

    def baseline_rows(self) -> dict[str, list[dict[str, float]]]:
        """Each baseline's episodes on the evaluation seeds (played once)."""
        if self._baseline_rows is None:
            from mobrl.evaluation.policies import make_baseline
            from mobrl.evaluation.rollout import run_episode

            self._baseline_rows = {
                name: [
                    run_episode(self.env_config, make_baseline(name), seed) for seed in self.seeds
                ]
                for name in self.baselines
            }
        return self._baseline_rows


def _means(rows: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each of `MEASURED` that the episodes `rows` have."""
    return {key: fmean(row[key] for row in rows) for key in MEASURED if key in rows[0]}


def learned_modules(algorithm: Any, policy_ids: list[str]) -> dict[str, Any]:
    """The RLModules of `policy_ids` with the learner's current weights.

    `Algorithm.get_module` returns the local env runner's module, which PPO, DQN and SAC
    update every iteration but APPO and IMPALA do not: their env-runner actors pull weights
    themselves, and the local env runner keeps the ones it started with. The learner group
    holds the weights being trained, so they are copied into the local modules first (an
    inference-only copy, as RLlib's own weight sync makes)."""
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE

    modules = {pid: algorithm.get_module(pid) for pid in policy_ids}
    learners = getattr(algorithm, "learner_group", None)
    if learners is None:
        return modules
    state = learners.get_state(
        components=[f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/{pid}" for pid in policy_ids],
        inference_only=True,
    )[COMPONENT_LEARNER][COMPONENT_RL_MODULE]
    for pid, module in modules.items():
        module.set_state(state[pid])
    return modules
