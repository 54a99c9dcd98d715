"""Figures of `mobrl report` (PNG and SVG, matplotlib's file-only backend): every title and
axis in words with its unit (`metrics.title`, `metrics.axis_label`), at most two panels a
row, sized to fit a page (a PNG at most ~900 px wide)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.reporting.markup import capital
from mobrl.reporting.runs import Trial
from mobrl.reporting.stats import (
    Curve,
    cell,
    digits,
    group_curve,
    matrix_measure,
    matrix_table,
)

#: PNG resolution: a 8-inch-wide figure is ~880 px, drawn at its own size in report.html
DPI = 110
#: panels per row of a figure with several
COLUMNS = 2
#: inches of one panel of a multi-panel figure
PANEL = (3.9, 2.9)
_STYLE = {
    "font.size": 9.5,
    "axes.titlesize": 10.5,
    "axes.labelsize": 9.5,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlelocation": "left",
    "svg.fonttype": "none",  # text stays text in the SVGs: searchable, selectable
}


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def drawing() -> Iterator[Any]:
    """pyplot with the report's style, for this figure only (nothing global changes)."""
    plt = _pyplot()
    with plt.rc_context(_STYLE):
        yield plt


def save(plt: Any, fig: Any, out: Path, stem: str) -> Path:
    png = out / f"{stem}.png"
    fig.savefig(png, dpi=DPI, bbox_inches="tight")
    fig.savefig(out / f"{stem}.svg", bbox_inches="tight")
    plt.close(fig)
    return png


def _x_axis(ax: Any, x_col: str) -> None:
    """The x axis in words; env steps as 20k, 1.5M."""
    from matplotlib.ticker import EngFormatter

    ax.set_xlabel(keys.axis_label(x_col))
    if x_col == keys.ENV_STEPS:
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))


def grid(plt: Any, panels: int, height: float = PANEL[1]) -> tuple[Any, list[Any]]:
    """A figure of `panels` panels, at most COLUMNS a row; spare cells removed."""
    cols = min(COLUMNS, max(panels, 1))
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(PANEL[0] * cols, height * rows), squeeze=False, layout="constrained"
    )
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.remove()
    return fig, flat[:panels]


def legend_below(fig: Any, handles: list[Any], labels: list[str]) -> None:
    if not handles:
        return
    ncol = 1 if max(len(label) for label in labels) > 40 else min(len(labels), 3)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol)


def plot_curves(curves: list[Curve], metric: str, x_name: str, out: Path, stem: str) -> Path:
    """Each group's mean of `metric` against `x_name` (an `--x` choice), with its 95 % band."""
    x_col = keys.X_AXES[x_name]
    sx, sy = keys.scale(x_col), keys.scale(metric)
    with drawing() as plt:
        fig, ax = plt.subplots(figsize=(7.6, 3.5), layout="constrained")
        for curve in curves:
            x, mean, half = curve.x * sx, curve.mean * sy, curve.half * sy
            (line,) = ax.plot(x, mean, label=f"{curve.label} (n={curve.n})")
            if curve.n > 1:
                ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.2,
                                linewidth=0)  # fmt: skip
        _x_axis(ax, x_col)
        ax.set_ylabel(keys.axis_label(metric))
        heading = f"{capital(keys.title(metric))} vs {keys.words(x_col)}"
        values = np.concatenate([c.mean * sy for c in curves]) if curves else np.array([])
        if values.size:
            q10, q90 = np.percentile(values, [10, 90])
            low, high = q10 - 3 * (q90 - q10), q90 + 3 * (q90 - q10)
            if values.min() < low or values.max() > high:  # an untrained first iteration, say
                pad = 0.05 * (q90 - q10 or 1.0)
                ax.set_ylim(max(values.min(), low) - pad, min(values.max(), high) + pad)
                heading += "\n(y axis clipped to the bulk of the curves)"
        ax.set_title(heading)
        if curves:
            legend_below(fig, *ax.get_legend_handles_labels())
        return save(plt, fig, out, stem)


def plot_aggregate(rows: list[dict[str, Any]], metric: str, out: Path, stem: str) -> Path:
    """IQM of each group's last values with its 95 % bootstrap interval, one row per group."""
    shown = [r for r in rows if not math.isnan(r["last_iqm"])]
    s = keys.scale(metric)
    with drawing() as plt:
        fig, ax = plt.subplots(figsize=(7.6, 1.3 + 0.45 * len(shown)), layout="constrained")
        for i, r in enumerate(shown):
            low, high = r["last_iqm_low"] * s, r["last_iqm_high"] * s
            ax.barh(i, high - low, left=low, height=0.6, alpha=0.5)
            ax.plot([r["last_iqm"] * s] * 2, [i - 0.3, i + 0.3], color="black", linewidth=2)
        ax.set_yticks(range(len(shown)), [f"{r['group']} (n={r['trials']})" for r in shown])
        ax.margins(x=0.15)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(keys.axis_label(metric))
        ax.set_title(
            f"{capital(keys.title(metric))}: IQM of the trials' last values (95 % bootstrap CI)"
        )
        return save(plt, fig, out, stem)


