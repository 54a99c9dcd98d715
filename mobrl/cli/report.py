"""`mobrl report`: learning curves and evaluation charts of runs, as Markdown and HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible
from mobrl.cli.options import XAxis


@app.command("report")
@interruptible
def report(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Run dirs, multirun dirs and `mobrl evaluate` output dirs, mixed."),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Dir for the report (default: reports/DATE/TIME).")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="progress.csv column to plot (repeatable; default: the return)."
        ),
    ] = None,
    x: Annotated[
        XAxis | None, typer.Option("--x", help="x axis (default: env_steps and time_s).")
    ] = None,
    group_by: Annotated[
        list[str] | None,
        typer.Option(
            "--group-by", help="Config key to group by (repeatable; default: what differs)."
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the report already in --out.")
    ] = False,
) -> None:
    """Learning curves (mean and 95 % CI over seeds), evaluation charts, report.md and .html."""
    from mobrl.reporting import report_command

    report_command(paths, out, metric or None, x.value if x else None, group_by or None, overwrite)
