"""The tables `mobrl evaluate` and `mobrl baselines` print from an evaluation's summary: each
policy's mean ± 95 % CI of every measure, then the differences paired by seed."""

from __future__ import annotations

from typing import Any

from mobrl.core import metrics as keys
from mobrl.evaluation.paired import TRAINED, ci_text, closed_text, lower_better


def _cell(stats: dict[str, float], sign: bool = False) -> str:
    return ci_text(stats["mean"], stats["ci95"], sign=sign)


def _header(summary: dict[str, Any], col: str) -> str:
    """A measure's column header, marked where lower is better (a cost the env reports)."""
    return f"{keys.label(col)} (lower better)" if col in lower_better(summary) else keys.label(col)


def better_legend(summary: dict[str, Any]) -> str:
    """Which sign of a paired difference favours the first policy: > 0, and < 0 in the
    measures where lower is better."""
    low = lower_better(summary)
    return "> 0: the first better" + (f"; < 0 for {', '.join(map(keys.label, low))}" if low else "")


def measures(summary: dict[str, Any]) -> list[str]:
    """The measures of the summary's policies (the tables' columns), in the order it has them."""
    return list(next(iter(summary["policies"].values())))


def column_groups(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The measures in the tables a person reads: service (and everything else), then
    energy where a layout has a power model, each with its title's suffix. Each power
    state's share stays in the files (summary.json, episodes.csv)."""
    columns = [c for c in measures(summary) if not c.startswith(keys.STATE_SHARE)]
    energy = [c for c in columns if c in keys.ENERGY_KEYS]
    if not energy:
        return [("", columns)]
    return [(": service", [c for c in columns if c not in energy]), (": energy", energy)]


def policies_table(
    summary: dict[str, Any], policies: list[str], title: str, columns: list[str] | None = None
) -> Any:
    """Every policy's mean ± 95 % CI of every measure in `columns` (rich table)."""
    from rich.table import Table

    table = Table(title=title)
    columns = measures(summary) if columns is None else columns
    table.add_column("policy")
    for col in columns:
        table.add_column(_header(summary, col), justify="right")
    for name in policies:
        table.add_row(name, *(_cell(summary["policies"][name][c]) for c in columns))
    return table


def paired_table(summary: dict[str, Any], columns: list[str], part: str = "") -> Any:
    """Trained − each baseline (or each baseline − greedy), paired by seed (rich table)."""
    from rich.table import Table

    ref = summary["reference"]
    gaps = summary[f"paired_vs_{ref}"]
    closed = summary.get("gap_closed", {}) if ref == TRAINED else {}
    if ref == TRAINED:
        title, first = "trained − each baseline", "vs"
    else:
        title, first = f"each baseline − {ref}", "policy"
    legend = better_legend(summary)
    table = Table(title=f"{title}{part}, paired by seed: mean ± 95 % CI ({legend})")
    table.add_column(first)
    for col in columns:
        table.add_column(_header(summary, col), justify="right")
    closed = closed if keys.UTILITY_MEAN in columns else {}
    if closed:
        table.add_column(
            f"greedy→{summary.get('gap_reference') or 'oracle'} gap closed", justify="right"
        )
    for name, gap in gaps.items():
        cells = [_cell(gap["diff"][c], sign=True) for c in columns]
        if closed:
            cells.append("")
        table.add_row(name, *cells)
    if TRAINED in closed:
        ref = summary.get("gap_reference") or "oracle"
        table.add_row(f"(greedy→{ref} gap)", *[""] * len(columns), closed_text(closed[TRAINED]))
    return table