#: what an evaluation's figure and table show, service first, when the summary has it
EVALUATION_MEASURES = (keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5, "return")


def paired_gaps(summary: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The reference policy of an evaluation's paired differences and the differences
    (`mobrl evaluate`: trained − each baseline; `mobrl baselines`: each baseline − greedy)."""
    ref = summary.get("reference")
    if ref is None and summary.get("paired_vs_trained"):  # written before `reference` existed
        ref = "trained"
    return ref, (summary.get(f"paired_vs_{ref}") or {}) if ref else {}


def gap_stats(gap: dict[str, Any], measure: str) -> dict[str, float] | None:
    """One paired difference's mean and CI in `measure` (None: not measured)."""
    if measure in gap.get("diff", {}):
        return gap["diff"][measure]
    if measure == "return" and "return_diff_mean" in gap:
        return {"mean": gap["return_diff_mean"], "ci95": gap["ci95"]}
    return None


#: a bar longer than this many times the median bar is cut at the edge of its panel
OUTLIER = 10.0


def _bars(ax: Any, means: list[float], cis: list[float], places: int, sign: bool) -> None:
    """Each bar's value at its end, so small bars beside a large one still read; a bar that
    dwarfs the rest (noop's return or utility far below the others) is cut at the panel's
    edge, with its value and an arrow there, so the rest keep a readable linear scale."""
    values = np.array(means, dtype=float)
    known = values[~np.isnan(values)]
    limit = OUTLIER * max(float(np.median(np.abs(known))), 1e-9) if known.size else math.inf
    bulk = [
        (v - c, v + c)
        for v, c in zip(means, np.nan_to_num(cis))
        if not math.isnan(v) and abs(v) <= limit
    ]
    low = min([0.0] + [b[0] for b in bulk])
    high = max([0.0] + [b[1] for b in bulk])
    pad = 0.25 * ((high - low) or 1.0)
    cut = len(bulk) < known.size
    if cut:
        ax.set_xlim(low - pad, high + pad)
    for i, (value, half) in enumerate(zip(means, np.nan_to_num(cis))):
        if math.isnan(value):
            continue
        text = f"{value:+.{places}f}" if sign else f"{value:.{places}f}"
        if abs(value) > limit:  # drawn to the edge: the value and an arrow, on the bar
            edge = low - pad if value < 0 else high + pad
            text = f"← {text}" if value < 0 else f"{text} →"
            ax.annotate(text, (edge, i), xytext=(3 if value < 0 else -3, 0),
                        textcoords="offset points", va="center", fontsize=7.5,
                        ha="left" if value < 0 else "right",
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "lw": 0})  # fmt: skip
        else:
            end = value + half if value >= 0 else value - half  # past the error bar
            ax.annotate(text, (end, i), xytext=(4 if value >= 0 else -4, 0),
                        textcoords="offset points", va="center", fontsize=7.5,
                        ha="left" if value >= 0 else "right")  # fmt: skip
    if not cut:
        ax.margins(x=0.25)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(5))


