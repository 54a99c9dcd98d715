"""The `mobrl` command line (Typer): one module per command (family) over the shared app
(`cli.app`) and option types (`cli.options`); each hands Hydra overrides on and prints a summary.

Heavy libraries (Ray, torch, mobile-env) are imported inside the commands that need them, so
`mobrl --help` and config errors stay fast.
"""

from __future__ import annotations

import sys

import typer

# importing a command's module registers it on the app: --help lists them in this order
# isort: off
from mobrl.cli import train, evaluate, render, report, compare, scenarios, zoo, serve  # noqa: F401

# isort: on
from mobrl.cli.app import app, unknown_option
from mobrl.core.errors import (
    FAILED_EXIT,
    INTERRUPTED_EXIT,
    USER_ERROR_EXIT,
    RunFailed,
    UserError,
    first_line,
)

__all__ = ["app", "entry", "main"]


def main() -> None:
    """Console-script entry point: the one place errors become exit codes. mobrl's
    `UserError` and Click's usage errors (an option's value of the wrong type,
    an unknown option, a missing value) become one line and exit 2, like mobrl's own."""
    # Typer ships its own Click; its UsageError is the base of the public typer.BadParameter
    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    try:
        code = app(standalone_mode=False, prog_name="mobrl")
    except UserError as err:  # every command's bad input: one line, exit 2
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(USER_ERROR_EXIT) from None
    except RunFailed as err:  # an env that failed: one line, exit 1
        print(f"error: {first_line(err)}", file=sys.stderr)
        raise SystemExit(FAILED_EXIT) from None
    except usage_error as err:
        command_error = err.ctx is not None and not isinstance(
            err.ctx.command, typer.core.TyperGroup
        )
        unknown = (
            unknown_option(err.ctx.command, sys.argv[2:], err.ctx.command_path)
            if command_error
            else None
        )
        if unknown is not None:  # a typo, rather than what it left missing
            print(f"error: {unknown}", file=sys.stderr)
            raise SystemExit(USER_ERROR_EXIT) from None
        command = err.ctx.command_path if err.ctx else "mobrl"
        message = first_line(err.format_message()).replace("Value error, ", "").rstrip(".")
        print(f"error: {message}. See `{command} --help`.", file=sys.stderr)
        raise SystemExit(USER_ERROR_EXIT) from None
    except typer.Abort:  # Ctrl-C at a prompt
        raise SystemExit(INTERRUPTED_EXIT) from None
    raise SystemExit(code if isinstance(code, int) else 0)


#: the commands that train: Python's string hashing is fixed for them (`fixed_hashing`)
TRAINING_COMMANDS = ("train",)


def fixed_hashing() -> None:
    """`mobrl train` in a process whose string hashing is fixed: RLlib's multi-agent runner
    orders agents by sets of their ids, whose order follows Python's per-process hash seed,
    so the same `run.seed` would sample differently from one run to the next. Unless the user
    set `PYTHONHASHSEED`, the command starts again (same process id, same arguments) with
    `PYTHONHASHSEED=0`, which Ray's workers inherit."""
    import os

    if len(sys.argv) < 2 or sys.argv[1] not in TRAINING_COMMANDS:
        return
    if "PYTHONHASHSEED" in os.environ:
        return
    script = sys.argv[0]
    if script.endswith(os.path.join("mobrl", "__main__.py")):
        again = [sys.executable, "-m", "mobrl", *sys.argv[1:]]
    elif os.path.basename(script) == "mobrl" and os.path.isfile(script):  # the console script
        again = [sys.executable, script, *sys.argv[1:]]
    else:  # `entry()` called from other code: it cannot be started again as it was
        return
    os.environ["PYTHONHASHSEED"] = "0"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, again)


def entry() -> None:
    """The `mobrl` console script and `python -m mobrl`: `main`, then a quick exit."""
    from mobrl.cli.quick_exit import run_and_exit

    fixed_hashing()
    run_and_exit(main)


if __name__ == "__main__":
    entry()
