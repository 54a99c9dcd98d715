"""`mobrl report` as a command: where the report goes (a new dated folder unless `--out`),
writing it with a spinner on terminals, and the one-screen summary printed after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import Interrupted, UserError
from mobrl.reporting.document import build_report
from mobrl.reporting.markup import capital
from mobrl.reporting.stats import cell, digits, has_iqm, iqm_cell


def out_dir(out: Path | None, overwrite: bool, marker: str = "report.md") -> Path:
    """The report's folder: `out`, else reports/<date>/<time>; refused when it holds a report
    (its `marker` file) already (unless `overwrite`) or cannot be written."""
    from datetime import datetime

    from mobrl.core.files import check_writable

    out = Path(out) if out else Path("reports") / datetime.now().strftime("%Y-%m-%d/%H-%M-%S")
    if (out / marker).exists() and not overwrite:
        what = "a report" if marker == "report.md" else "a comparison"
        raise UserError(
            f"--out '{out}' already holds {what}. Choose another --out or add --overwrite."
        )
    check_writable(out, "--out", example="./reports/mine")
    return out


def _summary_table(metric: str, rows: list[dict[str, Any]]) -> Any:
    """A measure's table on the terminal: each group's last and best value (and the IQM of
    the last values where groups are big enough)."""
    from rich.table import Table

    title = capital(keys.title(metric)) + (f" ({keys.unit(metric)})" if keys.unit(metric) else "")
    table = Table(title=f"{title}: last and best value per group, mean ± 95 % CI over trials")
    iqm = has_iqm(rows)
    for col in ("group", "trials", "last", "best", "env steps") + (("last IQM",) if iqm else ()):
        table.add_column(col, justify="left" if col == "group" else "right")
    s, place = keys.scale(metric), digits(metric)
    for r in rows:
        table.add_row(
            r["group"],
            str(r["trials"]),
            cell(r["last_mean"] * s, r["last_ci95"] * s, place),
            cell(r["best_mean"] * s, r["best_ci95"] * s, place),
            f"{r['env_steps_mean']:,.0f}",
            *([iqm_cell(r, place, s)] if iqm else []),
        )
    return table


def report_command(
    paths: list[Path],
    out: Path | None,
    metrics: list[str] | None,
    x: str | None,
    group_by: list[str] | None,
    overwrite: bool = False,
) -> Path:
    """`mobrl report`: write the report and print a one-screen summary."""
    from mobrl.core.console import make_console

    out = out_dir(out, overwrite)
    console = make_console()
    existed = (out / "report.md").exists()
    try:
        with console.status("reading the runs and drawing the report ..."):  # terminals only
            result = build_report(paths, out, metrics, x, group_by)
    except KeyboardInterrupt:
        kept = f"; the earlier report in {out} is kept" if existed else ""
        raise Interrupted(
            "report stopped while reading the runs and drawing; its pages (report.md and "
            f"report.html, written last and whole) were not written{kept}."
        ) from None
    for metric, rows in result["tables"].items():
        console.print(_summary_table(metric, rows))
    for note in result["notes"]:
        console.print(f"note: {note}")
    shown = out.absolute()
    console.print(
        f"report: {shown / 'report.md'}, {shown / 'report.html'} ({len(result['files'])} figures)"
    )
    return out


def compare_command(
    paths: list[Path], out: Path | None, budget: str, reps: int, overwrite: bool = False
) -> Path:
    """`mobrl compare`: score, aggregate and draw; print the tables and where the files are."""
    from rich.table import Table

    from mobrl.core.console import make_console
    from mobrl.reporting.compare import MARKER, compare, tables, write

    out = out_dir(out, overwrite, MARKER)
    console = make_console()
    with console.status("scoring the runs and bootstrapping the intervals ..."):
        result = compare(paths, budget, reps)
        figures = write(result, out)
    titles = {
        "aggregates": "Normalised score at the budget (0: floor, 1: reference), 95 % "
        "stratified-bootstrap CI",
        "tasks": "Per task: mean ± 95 % CI over seeds",
        "improvement": "Probability of improvement, 95 % CI",
    }
    for key, rows in tables(result).items():
        table = Table(title=titles[key])
        for i, col in enumerate(rows[0]):
            table.add_column(col, justify="left" if i < (2 if key == "tasks" else 1) else "right")
        for row in rows:
            table.add_row(*row.values())
        console.print(table)
    for note in result["notes"]:
        console.print(f"note: {note}")
    shown = out.absolute()
    console.print(
        f"compare: {shown / MARKER}, {shown / 'scores.csv'}, {shown / 'aggregates.csv'} "
        f"({len(figures)} figures)"
    )
    return out
