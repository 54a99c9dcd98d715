"""The figures of `mobrl compare`: aggregate scores with their intervals, performance
profiles, the probability of improvement and sample-efficiency curves (PNG and SVG, in the
report's style)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mobrl.reporting.compare_stats import AGGREGATES
from mobrl.reporting.figures import PANEL, drawing, grid, legend_below, save

SCORE = "normalised score (0: floor, 1: reference)"


def _colours(algorithms: list[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {a: cmap(i % 10) for i, a in enumerate(algorithms)}


def plot_aggregates(result: dict[str, Any], out: Path) -> Path:
    """IQM, mean, median and optimality gap per algorithm with 95 % bootstrap intervals."""
    algorithms = result["algorithms"]
    colours = _colours(algorithms)
    with drawing() as plt:
        fig, axes = grid(plt, len(AGGREGATES), height=0.45 * len(algorithms) + 1.2)
        for ax, name in zip(axes, AGGREGATES):
            for i, algo in enumerate(algorithms):
                point, low, high = result["aggregates"][algo][name]
                ax.plot([low, high], [i, i], color=colours[algo], lw=6, alpha=0.45)
                ax.plot([point], [i], "|", color=colours[algo], ms=14, mew=2)
            ax.set_yticks(range(len(algorithms)), algorithms)
            ax.set_ylim(-0.6, len(algorithms) - 0.4)
            ax.set_title(name + (" (lower is better)" if name == "optimality gap" else ""))
            ax.set_xlabel(SCORE if name != "optimality gap" else "mean of 1 − min(score, 1)")
        return save(plt, fig, out, "aggregates")


def plot_profiles(result: dict[str, Any], out: Path) -> Path:
    """The share of runs scoring above each level, per algorithm, with its interval."""
    taus = np.asarray(result["profiles"]["taus"])
    colours = _colours(result["algorithms"])
    with drawing() as plt:
        fig, ax = plt.subplots(figsize=(PANEL[0] * 1.4, PANEL[1]), layout="constrained")
        for algo in result["algorithms"]:
            point, low, high = (np.asarray(v) for v in result["profiles"][algo])
            ax.plot(taus, point, color=colours[algo], label=algo)
            ax.fill_between(taus, low, high, color=colours[algo], alpha=0.2, lw=0)
        ax.set_xlabel(f"{SCORE}, τ")
        ax.set_ylabel("share of runs with score > τ")
        ax.set_title("Performance profiles")
        ax.legend()
        return save(plt, fig, out, "profiles")


def plot_improvement(result: dict[str, Any], out: Path) -> Path:
    """P(X > Y) for each pair of algorithms with its interval; 0.5 is a tie."""
    pairs = result["improvement"]
    with drawing() as plt:
        fig, ax = plt.subplots(
            figsize=(PANEL[0] * 1.4, 0.4 * len(pairs) + 1.0), layout="constrained"
        )
        for i, p in enumerate(pairs):
            ax.plot([p["low"], p["high"]], [i, i], color="tab:blue", lw=6, alpha=0.45)
            ax.plot([p["probability"]], [i], "|", color="tab:blue", ms=14, mew=2)
        ax.axvline(0.5, color="grey", lw=1, ls="--")
        ax.set_yticks(range(len(pairs)), [f"P({p['x']} > {p['y']})" for p in pairs])
        ax.set_xlim(0, 1)
        ax.set_xlabel("probability of improvement")
        ax.set_title("Probability of improvement (0.5: a tie)")
        return save(plt, fig, out, "improvement")


def plot_efficiency(result: dict[str, Any], budget: str, out: Path) -> Path:
    """Per task, each algorithm's IQM normalised score over its runs against env steps or
    wall seconds, with its interval."""
    curves = result["efficiency"][budget]
    tasks = list(curves)
    colours = _colours(result["algorithms"])
    with drawing() as plt:
        fig, axes = grid(plt, len(tasks))
        for ax, task in zip(axes, tasks):
            for algo, c in curves[task].items():
                x, point, low, high = (np.asarray(c[k], float) for k in ("x", "iqm", "low", "high"))
                ax.plot(x, point, color=colours[algo], label=algo)
                ax.fill_between(x, low, high, color=colours[algo], alpha=0.2, lw=0)
            ax.set_title(task)
            ax.set_xlabel("env steps" if budget == "env_steps" else "training time (s)")
            ax.set_ylabel("IQM normalised score")
            if budget == "env_steps":
                from matplotlib.ticker import EngFormatter

                ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        handles, labels = axes[0].get_legend_handles_labels()
        legend_below(fig, handles, labels)
        return save(plt, fig, out, f"efficiency_{budget}")
