"""The `mobrl` Typer app, its root options and what every command shares: Ctrl-C as one
line and exit 130, unknown options named with the closest one."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from mobrl import __version__
from mobrl.core.errors import INTERRUPTED_EXIT, Interrupted, UserError, unknown_choice

app = typer.Typer(
    name="mobrl",
    help="Reinforcement learning on mobile networks: train, evaluate, render and sweep RLlib "
    "agents on mobile-env scenarios and Gymnasium tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Typer passes Hydra's arguments (overrides, -m, --cfg, --help) through untouched
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def interruptible(command: Callable[..., None]) -> Callable[..., None]:
    """Ctrl-C in a command: one line on stderr saying what was stopped and what was kept
    (the command's `Interrupted`, or a plain note), exit code 130. (Typer would turn the
    KeyboardInterrupt into a bare 130, dropping what the command told.)"""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except KeyboardInterrupt as stopped:
            told = stopped if isinstance(stopped, Interrupted) else "stopped by Ctrl-C."
            print(f"interrupted: {told}", file=sys.stderr)
            raise SystemExit(INTERRUPTED_EXIT) from None

    return run


def unknown_option(
    command: typer.core.TyperCommand, args: list[str], path: str
) -> UserError | None:
    """The first `--option` in `args` that `command` does not have, as a one-line error with
    the closest one it has (Click would report a required option as missing instead, and
    the commands that pass overrides through would take it for a malformed override)."""
    known = {name for p in command.params for name in (*p.opts, *p.secondary_opts)}
    known.add("--help")
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name.startswith("--") and name not in known:
            options = sorted(n for n in known if n.startswith("--"))
            return unknown_choice("option", name, options, f"See `mobrl {command.name} --help`.")
    return None


def check_options(ctx: typer.Context) -> None:
    """What a command that takes overrides was given beyond its options must be overrides."""
    unknown = unknown_option(ctx.command, ctx.args, ctx.command_path)
    if unknown is not None:
        raise unknown


def _version(value: bool) -> None:
    if value:
        print(f"mobrl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """mobrl: one command each to configure, train, compare, evaluate, render and sweep."""
