"""`mobrl zoo list|export`: the shipped policies, and a checkpoint exported as one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible
from mobrl.cli.options import Pick, Trust

zoo_app = typer.Typer(
    help="Trained policies shipped with mobrl: list them, or export a checkpoint as one.",
    no_args_is_help=True,
)
app.add_typer(zoo_app, name="zoo")


@zoo_app.command("list")
def zoo_list(
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column in the table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Records with numbers, as JSON.")] = False,
) -> None:
    """Every zoo policy: its scenario, held-out evaluation against the heuristics, training
    cost and the command that trained it. Use one with --checkpoint zoo:<name>."""
    from mobrl.evaluation.zoo.commands import list_command

    list_command(markdown, wide=wide, as_json=as_json)


@zoo_app.command("export")
@interruptible
def zoo_export(
    checkpoint: Annotated[Path, typer.Option("--checkpoint", help="Checkpoint or run dir.")],
    name: Annotated[str, typer.Option("--name", help="Entry name (then --checkpoint zoo:NAME).")],
    evaluation: Annotated[
        Path | None,
        typer.Option("--evaluation", help="Output dir of `mobrl evaluate` of this checkpoint."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Dir to write NAME.npz/.json (default: mobrl's zoo)."),
    ] = None,
    pick: Annotated[
        Pick, typer.Option("--pick", help="best or last checkpoint of a run dir.")
    ] = Pick.best,
    trust: Trust = False,
) -> None:
    """Write a checkpoint's policy network as plain arrays plus its provenance: a policy that
    loads without Ray or torch and cannot run code when loaded."""
    from mobrl.evaluation.zoo.commands import export_command

    written = export_command(checkpoint, name, evaluation, output, pick.value, trust)
    print(
        f"zoo entry: {written} ({written.stat().st_size / 1024:.0f} KiB), {written.with_suffix('.json')}"
    )
