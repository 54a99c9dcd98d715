"""`mobrl zoo list|export`: the shipped policies, and a checkpoint exported as one."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible
from mobrl.cli.options import Pick, Trust
from mobrl.core.errors import UserError

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
    from mobrl.evaluation.zoo.listing import list_command

    list_command(markdown, wide=wide, as_json=as_json)


#: what `mobrl zoo export` writes: a zoo entry (arrays and a JSON record) or an ONNX model
ExportFormat = Enum("ExportFormat", {name: name for name in ("zoo", "onnx")}, type=str)  # type: ignore[misc]

# the options of `mobrl zoo export`
ExportCheckpoint = Annotated[
    Path,
    typer.Option("--checkpoint", help="Checkpoint or run dir (--format onnx: also zoo:NAME)."),
]
ExportName = Annotated[
    str | None,
    typer.Option(
        "--name", help="Entry name (then --checkpoint zoo:NAME); required for --format zoo."
    ),
]
ExportEvaluation = Annotated[
    Path | None,
    typer.Option("--evaluation", help="Output dir of `mobrl evaluate` of this checkpoint."),
]
ExportOutput = Annotated[
    Path | None,
    typer.Option(
        "--output",
        help="zoo: dir to write NAME.npz/.json (default: mobrl's zoo); onnx: the .onnx file "
        "or a dir for NAME.onnx (default: ./NAME.onnx).",
    ),
]
ExportFormatOption = Annotated[
    ExportFormat,
    typer.Option(
        "--format",
        help="zoo: arrays and a JSON record (--checkpoint zoo:NAME); onnx: an ONNX model "
        "(observation in, logits and argmax action out) for other runtimes.",
    ),
]
ExportPick = Annotated[Pick, typer.Option("--pick", help="best or last checkpoint of a run dir.")]


@zoo_app.command("export")
@interruptible
def zoo_export(
    checkpoint: ExportCheckpoint,
    name: ExportName = None,
    evaluation: ExportEvaluation = None,
    output: ExportOutput = None,
    export_format: ExportFormatOption = ExportFormat.zoo,
    pick: ExportPick = Pick.best,
    trust: Trust = False,
) -> None:
    """Write a checkpoint's policy network as plain arrays plus its provenance: a policy that
    loads without Ray or torch and cannot run code when loaded. With --format onnx, write a
    checkpoint's or a zoo entry's policy as an ONNX model instead."""
    if export_format.value == "onnx":
        if evaluation is not None:
            raise UserError(
                "--evaluation goes with --format zoo (it attaches results to a zoo entry). "
                "Drop it for --format onnx."
            )
        from mobrl.evaluation.zoo.commands import export_onnx_command

        path, meta = export_onnx_command(str(checkpoint), output, name, pick.value, trust)
        print(
            f"ONNX model: {path} ({path.stat().st_size / 1024:.0f} KiB): {meta['source']} on "
            f"{meta['scenario']}; observation float32 [batch, {meta['observation_size']}] -> "
            f"logits, action (argmax of {meta['actions']})"
        )
        return
    if name is None:
        raise UserError(
            "--name is missing: the zoo entry's name. Add --name NAME (then --checkpoint "
            "zoo:NAME plays it)."
        )
    from mobrl.evaluation.zoo.commands import export_command

    written = export_command(checkpoint, name, evaluation, output, pick.value, trust)
    print(
        f"zoo entry: {written} ({written.stat().st_size / 1024:.0f} KiB), {written.with_suffix('.json')}"
    )
