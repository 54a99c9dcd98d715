"""`mobrl compare`: algorithms ranked over tasks and seeds with the statistics the field reports."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible


class Budget(str, Enum):
    env_steps = "env_steps"
    seconds = "seconds"


@app.command("compare")
@interruptible
def compare(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Run and multirun dirs of mobrl train (several algorithms, seeds)."),
    ],
    budget: Annotated[
        Budget,
        typer.Option(
            "--budget",
            help="Score each run at the env steps or training seconds every run of its task "
            "reached.",
        ),
    ] = Budget.env_steps,
    out: Annotated[
        Path | None, typer.Option("--out", help="Dir for the files (default: reports/DATE/TIME).")
    ] = None,
    reps: Annotated[
        int, typer.Option("--reps", min=100, help="Bootstrap resamples of every interval.")
    ] = 2000,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the comparison already in --out.")
    ] = False,
) -> None:
    """Normalised scores (0: greedy or the strongest rule, 1: the best reference) aggregated
    as IQM, mean, median and optimality gap with stratified-bootstrap CIs; performance
    profiles, probability of improvement, sample-efficiency curves; compare.md and CSVs."""
    from mobrl.reporting import compare_command

    compare_command(paths, out, budget.value, reps, overwrite)
