"""Numbers of `mobrl report`: group curves on a common x range, Student-t intervals, the IQM
with bootstrap intervals, per-group rows and the generalisation matrix as arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.reporting.runs import Trial

GRID_POINTS = 100


def _series(trial: Trial, x_col: str, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    frame = trial.progress
    if frame is None or frame.empty or metric not in frame or x_col not in frame:
        return None
    data = frame[[x_col, metric]].dropna()
    if data.empty:
        return None
    return data[x_col].to_numpy(float), data[metric].to_numpy(float)


def t_half_width(values: np.ndarray) -> float:
    """Half-width of the 95 % Student-t confidence interval of the mean (nan for n < 2)."""
    from mobrl.evaluation.paired import mean_ci

    return mean_ci(list(values))[1]


@dataclass
class Curve:
    """A group's mean curve over the x range every trial of the group covers."""

    label: str
    x: np.ndarray
    mean: np.ndarray
    half: np.ndarray  # 95 % CI half-width per point (nan with one trial)
    n: int


def group_curve(label: str, trials: list[Trial], x_col: str, metric: str) -> Curve | None:
    series = [s for s in (_series(t, x_col, metric) for t in trials) if s is not None]
    if not series:
        return None
    start = max(s[0].min() for s in series)
    stop = min(s[0].max() for s in series)
    grid = np.linspace(start, stop, GRID_POINTS) if stop > start else np.array([stop])
    values = np.stack([np.interp(grid, x, y) for x, y in series])
    half = np.array([t_half_width(values[:, i]) for i in range(values.shape[1])])
    return Curve(label, grid, values.mean(axis=0), half, len(series))


def _per_trial(trials: list[Trial], metric: str, reduce: Any) -> np.ndarray:
    """`reduce` of each trial's history of `metric` (trials without it are left out)."""
    series = (_series(t, keys.ITERATION, metric) for t in trials)
    return np.asarray([reduce(s[1]) for s in series if s is not None], dtype=float)


def _last(values: np.ndarray) -> float:
    return float(values[-1])


def last_values(trials: list[Trial], metric: str) -> np.ndarray:
    """Each trial's last value of `metric` (trials without it are left out)."""
    return _per_trial(trials, metric, _last)


#: fewest trials in a group for an aggregate (IQM) score
IQM_MIN_TRIALS = 3
BOOTSTRAP_RESAMPLES = 2000


def iqm_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Interquartile mean of `values` and its 95 % percentile-bootstrap interval.

    The IQM is the mean of the middle 50 % of the values (scipy's 25 % trimmed mean), as
    rliable defines it: robust to one outlying seed, yet less noisy than the median. A group
    holds one task (one configuration), so rliable's stratified bootstrap is a plain bootstrap
    over the group's trials here; scipy.stats.bootstrap resamples them. NaN with fewer than
    IQM_MIN_TRIALS trials.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < IQM_MIN_TRIALS:
        return math.nan, math.nan, math.nan
    iqm = float(stats.trim_mean(x, 0.25))
    if np.ptp(x) == 0:  # every trial ended at the same value: the interval is that value
        return iqm, iqm, iqm
    res = stats.bootstrap(
        (x,),
        lambda sample, axis: stats.trim_mean(sample, 0.25, axis=axis),
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return iqm, float(res.confidence_interval.low), float(res.confidence_interval.high)


def summary_rows(groups: dict[str, list[Trial]], metric: str) -> list[dict[str, Any]]:
    """Per group: trials, last and best value of `metric` (mean ± 95 % CI over trials), and
    with at least IQM_MIN_TRIALS trials the IQM of the last values with its bootstrap CI."""
    rows = []
    for label, trials in groups.items():
        last, best = _per_trial(trials, metric, _last), _per_trial(trials, metric, np.nanmax)
        steps = _per_trial(trials, keys.ENV_STEPS, _last)
        iqm, iqm_low, iqm_high = iqm_ci(last)
        rows.append(
            {
                "group": label,
                "trials": len(trials),
                "metric": metric,
                "last_mean": float(last.mean()) if last.size else float("nan"),
                "last_ci95": t_half_width(last),
                "best_mean": float(best.mean()) if best.size else float("nan"),
                "best_ci95": t_half_width(best),
                "env_steps_mean": float(steps.mean()) if steps.size else float("nan"),
                "last_iqm": iqm,
                "last_iqm_low": iqm_low,
                "last_iqm_high": iqm_high,
            }
        )
    return rows


def digits(key: str) -> int:
    """Decimals of `key`'s values in tables: 3 for measures on a 0…1 or −1…1 scale (UE
    utility, connected fraction, Jain), whose differences are small, else 2."""
    return 3 if "…1" in keys.unit(key) else 2


def cell(mean: float, half: float, places: int = 2, sign: bool = False) -> str:
    from mobrl.evaluation.paired import ci_text

    return ci_text(mean, half, digits=places, sign=sign)


def iqm_cell(row: dict[str, Any], places: int = 2, scale: float = 1.0) -> str:
    if math.isnan(row["last_iqm"]):
        return "-"
    iqm, low, high = (row[k] * scale for k in ("last_iqm", "last_iqm_low", "last_iqm_high"))
    return f"{iqm:.{places}f} [{low:.{places}f}, {high:.{places}f}]"


def has_iqm(rows: list[dict[str, Any]]) -> bool:
    return any(not math.isnan(r["last_iqm"]) for r in rows)


def matrix_measure(matrix: dict[str, Any], baseline: str) -> str:
    """What a generalisation matrix is shown in, service first: mean UE utility when its cells
    hold paired gaps in it, else the return."""
    utility = f"{keys.UTILITY_MEAN}_gap_vs_{baseline}_mean"
    return keys.UTILITY_MEAN if any(utility in c for c in matrix["cells"]) else "return"


def matrix_table(
    matrix: dict[str, Any], baseline: str, measure: str = "return"
) -> tuple[list[str], list[str], Any]:
    """(rows: trained on, columns: evaluated on, gap and CI arrays) of the paired gap in
    `measure` (`return` or an episode metric) of each trained policy to `baseline` in a
    `mobrl evaluate --scenarios` result."""
    prefix = "" if measure == "return" else f"{measure}_"
    cells = [c for c in matrix["cells"] if c["policy"] == "trained"]
    rows = list(dict.fromkeys(c["trained_on"] for c in cells))
    cols = list(matrix["scenarios"])
    gap = np.full((len(rows), len(cols)), np.nan)
    half = np.full_like(gap, np.nan)
    for c in cells:
        i, j = rows.index(c["trained_on"]), cols.index(c["evaluated_on"])
        gap[i, j] = c.get(f"{prefix}gap_vs_{baseline}_mean", np.nan)
        half[i, j] = c.get(f"{prefix}gap_vs_{baseline}_ci95", np.nan)
    return rows, cols, (gap, half)
