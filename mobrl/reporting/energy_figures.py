"""The energy–service figure of `mobrl report`: on a layout with `power:`, each policy of an
evaluation (the trained one, the cell rules and the reference) as one point, its episode
energy on one axis and its service on the other, each with its 95 % CI, so the trade-off
between them is seen at a glance; service and energy stay two axes, never one sum."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.reporting.figures import PANEL, drawing, grid, save
from mobrl.reporting.markup import capital
from mobrl.reporting.runs import Trial
from mobrl.reporting.stats import last_values, t_half_width

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
    with drawing() as plt:
        fig, axes = grid(plt, len(shown), PANEL[1] + 0.4)
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
            ax.set_title(capital(f"{keys.words(measure)} against energy"))
        fig.suptitle(
            f"{name}: energy and service per policy, mean ± 95 % CI", x=0.01, ha="left",
            fontsize=11, fontweight="bold",
        )  # fmt: skip
        return save(plt, fig, out, stem)


# --- a training sweep's energy–service front -----------------------------------------------

#: a trained policy's evaluation of a measure, and a baseline's on the same seeds
_EVAL = f"{keys.EVALUATION}/{{}}"
_BASELINE = f"{keys.EVALUATION}/baselines/{{}}/{{}}"


def front_baselines(columns: set[str]) -> list[str]:
    """The baselines whose energy evaluation during training recorded, by name."""
    prefix, suffix = f"{keys.EVALUATION}/baselines/", f"/{keys.NET_ENERGY}"
    return sorted(
        c.removeprefix(prefix).removesuffix(suffix)
        for c in columns
        if c.startswith(prefix) and c.endswith(suffix)
    )


def front_rows(groups: dict[str, list[Trial]], columns: set[str]) -> list[dict[str, Any]]:
    """Per group (one λ of a sweep, say) and policy (the trained one, each baseline): λ, and
    the last evaluation's energy per episode and service measures, mean and 95 % CI over the
    group's trials (a baseline's on the same seeds as the trained policy)."""
    rows = []
    shown = [m for m in (keys.NET_ENERGY, *SERVICE) if _EVAL.format(m) in columns]
    for label, trials in groups.items():
        weight = trials[0].settings.get("env.energy_weight")
        for policy in ["trained", *front_baselines(columns)]:
            row: dict[str, Any] = {"group": label, "energy_weight": weight, "policy": policy}
            for measure in shown:
                column = (
                    _EVAL.format(measure)
                    if policy == "trained"
                    else _BASELINE.format(policy, measure)
                )
                last = last_values(trials, column)
                row[measure] = float(last.mean()) if last.size else math.nan
                row[f"{measure} ci95"] = t_half_width(last)
            rows.append(row)
    return rows


def plot_front(rows: list[dict[str, Any]], out: Path, stem: str) -> Path:
    """One panel per service measure: every group's trained policy (in colour, labelled by
    its λ) and baselines (grey) at their energy per episode (x) and service (y), each
    policy's points joined from the least energy up, so a sweep's front is one line."""
    shown = [m for m in SERVICE if m in rows[0]]
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    ex = keys.scale(keys.NET_ENERGY)
    with drawing() as plt:
        fig, axes = grid(plt, len(shown), PANEL[1] + 0.4)
        for ax, measure in zip(axes, shown):
            sy = keys.scale(measure)
            for policy in policies:
                mine = sorted(
                    (r for r in rows if r["policy"] == policy and math.isfinite(r[measure])),
                    key=lambda r: r[keys.NET_ENERGY],
                )
                if not mine:
                    continue
                trained = policy == "trained"
                x = [r[keys.NET_ENERGY] * ex for r in mine]
                y = [r[measure] * sy for r in mine]
                ax.errorbar(
                    x, y, xerr=[r[f"{keys.NET_ENERGY} ci95"] * ex for r in mine],
                    yerr=[r[f"{measure} ci95"] * sy for r in mine], fmt="o-" if trained else "o--",
                    capsize=3, color="tab:blue" if trained else "tab:gray",
                    markersize=6 if trained else 4, linewidth=1.2 if trained else 0.8,
                )  # fmt: skip
                if trained:
                    for r, xi, yi in zip(mine, x, y):
                        weight = r["energy_weight"]
                        text = "λ layout's" if weight is None else f"λ {weight:g}"
                        ax.annotate(text, (xi, yi), textcoords="offset points",
                                    xytext=(4, -10), fontsize=7.5, color="tab:blue")  # fmt: skip
                ax.annotate(
                    policy, (x[-1], y[-1]), textcoords="offset points", xytext=(4, 4), fontsize=8
                )
            ax.set_xlabel(keys.axis_label(keys.NET_ENERGY) + ", lower better")
            ax.set_ylabel(keys.axis_label(measure))
            ax.set_title(capital(f"{keys.words(measure)} against energy"))
        fig.suptitle(
            "The trained policies' energy–service front, with the baselines on the same seeds",
            x=0.01, ha="left", fontsize=11, fontweight="bold",
        )  # fmt: skip
        return save(plt, fig, out, stem)
