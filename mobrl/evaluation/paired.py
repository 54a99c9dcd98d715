"""Statistics of episodes played on paired seeds: mean and 95 % CI, paired differences per
measure, the share of the greedy -> oracle gap a policy closes, and service notes."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.metrics import EPISODE_METRICS
from mobrl.evaluation.rollout import RETURN_OF

TRAINED = "trained"
#: service first (mean UE utility, connected fraction, p5, Jain, demand served), then energy
#: (a layout with power:), then mobile-env's return: service and energy apart, never summed
COLUMNS = (*EPISODE_METRICS, keys.NET_DEMAND_SERVED, *keys.ENERGY_KEYS, "return")
#: the paired reference of `mobrl baselines` (no trained policy): what coordination must beat
REFERENCE_BASELINE = "greedy"
#: ... and where cells sleep and greedy is not played: the network with every station on
ALL_ON = "all_on"
#: row keys that describe an episode rather than measure it
_NOT_MEASURES = ("policy", "episode", "seed", "length")


def result_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The measured columns of the rows: the service measures (mean UE utility, connected
    fraction, p5, Jain), the return and each policy's return, then whatever else the
    scenario reports (e.g. the arena's counts)."""
    present = {k for r in rows for k in r if k not in _NOT_MEASURES}
    per_policy = sorted(k for k in present if k.startswith(RETURN_OF))
    known = [c for c in COLUMNS if c in present]
    return known + per_policy + sorted(present - set(known) - set(per_policy))


