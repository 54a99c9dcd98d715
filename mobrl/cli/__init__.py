"""The `mobrl` command line (Typer); each command hands Hydra overrides on and prints a summary.

Heavy libraries (Ray, torch, mobile-env) are imported inside the commands that need them, so
`mobrl --help` and config errors stay fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from mobrl import __version__
from mobrl.cli.options import (
    ConfigDir,
    ConfigName,
    Episodes,
    Explore,
    HydraCfg,
    HydraHelp,
    HydraInfo,
    Multirun,
    Output,
    Package,
    Pick,
    PickOption,
    Resolve,
    Seed,
    ShowHelp,
    Trust,
    Workers,
    XAxis,
)
from mobrl.core.errors import (
    INTERRUPTED_EXIT,
    USER_ERROR_EXIT,
    Interrupted,
    UserError,
    first_line,
    unknown_choice,
)

app = typer.Typer(
    name="mobrl",
    help="Reinforcement learning on mobile networks: train, evaluate, render and sweep RLlib "
    "agents on mobile-env scenarios and Gymnasium tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Typer passes Hydra's arguments (overrides, -m, --cfg, --help) through untouched
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def _interruptible(command: Callable[..., None]) -> Callable[..., None]:
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


def _unknown_option(
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


def _check_options(ctx: typer.Context) -> None:
    """What a command that takes overrides was given beyond its options must be overrides."""
    unknown = _unknown_option(ctx.command, ctx.args, ctx.command_path)
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


@app.command(add_help_option=False)
@_interruptible
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
        if overrides:
            raise UserError(
                f"--resume continues a run with its own config; drop {' '.join(overrides)} "
                "(start a new run to change settings)."
            )
        from mobrl.training.run import resume_training

        resume_training(resume, retry_errored=retry_errored)
        return
    if retry_errored:
        raise UserError("--retry-errored goes with --resume RUN_DIR. Add --resume RUN_DIR.")
    from mobrl.config import parse_overrides, run_hydra
    from mobrl.training.checks import validate_command_line

    modes = [name for name, on in (("-m", multirun), ("--cfg", cfg), ("--info", info)) if on]
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} do not go together. Use one of them.")
    if not (show_help or hydra_help or info):
        validate_command_line(overrides)
        sweeps = [ov.input_line for ov in parse_overrides(overrides) if ov.is_sweep_override()]
        if sweeps and not multirun:
            raise UserError(
                f"{' '.join(sweeps)} sweeps over several values. Add -m to run one job per "
                "value, or give one value."
            )
    flags = {
        "--multirun": multirun, "--cfg": cfg and cfg.value, "--package": package,
        "--info": info and info.value, "--config-dir": config_dir, "--config-name": config_name,
        "--help": show_help, "--hydra-help": hydra_help,
        # show values, not `${...}` interpolations, in the help
        "--resolve": resolve or show_help,
    }  # fmt: skip
    argv = [*overrides]
    for flag, value in flags.items():
        if value is True:
            argv.append(flag)
        elif value:
            argv += [flag, str(value)]
    from mobrl.training.run import train_task

    run_hydra(train_task, argv, prog="mobrl train")


@app.command(context_settings=_PASS_THROUGH)
@_interruptible
def evaluate(
    ctx: typer.Context,
    checkpoint: Annotated[
        list[Path],
        typer.Option(
            "--checkpoint",
            help="Checkpoint, trial, experiment, run or multirun dir, or zoo:NAME "
            "(repeatable with --scenarios).",
        ),
    ],
    scenarios: Annotated[
        str | None,
        typer.Option(
            "--scenarios",
            help="Comma-separated layouts: evaluate on each (a generalisation matrix; "
            "needs a policy trained with env.obs=topk).",
        ),
    ] = None,
    episodes: Episodes = 20,
    seed: Seed = 0,
    baselines: Annotated[
        str | None,
        typer.Option(
            "--baselines",
            help="Comma-separated baselines (default: the scenario's set): random, noop, "
            "greedy, greedy_fill, full, capped, a3, a3_ttt2, deepcomp_dynamic, "
            "deepcomp_dynamic_eps08, deepcomp_static, deepcomp_static_m3, oracle, oracle2 "
            "(mobile-env layouts); pole_angle (CartPole).",
        ),
    ] = None,
    pick: PickOption = Pick.best,
    output: Output = None,
    explore: Explore = False,
    workers: Workers = None,
    trust: Trust = False,
) -> None:
    """Evaluate a checkpoint against heuristic baselines on the same episode seeds.

    Extra GROUP=OPTION / KEY=VALUE overrides name the scenario for checkpoints without a
    mobrl manifest (e.g. scenario=small env=ma).
    """
    _check_options(ctx)
    from mobrl.evaluation.evaluate import EvalOptions

    opts = EvalOptions(episodes, seed, baselines, pick.value, output, explore, workers, trust)
    if scenarios is not None:
        from mobrl.evaluation.matrix import matrix_command

        if ctx.args:
            raise UserError(
                f"--scenarios takes each checkpoint's env from its manifest; drop "
                f"{' '.join(ctx.args)}."
            )
        matrix_command(checkpoint, scenarios.split(","), opts)
        return
    if len(checkpoint) > 1:
        raise UserError(
            "several --checkpoint values need --scenarios (a generalisation matrix); "
            "evaluate one checkpoint at a time otherwise."
        )
    from mobrl.evaluation.evaluate import evaluate_command

    evaluate_command(checkpoint[0], list(ctx.args), opts)


@app.command(context_settings=_PASS_THROUGH)
@_interruptible
def baselines(
    ctx: typer.Context,
    episodes: Episodes = 20,
    seed: Seed = 0,
    names: Annotated[
        str | None, typer.Option("--baselines", help="Comma-separated baselines.")
    ] = None,
    output: Output = None,
    workers: Workers = None,
) -> None:
    """Evaluate heuristic baselines on a scenario, no checkpoint: mobrl baselines scenario=small."""
    _check_options(ctx)
    from mobrl.evaluation.evaluate import EvalOptions, evaluate_command

    overrides = list(ctx.args) or ["scenario=small"]
    opts = EvalOptions(episodes, seed, names, output=output, workers=workers)
    evaluate_command(None, overrides, opts)


@app.command(context_settings=_PASS_THROUGH)
@_interruptible
def render(
    ctx: typer.Context,
    video: Annotated[Path, typer.Option("--video", help="Output file: .mp4 (H.264) or .gif.")],
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint", help="Checkpoint, trial, experiment, run or multirun dir, or zoo:NAME."
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            help="Render a baseline instead: random, noop, greedy, full, capped, oracle, ...",
        ),
    ] = None,
    episodes: Annotated[
        int, typer.Option("--episodes", min=1, help="Episodes, one after another.")
    ] = 1,
    seed: Seed = 0,
    fps: Annotated[
        float | None,
        typer.Option("--fps", min=0.1, help="Frames per second (default: the env's)."),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="Stop each episode after T steps.")
    ] = None,
    pick: PickOption = Pick.best,
    explore: Explore = False,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Processes drawing frames.")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing file.")
    ] = False,
    trust: Trust = False,
) -> None:
    """Render rollouts of a checkpoint (or a baseline) to a video, headless.

    mobile-env scenarios show mobile-env's network dashboard; Gymnasium tasks their own
    rgb_array view. Extra GROUP=OPTION / KEY=VALUE overrides name the scenario for baselines
    (default scenario=small) and for checkpoints without a mobrl manifest.
    """
    _check_options(ctx)
    from mobrl.rendering.video import RenderOptions, render_command

    opts = RenderOptions(
        episodes, seed, fps, max_steps, pick.value, explore, workers, overwrite, trust
    )
    render_command(checkpoint, policy, video, list(ctx.args), opts)


@app.command("report")
@_interruptible
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


scenarios_app = typer.Typer(
    help="List, inspect and plot scenarios (mobile-env layouts as YAML, Gymnasium tasks).",
    no_args_is_help=True,
)
app.add_typer(scenarios_app, name="scenarios")


@scenarios_app.command("list")
def scenarios_list() -> None:
    """Every scenario: stations, UEs, map size, and the spaces of each env mode."""
    from mobrl.core.console import make_console
    from mobrl.scenarios.commands import list_scenarios

    list_scenarios(make_console())


@scenarios_app.command("show")
def scenarios_show(
    name: Annotated[str, typer.Argument(help="Scenario name (or a .yaml file).")],
) -> None:
    """A layout with every parameter resolved (defaults filled in), as YAML."""
    from mobrl.scenarios.commands import show

    print(show(name), end="")


@scenarios_app.command("plot")
@_interruptible
def scenarios_plot(
    name: Annotated[str, typer.Argument(help="Scenario name (or a .yaml file).")],
    out: Annotated[Path, typer.Option("--out", help="PNG file to write.")] = Path("layout.png"),
    size: Annotated[
        str, typer.Option("--size", help="Image size in pixels, WIDTHxHEIGHT.")
    ] = "900x700",
) -> None:
    """A map of a layout: stations, their coverage at the SNR threshold, UE start positions."""
    from mobrl.scenarios.commands import plot

    try:
        width, height = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise UserError(
            f"--size '{size}' is not WIDTHxHEIGHT. Write e.g. --size 900x700."
        ) from None
    written = plot(name, out, width, height)
    print(f"plot: {written} ({width}x{height} px)")


LayoutOut = Annotated[
    Path, typer.Option("--out", help="Layout file to write (.yaml; use it as scenario.path=).")
]
LayoutUes = Annotated[
    str,
    typer.Option("--ues", help="UEs: a count (1000) or a density over the map (800/km2)."),
]
LayoutSize = Annotated[
    str | None,
    typer.Option(
        "--size", help="Map WIDTHxHEIGHT in metres [default: the stations' extent + margin]."
    ),
]
LayoutMargin = Annotated[
    float | None,
    typer.Option(
        "--margin", min=0, help="Metres around the stations' extent [default: half the spacing]."
    ),
]
LayoutSeed = Annotated[
    int, typer.Option("--seed", min=0, help="Seed of random placement and of the layout.")
]
LayoutForce = Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")]
StationBandwidth = Annotated[
    float | None, typer.Option("--bandwidth", min=0, help="Station bandwidth (Hz).")
]
StationFrequency = Annotated[
    float | None, typer.Option("--frequency", min=0, help="Station frequency (MHz).")
]
StationPower = Annotated[float | None, typer.Option("--tx-power", help="Station power (dBm).")]
StationHeight = Annotated[
    float | None, typer.Option("--station-height", min=0, help="Station height (m).")
]


def _layout_options(out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, height):
    from mobrl.scenarios.generate import Options

    given = {"bandwidth": bandwidth, "frequency": frequency, "tx_power": tx_power}
    station = {k: v for k, v in {**given, "height": height}.items() if v is not None}
    for key, value in station.items():
        if key != "tx_power" and value <= 0:
            flag = "--station-height" if key == "height" else f"--{key}"
            raise UserError(f"{flag} {value:g} must be > 0. Give a positive value.")
    return Options(ues, out, size, margin, seed, force, station)


@scenarios_app.command("generate")
def scenarios_generate(
    sites: Annotated[
        str,
        typer.Option(
            "--sites",
            help="hex:N (hexagonal grid, the N sites nearest its centre), hex:COLSxROWS (a "
            "rectangular block of it), poisson:DENSITY (stations per km², needs --size) or "
            "uniform:N (N at random, needs --size).",
        ),
    ],
    out: LayoutOut,
    ues: LayoutUes,
    isd: Annotated[
        float | None,
        typer.Option("--isd", min=1, help="Inter-site distance of hex sites (m) [default: 90]."),
    ] = None,
    size: LayoutSize = None,
    margin: LayoutMargin = None,
    seed: LayoutSeed = 0,
    force: LayoutForce = False,
    bandwidth: StationBandwidth = None,
    frequency: StationFrequency = None,
    tx_power: StationPower = None,
    station_height: StationHeight = None,
) -> None:
    """Write a layout file of generated stations (city scale), its command in its header."""
    from mobrl.scenarios.generate import generate_command

    opts = _layout_options(
        out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, station_height
    )
    print(f"generate: {generate_command(sites, isd, opts)}")


@scenarios_app.command("import")
def scenarios_import(
    stations: Annotated[
        Path, typer.Argument(help="CSV with columns x,y (metres) or lat,lon (degrees).")
    ],
    out: LayoutOut,
    ues: LayoutUes,
    size: LayoutSize = None,
    margin: LayoutMargin = None,
    seed: LayoutSeed = 0,
    force: LayoutForce = False,
    bandwidth: StationBandwidth = None,
    frequency: StationFrequency = None,
    tx_power: StationPower = None,
    station_height: StationHeight = None,
) -> None:
    """Write a layout file with the stations of a CSV (e.g. an OpenCelliD export)."""
    from mobrl.scenarios.generate import import_command

    opts = _layout_options(
        out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, station_height
    )
    print(f"import: {import_command(stations, opts)}")


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
@_interruptible
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
    except usage_error as err:
        command_error = err.ctx is not None and not isinstance(
            err.ctx.command, typer.core.TyperGroup
        )
        unknown = (
            _unknown_option(err.ctx.command, sys.argv[2:], err.ctx.command_path)
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


def entry() -> None:
    """The `mobrl` console script and `python -m mobrl`: `main`, then a quick exit."""
    from mobrl.cli.quick_exit import run_and_exit

    run_and_exit(main)


if __name__ == "__main__":
    entry()