def plot_evaluation(name: str, summary: dict[str, Any], out: Path, stem: str) -> Path:
    """One row per measure, service first (mean UE utility, connected UEs, p5 utility, then
    the return): each policy's mean ± 95 % CI, and beside it the paired differences."""
    policies = list(summary["policies"])
    measured = summary["policies"][policies[0]]
    measures = [m for m in EVALUATION_MEASURES if m in measured] or list(measured)[:1]
    ref, gaps = paired_gaps(summary)
    panels: list[tuple[str, str]] = []
    for m in measures:
        panels += [("level", m)] + ([("gap", m)] if gaps else [])
    height = 0.9 + 0.28 * max(len(policies), len(gaps))
    with drawing() as plt:
        fig, axes = grid(plt, len(panels), height)
        for ax, (kind, m) in zip(axes, panels):
            s = keys.scale(m)
            if kind == "level":
                names = policies
                stats = [summary["policies"][p].get(m, {}) for p in names]
                colors = ["tab:blue" if p == "trained" else "tab:gray" for p in names]
                ax.set_title(capital(keys.words(m)))
            else:
                names = list(gaps)
                stats = [gap_stats(gaps[n], m) or {} for n in names]
                colors = [
                    "tab:green" if st.get("mean", 0) - st.get("ci95", 0) > 0
                    else "tab:red" if st.get("mean", 0) + st.get("ci95", 0) < 0
                    else "tab:gray"
                    for st in stats
                ]  # fmt: skip
                first = "trained − baseline" if ref == "trained" else f"baseline − {ref}"
                ax.set_title(f"{first}, paired by seed")
                ax.axvline(0, color="black", linewidth=0.8)
            means = [st.get("mean", math.nan) * s for st in stats]
            cis = [st.get("ci95", math.nan) * s for st in stats]
            ax.barh(range(len(names)), means, xerr=np.nan_to_num(cis), capsize=3, color=colors,
                    height=0.6)  # fmt: skip
            ax.set_yticks(range(len(names)), names)
            ax.invert_yaxis()
            ax.grid(axis="y", visible=False)
            ax.set_xlabel(keys.axis_label(m))
            _bars(ax, means, cis, digits(m), kind == "gap")
        episodes = int(measured.get(measures[0], {}).get("n", 0))
        fig.suptitle(
            f"{name}: {episodes} episodes per policy, mean ± 95 % CI", x=0.01, ha="left",
            fontsize=11, fontweight="bold",
        )  # fmt: skip
        return save(plt, fig, out, stem)


def plot_matrix(matrix: dict[str, Any], out: Path, stem: str) -> tuple[Path, list[dict[str, str]]]:
    """Heat map of the paired gap to the first baseline (green: the policy is ahead, with the
    CI in each cell), and the same as table rows."""
    baseline = (matrix.get("baselines") or ["greedy"])[0]
    measure = matrix_measure(matrix, baseline)
    rows, cols, (gap, half) = matrix_table(matrix, baseline, measure)
    places = digits(measure)
    with drawing() as plt:
        from matplotlib.colors import SymLogNorm

        width = min(1.5 * len(cols) + 2.2, 8.0)
        fig, ax = plt.subplots(figsize=(width, 0.6 * len(rows) + 1.8), layout="constrained")
        scale = np.nanmax(np.abs(gap)) if np.isfinite(gap).any() else 1.0
        # symmetric log colours: small gaps stay visible next to a policy far ahead somewhere
        norm = SymLogNorm(linthresh=max(scale / 100, 1e-9), vmin=-scale, vmax=scale)
        ax.imshow(gap, cmap="RdYlGn", norm=norm, aspect="auto")
        small = 7 if len(cols) > 4 else 8.5
        for i in range(len(rows)):
            for j in range(len(cols)):
                ax.text(j, i, cell(gap[i, j], half[i, j], places), ha="center",
                        va="center", fontsize=small)  # fmt: skip
        ax.set_xticks(range(len(cols)), cols, rotation=30 if len(cols) > 4 else 0)
        ax.set_yticks(range(len(rows)), rows)
        ax.grid(False)
        ax.set_xlabel("evaluated on")
        ax.set_ylabel("trained on")
        ax.set_title(
            f"{capital(keys.words(measure))}: trained − {baseline}, paired by seed\n"
            "(mean ± 95 % CI)"
        )
        path = save(plt, fig, out, stem)
    table = [
        {"trained on": r, **{c: cell(gap[i, j], half[i, j], places) for j, c in enumerate(cols)}}
        for i, r in enumerate(rows)
    ]
    return path, table


def plot_service(
    groups: dict[str, list[Trial]],
    columns: list[str],
    x_col: str,
    out: Path,
    stem: str = "service",
    heading: str = "UE service in training episodes",
) -> Path:
    """Small multiples of `columns` (each group's mean) against `x_col`, two panels a row."""
    with drawing() as plt:
        fig, axes = grid(plt, len(columns))
        handles: dict[str, Any] = {}
        for ax, column in zip(axes, columns):
            s = keys.scale(column)
            for label, trials in groups.items():
                curve = group_curve(label, trials, x_col, column)
                if curve is not None:
                    (line,) = ax.plot(curve.x * keys.scale(x_col), curve.mean * s, label=label,
                                      color=f"C{list(groups).index(label) % 10}")  # fmt: skip
                    handles.setdefault(label, line)
            ax.set_title(capital(keys.words(column)))
            ax.set_ylabel(keys.unit(column))
            _x_axis(ax, x_col)
        fig.suptitle(heading, x=0.01, ha="left", fontsize=11, fontweight="bold")
        legend_below(fig, list(handles.values()), list(handles))
        return save(plt, fig, out, stem)
