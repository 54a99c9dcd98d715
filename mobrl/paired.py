"""Statistics of episodes played on paired seeds: mean and 95 % CI, paired differences per
measure, the share of the greedy -> oracle gap a policy closes, and service notes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mobrl import metrics as keys
from mobrl.metrics import EPISODE_METRICS
from mobrl.rollout import RETURN_OF

TRAINED = "trained"
#: service first (mean UE utility, connected fraction, p5, Jain), then mobile-env's return
COLUMNS = (*EPISODE_METRICS, "return")
#: the paired reference of `mobrl baselines` (no trained policy): what coordination must beat
REFERENCE_BASELINE = "greedy"
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


def mean_ci(values: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and the half-width of its Student-t confidence interval (NaN half-width for n<2)."""
    from scipy import stats

    x = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, float(x.size)
    sem = float(x.std(ddof=1) / math.sqrt(x.size))
    half = float(stats.t.ppf(0.5 + confidence / 2, df=x.size - 1) * sem)
    return mean, half, float(x.size)


def paired(
    rows: list[dict[str, Any]], mine: str, theirs: str, columns: list[str]
) -> dict[str, dict[str, float]]:
    """`mine` − `theirs` per column over the seeds both played: mean, 95 % CI, n."""
    by_seed = {r["seed"]: r for r in rows if r["policy"] == mine}
    other = [r for r in rows if r["policy"] == theirs and r["seed"] in by_seed]
    return {
        col: dict(
            zip(("mean", "ci95", "n"), mean_ci([by_seed[r["seed"]][col] - r[col] for r in other]))
        )
        for col in columns
    }


def reference(policies: list[str]) -> str | None:
    """The policy the others are paired with: the trained one, else greedy, else none."""
    if TRAINED in policies:
        return TRAINED
    return REFERENCE_BASELINE if REFERENCE_BASELINE in policies else None


def gap_closed(summary: dict[str, Any], policy: str = TRAINED) -> float | None:
    """The share of the greedy -> oracle gap in mean UE utility that `policy` closes (1: as
    good as the oracle, 0: greedy's level, < 0: below greedy); None without both."""
    stats = summary["policies"]
    if not {policy, "greedy", "oracle"} <= set(stats) or keys.UTILITY_MEAN not in stats[policy]:
        return None
    base = stats["greedy"][keys.UTILITY_MEAN]["mean"]
    room = stats["oracle"][keys.UTILITY_MEAN]["mean"] - base
    if not room > 1e-9:
        return None
    return (stats[policy][keys.UTILITY_MEAN]["mean"] - base) / room


def summarize(rows: list[dict[str, Any]], policies: list[str]) -> dict[str, Any]:
    """Per policy: mean, 95 % CI half-width and n of every column; paired differences (same
    seeds) in every column: `paired_vs_trained` (trained − each baseline) with a checkpoint,
    else `paired_vs_greedy` (each baseline − greedy); the share of the greedy -> oracle gap
    in mean UE utility that each policy closes."""
    out: dict[str, Any] = {"policies": {}}
    columns = result_columns(rows)
    for name in policies:
        mine = [r for r in rows if r["policy"] == name]
        out["policies"][name] = {
            col: dict(zip(("mean", "ci95", "n"), mean_ci([r[col] for r in mine])))
            for col in columns
        }
    ref = reference(policies)
    out["reference"] = ref
    if ref is not None:
        gaps = {}
        for name in policies:
            if name == ref:
                continue
            diff = (
                paired(rows, ref, name, columns)
                if ref == TRAINED
                else paired(rows, name, ref, columns)
            )
            ret = diff["return"]
            gaps[name] = {
                "return_diff_mean": ret["mean"],
                "ci95": ret["ci95"],
                "n": ret["n"],
                "diff": diff,
            }
        out[f"paired_vs_{ref}"] = gaps
    out.setdefault("paired_vs_trained", {})
    if ref is not None:
        closed = {name: gap_closed(out, name) for name in policies}
        out["gap_closed"] = {name: share for name, share in closed.items() if share is not None}
    out["notes"] = service_notes(out)
    return out


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
        elif beaten and utility is not None and utility["mean"] + utility["ci95"] < 0:
            notes.append(
                f"trained beats {name} in return but serves the UEs worse (mean UE utility "
                f"{utility['mean']:+.3f} ± {utility['ci95']:.3f}, paired): mobile-env's "
                "multi-agent return rewards more than service. Rank policies by UE utility."
            )
    return notes