class Moments:
    """Running count, mean and spread of a measure (Welford's method): statistics of any
    number of episodes in constant memory. NaN values (a measure an episode lacks) are
    skipped."""

    __slots__ = ("n", "mean", "m2")

    def __init__(self) -> None:
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, value: float) -> None:
        if math.isnan(value):
            return
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def stats(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """Mean and the half-width of its Student-t confidence interval, and n (NaN for
        what n cannot give: everything for n=0, the half-width for n=1)."""
        from scipy import stats

        if self.n == 0:
            return math.nan, math.nan, math.nan
        if self.n < 2:
            return self.mean, math.nan, float(self.n)
        sem = math.sqrt(max(self.m2, 0.0) / (self.n - 1) / self.n)
        half = float(stats.t.ppf(0.5 + confidence / 2, df=self.n - 1) * sem)
        return self.mean, half, float(self.n)

    def as_dict(self) -> dict[str, float]:
        return dict(zip(("mean", "ci95", "n"), self.stats()))


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and the half-width of its Student-t confidence interval (NaN half-width for n<2)."""
    moments = Moments()
    for value in values:
        moments.add(float(value))
    return moments.stats(confidence)


def ci_text(mean: float | None, half: float | None, digits: int = 3, sign: bool = False) -> str:
    """The text "mean ± half" as every table of mobrl prints it ("-" without a mean, the
    mean alone without a half-width); `sign`: a + on gains."""
    if mean is None or math.isnan(mean):
        return "-"
    text = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return text if half is None or math.isnan(half) else f"{text} ± {half:.{digits}f}"


def senses(env_config: dict[str, Any]) -> dict[str, str]:
    """Which way the measures of `env_config`'s env are better where it says (`min`: a cost,
    `scenario.metrics`'s `KEY:REDUCE:min`; a layout with power: its power and energy), by
    column; higher is better for every other."""
    from mobrl.envs.foreign import metric_senses

    layout = env_config.get("layout")
    costs = {}
    if isinstance(layout, dict) and "power" in layout:  # cells that sleep: power, energy
        costs = dict.fromkeys(keys.LOWER_BETTER, "min")
    return {**costs, **metric_senses(env_config.get("metrics"))}


def lower_better(summary: dict[str, Any]) -> list[str]:
    """The measures of a summary where lower is better (`better`: min), in its order (none in
    a summary written before it recorded which way)."""
    return [col for col, way in (summary.get("better") or {}).items() if way == "min"]


def reference(policies: list[str]) -> str | None:
    """The policy the others are paired with: the trained one, else greedy, else all_on (the
    network without energy saving, which the cell rules save against), else none."""
    if TRAINED in policies:
        return TRAINED
    for name in (REFERENCE_BASELINE, ALL_ON):
        if name in policies:
            return name
    return None


#: the upper references, best known first: the gap a policy closes is measured to the best
#: one an evaluation played (`oracle_rollout` plays each step's candidates to the episode's
#: end and is never below `oracle`; `oracle_horizon`, the same over a few steps, serves as
#: much where both play and more than `oracle` where measured, `oracle_mpc` the same on a
#: sampled future; `oracle2` looks two steps ahead and serves slightly better than
#: `oracle`'s best single step: docs/evaluation.md)
REFERENCES = ("oracle_rollout", "oracle_horizon", "oracle_mpc", "oracle2", "oracle")


def gap_reference(policies: Any) -> str | None:
    """The best known reference among `policies`, or None."""
    return next((ref for ref in REFERENCES if ref in policies), None)


def gap_closed(summary: dict[str, Any], policy: str = TRAINED) -> float | None:
    """The share of the greedy -> reference gap in mean UE utility that `policy` closes (1: as
    good as the best reference played, `gap_reference`; 0: greedy's level; < 0: below greedy);
    None without greedy and a reference."""
    stats = summary["policies"]
    ref = gap_reference(stats)
    if ref is None or not {policy, "greedy"} <= set(stats):
        return None
    if keys.UTILITY_MEAN not in stats[policy]:
        return None
    base = stats["greedy"][keys.UTILITY_MEAN]["mean"]
    room = stats[ref][keys.UTILITY_MEAN]["mean"] - base
    if not room > 1e-9:
        return None
    return (stats[policy][keys.UTILITY_MEAN]["mean"] - base) / room


def closed_text(share: float | None) -> str:
    """A share of the greedy -> reference gap as a person reads it: a share only means
    something between greedy and the reference, so a policy below greedy is said to be below
    greedy, and one above the reference (a per-step reference can be beaten over an episode)
    to be above it."""
    if share is None:
        return "-"
    if share < 0:
        return "below greedy"
    return f"above the reference ({share:.0%})" if share > 1.005 else f"{share:.0%}"


class Tally:
    """The evaluation statistics of episodes fed in blocks (`add`), in memory independent of
    how many: per policy the mean, 95 % CI and n of every measure, and the differences paired
    by seed against the reference (trained − each baseline with a checkpoint, else each
    baseline − greedy). Every policy's episode of a seed must come in the same block.
    `better`: which way a measure is better where it is not higher (`senses`: "min")."""

    def __init__(self, policies: list[str], better: dict[str, str] | None = None) -> None:
        self.policies = list(policies)
        self.better = dict(better or {})
        self.ref = reference(self.policies)
        self.present: set[str] = set()
        self.single: dict[tuple[str, str], Moments] = defaultdict(Moments)
        self.diffs: dict[tuple[str, str], Moments] = defaultdict(Moments)

    def add(self, rows: list[dict[str, Any]]) -> Tally:
        for row in rows:
            measures = [k for k in row if k not in _NOT_MEASURES]
            self.present.update(measures)
            for col in measures:
                self.single[row["policy"], col].add(float(row[col]))
        if self.ref is None:
            return self
        refs = {r["seed"]: r for r in rows if r["policy"] == self.ref}
        for row in rows:
            name, mine = row["policy"], refs.get(row["seed"])
            if name == self.ref or mine is None:
                continue
            first, second = (mine, row) if self.ref == TRAINED else (row, mine)
            for col in self.present:
                if col in first and col in second:
                    self.diffs[name, col].add(float(first[col]) - float(second[col]))
        return self

    def summary(self) -> dict[str, Any]:
        """Per policy: mean, 95 % CI half-width and n of every column; which way each column
        is better (`better`: max or min); the paired differences in every column (first −
        second whatever the way: < 0 favours the first in a min column): `paired_vs_trained`
        with a checkpoint, else `paired_vs_greedy`; the share of the greedy -> oracle gap in
        mean UE utility that each policy closes."""
        columns = result_columns([dict.fromkeys(self.present)])
        out: dict[str, Any] = {"policies": {}}
        out["better"] = {col: self.better.get(col, "max") for col in columns}
        for name in self.policies:
            out["policies"][name] = {col: self.single[name, col].as_dict() for col in columns}
        out["reference"] = self.ref
        if self.ref is not None:
            gaps = {}
            for name in self.policies:
                if name == self.ref:
                    continue
                diff = {col: self.diffs[name, col].as_dict() for col in columns}
                ret = diff.get("return", Moments().as_dict())
                gaps[name] = {
                    "return_diff_mean": ret["mean"],
                    "ci95": ret["ci95"],
                    "n": ret["n"],
                    "diff": diff,
                }
            out[f"paired_vs_{self.ref}"] = gaps
        out.setdefault("paired_vs_trained", {})
        if self.ref is not None:
            closed = {name: gap_closed(out, name) for name in self.policies}
            out["gap_closed"] = {name: share for name, share in closed.items() if share is not None}
            out["gap_reference"] = gap_reference(self.policies)
        out["notes"] = service_notes(out)
        return out


def summarize(
    rows: list[dict[str, Any]], policies: list[str], better: dict[str, str] | None = None
) -> dict[str, Any]:
    """The `Tally` summary of `rows` (all of them at once)."""
    return Tally(policies, better).add(rows).summary()


#: a trained policy that connects this many fewer UE-steps than a baseline it beats is named
CONNECTED_GAP = 0.03


def service_notes(summary: dict[str, Any]) -> list[str]:
    """Warnings a reader of the return numbers needs: the trained policy beats a baseline in
    return while keeping fewer UE-steps connected (mobile-env's return can rise by leaving UEs
    unconnected, a policy that games the reward rather than serving better)."""
    policies = summary["policies"]
    if TRAINED not in policies or keys.NET_CONNECTED not in policies[TRAINED]:
        return []
    mine = policies[TRAINED][keys.NET_CONNECTED]["mean"]
    # cell agents' return is the objective, service − λ·energy: less service for less energy
    # is the trade they are built to make, and the energy tables show what it bought
    trades = (summary.get("env_config") or {}).get("mode") in ("cells", "hierarchical")
    notes = []
    for name, gap in summary["paired_vs_trained"].items():
        theirs = policies[name].get(keys.NET_CONNECTED, {}).get("mean")
        beaten = gap["return_diff_mean"] - gap["ci95"] > 0
        utility = gap.get("diff", {}).get(keys.UTILITY_MEAN)
        if theirs is not None and beaten and theirs - mine > CONNECTED_GAP:
            notes.append(
                f"trained beats {name} in return but keeps {mine:.0%} of UE-steps connected "
                f"against {name}'s {theirs:.0%}: part of the gain may come from leaving UEs "
                "unconnected. Compare the connected and UE-utility columns before keeping it."
            )
        elif (
            beaten and not trades and utility is not None and utility["mean"] + utility["ci95"] < 0
        ):
            notes.append(
                f"trained beats {name} in return but serves the UEs worse (mean UE utility "
                f"{utility['mean']:+.3f} ± {utility['ci95']:.3f}, paired): mobile-env's "
                "multi-agent return rewards more than service. Rank policies by UE utility."
            )
    return notes
