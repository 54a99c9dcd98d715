"""`mobrl train`: Hydra overrides checked, then handed to Hydra (or `--resume RUN_DIR`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible
from mobrl.cli.options import (
    ConfigDir,
    ConfigName,
    HydraCfg,
    HydraHelp,
    HydraInfo,
    Multirun,
    Package,
    Resolve,
    ShowHelp,
)
from mobrl.core.errors import UserError


@app.command(add_help_option=False)
@interruptible
def train(
    overrides: Annotated[
        list[str] | None,
        typer.Argument(
            help="GROUP=OPTION and KEY=VALUE overrides (a,b,c sweeps with -m).", show_default=False
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume", help="Continue the interrupted run in this dir (with its own config)."
        ),
    ] = None,
    retry_errored: Annotated[
        bool,
        typer.Option("--retry-errored", help="With --resume: restart trials that failed too."),
    ] = False,
    multirun: Multirun = False,
    cfg: HydraCfg = None,
    resolve: Resolve = False,
    package: Package = None,
    info: HydraInfo = None,
    config_dir: ConfigDir = None,
    config_name: ConfigName = None,
    show_help: ShowHelp = False,
    hydra_help: HydraHelp = False,
) -> None:
    """Train with RLlib through Ray Tune: mobrl train GROUP=OPTION KEY=VALUE [-m] [--cfg job].

    Groups: scenario, env, algo, run, tune. `mobrl train --help` lists their options and
    every config key; Hydra's flags (-m/--multirun, --cfg, -cd, ...) keep their meaning.
    `mobrl train --resume RUN_DIR [--retry-errored]` continues an interrupted run.
    """
    overrides = list(overrides or [])
    if resume is not None:
        _resume(resume, overrides, retry_errored)
        return
    if retry_errored:
        raise UserError("--retry-errored goes with --resume RUN_DIR. Add --resume RUN_DIR.")
    from mobrl.config import run_hydra

    _check_modes(multirun=multirun, cfg=cfg, info=info)
    if not (show_help or hydra_help or info):
        # --cfg prints the config and runs nothing: it builds and reaches no env either
        _check_command_line(overrides, multirun, build=not cfg)
    flags = {
        "--multirun": multirun, "--cfg": cfg and cfg.value, "--package": package,
        "--info": info and info.value, "--config-dir": config_dir, "--config-name": config_name,
        "--help": show_help, "--hydra-help": hydra_help,
        # show values, not `${...}` interpolations, in the help
        "--resolve": resolve or show_help,
    }  # fmt: skip
    from mobrl.training.run import train_task

    run_hydra(train_task, _hydra_argv(overrides, flags), prog="mobrl train")


def _resume(run_dir: Path, overrides: list[str], retry_errored: bool) -> None:
    """`--resume RUN_DIR`: the run continues with its own config, so overrides are refused."""
    if overrides:
        raise UserError(
            f"--resume continues a run with its own config; drop {' '.join(overrides)} "
            "(start a new run to change settings)."
        )
    from mobrl.training.run import resume_training

    resume_training(run_dir, retry_errored=retry_errored)


def _check_modes(**modes: object) -> None:
    """-m, --cfg and --info each make Hydra do something else: one of them at a time."""
    flags = {"multirun": "-m", "cfg": "--cfg", "info": "--info"}
    given = [flags[name] for name, on in modes.items() if on]
    if len(given) > 1:
        raise UserError(f"{' and '.join(given)} do not go together. Use one of them.")


def _check_command_line(overrides: list[str], multirun: bool, build: bool = True) -> None:
    """Every override (every value of a sweep) checked before Hydra starts; a sweep needs -m.
    `build=False`: only the checks that build no env (a simulator need not be running yet)."""
    from mobrl.config import parse_overrides
    from mobrl.training.checks import validate_command_line

    validate_command_line(overrides, build=build)
    sweeps = [ov.input_line for ov in parse_overrides(overrides) if ov.is_sweep_override()]
    if sweeps and not multirun:
        raise UserError(
            f"{' '.join(sweeps)} sweeps over several values. Add -m to run one job per "
            "value, or give one value."
        )


def _hydra_argv(overrides: list[str], flags: dict[str, object]) -> list[str]:
    """The command line `hydra.main` parses: the overrides, then each flag given (a switch
    alone, an option with its value)."""
    argv = [*overrides]
    for flag, value in flags.items():
        if value is True:
            argv.append(flag)
        elif value:
            argv += [flag, str(value)]
    return argv
