"""The energy–service figure of `mobrl report`: on a layout with `power:`, each policy of an
evaluation (the trained one, the cell rules and the reference) as one point, its episode
energy on one axis and its service on the other, each with its 95 % CI, so the trade-off
between them is seen at a glance; service and energy stay two axes, never one sum."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.reporting.figures import PANEL, _capital, _drawing, _grid, _save

#: the service measures drawn against energy, one panel each, where the evaluation has them
SERVICE = (keys.UTILITY_MEAN, keys.UTILITY_P5, keys.NET_DEMAND_SERVED)


def has_energy(summary: dict[str, Any]) -> bool:
    """Whether an evaluation measured energy (a layout with `power:`)."""
    measured = next(iter(summary["policies"].values()), {})
    return keys.NET_ENERGY in measured


def plot_energy_service(name: str, summary: dict[str, Any], out: Path, stem: str) -> Path:
    """One panel per service measure: each policy's mean energy per episode (x) against its
    mean service (y), with both 95 % CIs; the trained policy in colour, the rules grey."""
    policies = summary["policies"]
    first = next(iter(policies.values()))
    shown = [m for m in SERVICE if m in first]
    with _drawing() as plt:
        fig, axes = _grid(plt, len(shown), PANEL[1] + 0.4)
        for ax, measure in zip(axes, shown):
            ex, sy = keys.scale(keys.NET_ENERGY), keys.scale(measure)
            for policy, stats in policies.items():
                energy, service = stats.get(keys.NET_ENERGY), stats.get(measure)
                if not energy or not service or not math.isfinite(energy["mean"]):
                    continue
                trained = policy == "trained"
                ax.errorbar(
                    energy["mean"] * ex, service["mean"] * sy,
                    xerr=energy["ci95"] * ex, yerr=service["ci95"] * sy,
                    fmt="o", capsize=3, color="tab:blue" if trained else "tab:gray",
                    markersize=6 if trained else 4,
                )  # fmt: skip
                ax.annotate(
                    policy, (energy["mean"] * ex, service["mean"] * sy),
                    textcoords="offset points", xytext=(4, 4), fontsize=8,
                )  # fmt: skip
            ax.set_xlabel(keys.axis_label(keys.NET_ENERGY) + ", lower better")
            ax.set_ylabel(keys.axis_label(measure))
            ax.set_title(_capital(f"{keys.words(measure)} against energy"))
        fig.suptitle(
            f"{name}: energy and service per policy, mean ± 95 % CI", x=0.01, ha="left",
            fontsize=11, fontweight="bold",
        )  # fmt: skip
        return _save(plt, fig, out, stem)
