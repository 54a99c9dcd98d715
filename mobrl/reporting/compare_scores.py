"""The scores `mobrl compare` ranks algorithms by: each trial's normalised score over its
training (0 = the floor, 1 = the best reference, on the evaluation's held-out seeds) and at
a budget every run of its task reached; refused in one line where runs don't line up."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.reporting.runs import Trial

#: the energy layouts' reference (the UE layouts' are `paired.REFERENCES`)
ENERGY_REFERENCE = "energy_oracle"
#: settings that must be equal for the runs of one task (`line_up`)
ALIGNED = (
    "run.eval.episodes",
    "run.eval.seed",
    "run.eval.metric",
    "run.eval.baselines",
    "run.eval.every_env_steps",
)
ALIGNED_PREFIXES = ("run.stop.",)


@dataclass
class Scored:
    """One trial's normalised score at each evaluation, and what it was normalised by."""

    algorithm: str
    task: str
    seed: int
    trial: Trial
    #: env steps (with run.eval.every_env_steps: the multiple each evaluation stands for),
    #: seconds, raw score and normalised score at each evaluation (or iteration)
    env_steps: np.ndarray
    seconds: np.ndarray
    raw: np.ndarray
    score: np.ndarray
    #: how it is normalised: the floor's and the ceiling's names and values
    floor: str
    floor_value: float
    ceiling: str
    ceiling_value: float
    #: filled by `at_budget`
    at: dict[str, float] = field(default_factory=dict)

    def axis(self, budget: str) -> np.ndarray:
        """Env steps (`--budget env_steps`) or training seconds, imitation included and
        evaluation during training left out (`--budget seconds`), at each score."""
        return self.env_steps if budget == "env_steps" else self.seconds

    def index_at(self, budget: str, x: float) -> int:
        """The last evaluation at or before `x` on the `budget` axis (-1 before the first)."""
        return int(np.searchsorted(self.axis(budget), x, side="right")) - 1

    def value_at(self, budget: str, x: float) -> float:
        """The score of the last evaluation at or before `x` (nan before the first)."""
        i = self.index_at(budget, x)
        return float(self.score[i]) if i >= 0 else math.nan

    def cost_at(self, budget: str, x: float) -> tuple[float, float]:
        """The env steps and training seconds of the evaluation that scores at `x`."""
        i = self.index_at(budget, x)
        return float(self.env_steps[i]), float(self.seconds[i])


def _task(trial: Trial) -> str:
    """A task: the scenario, with the env mode where it is not the UE agents' default."""
    s = trial.settings
    name = str(s.get("scenario.name", "?"))
    mode = s.get("env.mode")
    return name if mode in (None, "ma", "single", "gym") else f"{name} (env={mode})"


def _where(trial: Trial) -> str:
    return f"{trial.run_dir.name}/{trial.name}"


def _column(frame: Any, name: str) -> np.ndarray:
    return frame[name].to_numpy(float)


