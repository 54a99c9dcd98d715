"""Figures of `mobrl report` (PNG and SVG, matplotlib's file-only backend)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.reporting.runs import Trial
from mobrl.reporting.stats import Curve, cell, group_curve, matrix_table


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, stem: str) -> Path:
    png = out / f"{stem}.png"
    fig.savefig(png, dpi=120, bbox_inches="tight")
    fig.savefig(out / f"{stem}.svg", bbox_inches="tight")
    return png


def plot_curves(curves: list[Curve], metric: str, x_name: str, out: Path, stem: str) -> Path:
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(7, 4))
    for curve in curves:
        (line,) = ax.plot(curve.x, curve.mean, label=f"{curve.label} (n={curve.n})")
        if curve.n > 1:
            ax.fill_between(
                curve.x, curve.mean - curve.half, curve.mean + curve.half,
                color=line.get_color(), alpha=0.2, linewidth=0,
            )  # fmt: skip
    ax.set_xlabel(x_name)
    ax.set_ylabel(metric)
    values = np.concatenate([c.mean for c in curves]) if curves else np.array([])
    if values.size:
        q10, q90 = np.percentile(values, [10, 90])
        low, high = q10 - 3 * (q90 - q10), q90 + 3 * (q90 - q10)
        if values.min() < low or values.max() > high:  # an untrained first iteration, say
            pad = 0.05 * (q90 - q10 or 1.0)
            ax.set_ylim(max(values.min(), low) - pad, min(values.max(), high) + pad)
            ax.set_title("y axis clipped to the bulk of the curves", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def plot_aggregate(rows: list[dict[str, Any]], metric: str, out: Path, stem: str) -> Path:
    """IQM of each group's last values with its 95 % bootstrap interval, one row per group."""
    plt = _pyplot()

    shown = [r for r in rows if not math.isnan(r["last_iqm"])]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(shown)))
    for i, r in enumerate(shown):
        ax.barh(i, r["last_iqm_high"] - r["last_iqm_low"], left=r["last_iqm_low"], height=0.6,
                alpha=0.5)  # fmt: skip
        ax.plot([r["last_iqm"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=2)
    ax.set_yticks(range(len(shown)), [f"{r['group']} (n={r['trials']})" for r in shown])
    ax.margins(x=0.15)
    ax.set_xlabel(f"IQM of the last {metric} over trials (95 % bootstrap CI)")
    ax.grid(axis="x", alpha=0.3)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def plot_evaluation(folder: Path, summary: dict[str, Any], out: Path, stem: str) -> Path:
    """Return per policy (mean ± 95 % CI) and the trained policy's paired gaps."""
    plt = _pyplot()

    policies = list(summary["policies"])
    means = [summary["policies"][p]["return"]["mean"] for p in policies]
    cis = [summary["policies"][p]["return"]["ci95"] for p in policies]
    gaps = summary.get("paired_vs_trained") or {}
    fig, axes = plt.subplots(1, 2 if gaps else 1, figsize=(10 if gaps else 5, 3.5), squeeze=False)
    axes[0][0].bar(policies, means, yerr=cis, capsize=4, color="tab:blue")
    axes[0][0].set_title("return (mean ± 95 % CI)")
    magnitudes = np.abs(means)
    if magnitudes.max() > 10 * max(np.median(magnitudes), 1e-9):  # e.g. noop far below the rest
        axes[0][0].set_yscale("symlog", linthresh=max(np.median(magnitudes), 1.0))
    if gaps:
        names = list(gaps)
        axes[0][1].bar(
            names,
            [gaps[n]["return_diff_mean"] for n in names],
            yerr=[gaps[n]["ci95"] for n in names],
            capsize=4,
            color="tab:green",
        )
        axes[0][1].axhline(0, color="black", linewidth=0.8)
        axes[0][1].set_title("trained − baseline (paired by seed)")
    fig.suptitle(str(folder.name), fontsize=9)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def plot_matrix(matrix: dict[str, Any], out: Path, stem: str) -> tuple[Path, list[dict[str, str]]]:
    """Heat map of the paired gap to the first baseline (green: the policy is ahead, with the
    CI in each cell), and the same as table rows."""
    plt = _pyplot()

    baseline = (matrix.get("baselines") or ["greedy"])[0]
    rows, cols, (gap, half) = matrix_table(matrix, baseline)
    fig, ax = plt.subplots(figsize=(1.6 * len(cols) + 2, 0.7 * len(rows) + 1.5))
    scale = np.nanmax(np.abs(gap)) if np.isfinite(gap).any() else 1.0
    from matplotlib.colors import SymLogNorm

    # symmetric log colours: small gaps stay visible next to a policy far ahead somewhere
    norm = SymLogNorm(linthresh=max(scale / 100, 1e-9), vmin=-scale, vmax=scale)
    ax.imshow(gap, cmap="RdYlGn", norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            ax.text(j, i, cell(gap[i, j], half[i, j]), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("evaluated on")
    ax.set_ylabel("trained on")
    ax.set_title(f"trained − {baseline}, paired by seed (mean ± 95 % CI)", fontsize=9)
    path = _save(fig, out, stem)
    plt.close(fig)
    table = [
        {"trained on": r, **{c: cell(gap[i, j], half[i, j]) for j, c in enumerate(cols)}}
        for i, r in enumerate(rows)
    ]
    return path, table


def plot_service(
    groups: dict[str, list[Trial]], columns: list[str], x_col: str, x: str, out: Path
) -> Path:
    plt = _pyplot()

    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 3), squeeze=False)
    for ax, column in zip(axes[0], columns):
        for label, trials in groups.items():
            curve = group_curve(label, trials, x_col, column)
            if curve is not None:
                ax.plot(curve.x, curve.mean, label=label)
        ax.set_title(column.removeprefix("env_runners/"), fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    path = _save(fig, out, "service")
    plt.close(fig)
    return path
