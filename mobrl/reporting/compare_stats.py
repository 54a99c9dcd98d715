"""The statistics of `mobrl compare`, as Agarwal et al. (2021) define them and rliable and
marl-eval report them: IQM, mean, median and optimality gap of normalised scores with 95 %
stratified-bootstrap intervals (runs resampled within each task), performance profiles and
the probability of improvement.

The bootstrap is SciPy's (`scipy.stats.bootstrap`, percentile intervals): given one sample
per task it resamples each independently, which is the stratified bootstrap. rliable itself
is not used: its release pins `arch<8`, and arch 7 does not import with pandas 3."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: bootstrap resamples (rliable's README uses 2,000 for profiles and improvement)
REPS = 2000
#: the aggregates, in the order tables show them
AGGREGATES = ("IQM", "mean", "median", "optimality gap")
#: where the optimality gap is measured from: the best reference's level
GAMMA = 1.0


def _stack(samples: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.concatenate(samples, axis=-1)


def iqm(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean of every run's score on every task (the middle half of them)."""
    from scipy.stats import trim_mean

    return trim_mean(_stack(tasks), 0.25, axis=-1)


def mean(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean over tasks of each task's mean score."""
    return np.mean([t.mean(axis=-1) for t in tasks], axis=0)


def median(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    """The median over tasks of each task's mean score."""
    return np.median([t.mean(axis=-1) for t in tasks], axis=0)


def optimality_gap(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    """How far runs fall short of the reference's level on average (scores above it count
    as reaching it): lower is better."""
    return GAMMA - np.minimum(_stack(tasks), GAMMA).mean(axis=-1)


STATISTICS: dict[str, Callable[..., np.ndarray]] = {
    "IQM": iqm,
    "mean": mean,
    "median": median,
    "optimality gap": optimality_gap,
}


def interval(
    tasks: list[np.ndarray], statistic: Callable[..., np.ndarray], reps: int = REPS, seed: int = 0
) -> tuple[Any, Any, Any]:
    """`statistic` of the per-task samples and its 95 % stratified-bootstrap interval (nan
    when a task has a single run: nothing to resample)."""
    from scipy.stats import bootstrap

    point = statistic(*tasks)
    if min(len(t) for t in tasks) < 2:
        return point, np.full_like(point, math.nan, float), np.full_like(point, math.nan, float)
    import warnings

    with warnings.catch_warnings():
        # all-equal scores (every run solved a task) leave nothing to resample: the interval
        # is the point, as SciPy warns
        warnings.simplefilter("ignore")
        result = bootstrap(
            tasks, statistic, n_resamples=reps, method="percentile", vectorized=True, rng=seed
        )
    ci = result.confidence_interval
    return point, np.asarray(ci.low, float), np.asarray(ci.high, float)


def aggregates(tasks: list[np.ndarray], reps: int = REPS) -> dict[str, tuple[float, float, float]]:
    """Each of `AGGREGATES`: (point, low, high)."""
    out = {}
    for name in AGGREGATES:
        point, low, high = interval(tasks, STATISTICS[name], reps)
        out[name] = (float(point), float(low), float(high))
    return out


def profile(tasks: list[np.ndarray], taus: np.ndarray, reps: int = REPS) -> tuple[Any, Any, Any]:
    """The performance profile: the share of runs (over every task) scoring above each tau."""

    def above(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        x = _stack(samples)
        return np.moveaxis((x[..., None, :] > taus[:, None]).mean(axis=-1), -1, 0)

    return interval(tasks, above, reps)


def improvement(
    x: list[np.ndarray], y: list[np.ndarray], reps: int = REPS
) -> tuple[float, float, float]:
    """P(X > Y): the chance that a run of X scores above a run of Y on a task drawn at
    random (the Mann-Whitney U statistic over the pairs of runs, ties counting half),
    averaged over tasks; both algorithms' runs resampled within each task."""
    n = len(x)

    def chance(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        per_task = []
        for a, b in zip(samples[:n], samples[n:]):
            diff = a[..., :, None] - b[..., None, :]
            per_task.append(((diff > 0) + 0.5 * (diff == 0)).mean(axis=(-2, -1)))
        return np.mean(per_task, axis=0)

    point, low, high = interval([*x, *y], chance, reps)
    return float(point), float(low), float(high)