def _points(frame: Any, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows that score a run and their env steps: with `run.eval.every_env_steps`, the
    evaluations at its marks, each at the multiple it stands for (an iteration of APPO can
    pass a mark by thousands of env steps, one of SAC by a hundred: the mark lines them up);
    otherwise every row that has `column`, at its env steps. A mark met twice keeps its first
    evaluation: a trial resumed from a run that saved no iteration's env steps of its own
    evaluates again at the mark it last passed, with a policy trained further."""
    if keys.EVAL_AT_ENV_STEPS in frame and frame[keys.EVAL_AT_ENV_STEPS].notna().any():
        marks = frame[keys.EVAL_AT_ENV_STEPS]
        rows = (marks.notna() & ~marks.duplicated()).to_numpy()
        return rows, _column(frame, keys.EVAL_AT_ENV_STEPS)[rows]
    rows = frame[column].notna().to_numpy()
    return rows, _column(frame, keys.ENV_STEPS)[rows]


def _gym_threshold(trial: Trial) -> float | None:
    """The Gymnasium task's solved return (its spec's reward_threshold), or None."""
    s = trial.settings
    if s.get("scenario.kind") != "gym" or not s.get("scenario.id"):
        return None
    import gymnasium as gym

    try:
        threshold = gym.spec(str(s["scenario.id"])).reward_threshold
    except gym.error.Error:
        return None
    return float(threshold) if threshold else None


def _baselines(frame: Any) -> dict[str, float]:
    """Each baseline's mean of the evaluation metric (score − the paired gap's mean, on the
    same seeds), from the first evaluation (the baselines play once)."""
    prefix, suffix = "evaluation/gap/", "/mean"
    rows = frame[frame[keys.EVAL_SCORE].notna()]
    out = {}
    for col in frame.columns:
        if col.startswith(prefix) and col.endswith(suffix) and not rows.empty:
            name = col[len(prefix) : -len(suffix)]
            out[name] = float(rows[keys.EVAL_SCORE].iloc[0] - rows[col].iloc[0])
    return out


def _floor_and_ceiling(values: dict[str, float]) -> tuple[str, str] | None:
    """greedy (or, without it, the strongest rule played) and the best reference."""
    from mobrl.evaluation.paired import REFERENCES, gap_reference

    ceiling = gap_reference(values) or (ENERGY_REFERENCE if ENERGY_REFERENCE in values else None)
    rules = {k: v for k, v in values.items() if k not in (*REFERENCES, ENERGY_REFERENCE)}
    if ceiling is None or not rules:
        return None
    floor = "greedy" if "greedy" in rules else max(rules, key=rules.__getitem__)
    return floor, ceiling


def score(trial: Trial) -> Scored:
    """`trial`'s normalised score at each evaluation during training; refused in one line
    when it has nothing to normalise by."""
    frame = trial.progress
    where = _where(trial)
    if frame is None or frame.empty or keys.ENV_STEPS not in frame:
        raise UserError(f"{where} has no training results to compare; give finished runs.")
    algorithm = str(trial.settings.get("algo.name", "?"))
    seconds = _column(frame, keys.TIME_TOTAL)
    if keys.IMITATION_TIME in frame:
        seconds = seconds + np.nan_to_num(_column(frame, keys.IMITATION_TIME))
    seed = int(trial.settings.get("run.seed", 0))
    evaluated = keys.EVAL_SCORE in frame and frame[keys.EVAL_SCORE].notna().any()
    values = _baselines(frame) if evaluated else {}
    bounds = _floor_and_ceiling(values) if values else None
    if bounds is not None:
        floor, ceiling = bounds
        room = values[ceiling] - values[floor]
        if not room > 1e-12:
            raise UserError(
                f"{where}: {ceiling} scores no better than {floor} on its evaluation seeds, "
                "so there is no room to normalise by; evaluate on more episodes (run.eval.episodes)."
            )
        rows, steps = _points(frame, keys.EVAL_SCORE)
        raw = _column(frame, keys.EVAL_SCORE)[rows]
        return Scored(
            algorithm, _task(trial), seed, trial, steps, seconds[rows], raw,
            (raw - values[floor]) / room, floor, values[floor], ceiling, values[ceiling],
        )  # fmt: skip
    threshold = _gym_threshold(trial)
    if threshold is None:
        raise UserError(
            f"{where} has no evaluation with a rule and a reference to normalise by: train "
            "with run=compare (or run.eval.every_env_steps=N and run.eval.baselines="
            "[greedy,oracle2]; energy layouts: [threshold,energy_oracle])."
        )
    column = keys.EVAL_RETURN_MEAN if evaluated else keys.RETURN_MEAN
    rows, steps = _points(frame, column)
    raw = _column(frame, column)[rows]
    floor, floor_value = _gym_floor(where, threshold, values)
    return Scored(
        algorithm, _task(trial), seed, trial, steps, seconds[rows], raw,
        (raw - floor_value) / (threshold - floor_value), floor, floor_value, "solved", threshold,
    )  # fmt: skip


def _gym_floor(where: str, threshold: float, values: dict[str, float]) -> tuple[str, float]:
    """A Gymnasium task's 0: return 0 where the solved return is above it (CartPole: 475);
    where it is not (Acrobot: -100, from -500), the random policy's return on the
    evaluation's seeds, as Atari's scores are normalised."""
    if threshold > 0:
        return "return 0", 0.0
    if "random" not in values:
        raise UserError(
            f"{where}: its task is solved at a return of {threshold:g}, so return 0 is no "
            "floor to normalise from; train with random among run.eval.baselines (the "
            "default) and run.eval.every_env_steps=N (run=compare)."
        )
    if not threshold - values["random"] > 1e-12:
        raise UserError(
            f"{where}: the random policy returns {values['random']:g} on its evaluation seeds, "
            f"at or above the solved return {threshold:g}, so there is no room to normalise by."
        )
    return "random", values["random"]


def _setting(trial: Trial, key: str) -> str:
    return json.dumps(trial.settings.get(key), default=str)


def line_up(scored: list[Scored]) -> dict[str, list[Scored]]:
    """The scored trials by task, refused in one line where they don't line up: two
    algorithms, each run once per seed, the same seeds, budget (run.stop), evaluation
    (episodes, seeds, metric, baselines) and normalisation for every run of a task."""
    algorithms = sorted({s.algorithm for s in scored})
    if len(algorithms) < 2:
        raise UserError(
            f"compare needs runs of two algorithms at least; these are all {algorithms[0]}. "
            "Add runs of another (e.g. mobrl train -m algo=ppo,dqn run.seed=0,1,2)."
        )
    tasks: dict[str, list[Scored]] = {}
    for s in scored:
        tasks.setdefault(s.task, []).append(s)
    for task, runs in tasks.items():
        seeds: dict[str, list[int]] = {}
        for s in runs:
            seeds.setdefault(s.algorithm, []).append(s.seed)
        for algo, have in seeds.items():
            if len(set(have)) < len(have):
                twice = sorted({x for x in have if have.count(x) > 1})
                raise UserError(
                    f"{task}: {algo} has two runs with run.seed={twice[0]}; give each "
                    "algorithm one run per seed."
                )
        first, *rest = sorted(seeds)
        for algo in rest:
            if sorted(seeds[algo]) != sorted(seeds[first]):
                raise UserError(
                    f"{task}: {first} ran seeds {sorted(seeds[first])} and {algo} "
                    f"{sorted(seeds[algo])}; compare runs with the same seeds "
                    f"(run.seed={','.join(map(str, sorted(seeds[first])))})."
                )
        _same_settings(task, runs)
        norms = {(s.floor, s.ceiling) for s in runs}
        if len(norms) > 1:
            raise UserError(
                f"{task}: runs are normalised by different baselines {sorted(norms)}; give "
                "every run the same run.eval.baselines."
            )
    return tasks


def _same_settings(task: str, runs: list[Scored]) -> None:
    keys_ = sorted(
        {
            k
            for s in runs
            for k in s.trial.settings
            if k in ALIGNED or k.startswith(ALIGNED_PREFIXES)
        }
    )
    for key in keys_:
        values: dict[str, str] = {}
        for s in runs:
            values.setdefault(_setting(s.trial, key), s.algorithm)
        if len(values) > 1:
            (a, algo_a), (b, algo_b) = list(values.items())[:2]
            raise UserError(
                f"{task}: runs differ in {key} ({algo_a}: {a}, {algo_b}: {b}); compare runs "
                f"with the same {key}."
            )


def at_budget(tasks: dict[str, list[Scored]], budget: str) -> dict[str, float]:
    """Each task's budget (the least env steps or seconds every run of it reached) and each
    run's score there (`Scored.at`); refused when a run has no evaluation by then."""
    limits = {}
    for task, runs in tasks.items():
        limit = min(float(s.axis(budget)[-1]) for s in runs)
        limits[task] = limit
        for s in runs:
            value = s.value_at(budget, limit)
            if value != value:
                other = "seconds" if budget == "env_steps" else "env_steps"
                raise UserError(
                    f"{task}: {s.algorithm}'s {_where(s.trial)} has no score yet at "
                    f"{limit:g} {budget.replace('_', ' ')}, where the shortest run of the task "
                    f"ended; compare with --budget {other}, or train every run with "
                    "run=compare (the same budget, evaluated at the same env steps)."
                )
            s.at[budget] = value
    return limits
