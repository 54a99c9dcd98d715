"""`mobrl evaluate` (a checkpoint against the baselines, or a generalisation matrix with
`--scenarios`) and `mobrl baselines` (the baselines alone)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mobrl.cli.app import PASS_THROUGH, app, check_options, interruptible
from mobrl.cli.options import Episodes, Explore, Output, Pick, PickOption, Seed, Trust, Workers
from mobrl.core.errors import UserError

if TYPE_CHECKING:
    from mobrl.evaluation.evaluate import EvalOptions


@app.command(context_settings=PASS_THROUGH)
@interruptible
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
            "greedy, greedy_rsrp, greedy_fill, full, capped, a3, a3_ttt2, deepcomp_dynamic, "
            "deepcomp_dynamic_eps08, deepcomp_static, deepcomp_static_m3, oracle, oracle2, "
            "oracle_rollout, oracle_horizon, oracle_mpc (mobile-env layouts); all_on, idle_off, "
            "threshold, energy_greedy, energy_oracle (cells that sleep: layouts with power:); cells_alone "
            "(a network agent above held cells: env.cell_policy); pole_angle (CartPole).",
        ),
    ] = None,
    pick: PickOption = Pick.best,
    output: Output = None,
    explore: Explore = False,
    workers: Workers = None,
    trust: Trust = False,
) -> None:
    """Evaluate a checkpoint against heuristic baselines on the same episode seeds.

    Extra GROUP=OPTION / KEY=VALUE overrides name another layout to play
    (scenario=medium: the policy's env mode, env.obs and env.topk carry over),
    or the scenario of a checkpoint without a mobrl manifest (scenario=small env=ma).
    """
    check_options(ctx)
    from mobrl.evaluation.evaluate import EvalOptions

    opts = EvalOptions(episodes, seed, baselines, pick.value, output, explore, workers, trust)
    if scenarios is not None:
        _matrix(checkpoint, scenarios, list(ctx.args), opts)
    else:
        _single(checkpoint, list(ctx.args), opts)


def _matrix(
    checkpoints: list[Path], scenarios: str, overrides: list[str], opts: EvalOptions
) -> None:
    """`--scenarios`: the generalisation matrix, each checkpoint's env from its manifest."""
    from mobrl.evaluation.matrix import matrix_command

    if overrides:
        raise UserError(
            f"--scenarios takes each checkpoint's env from its manifest; drop "
            f"{' '.join(overrides)}."
        )
    matrix_command(checkpoints, scenarios.split(","), opts)


def _single(checkpoints: list[Path], overrides: list[str], opts: EvalOptions) -> None:
    """One checkpoint against the baselines, on the env the overrides may name."""
    if len(checkpoints) > 1:
        raise UserError(
            "several --checkpoint values need --scenarios (a generalisation matrix); "
            "evaluate one checkpoint at a time otherwise."
        )
    from mobrl.evaluation.evaluate import evaluate_command

    evaluate_command(checkpoints[0], overrides, opts)


@app.command(context_settings=PASS_THROUGH)
@interruptible
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
    check_options(ctx)
    from mobrl.evaluation.evaluate import EvalOptions, evaluate_command

    overrides = list(ctx.args) or ["scenario=small"]
    opts = EvalOptions(episodes, seed, names, output=output, workers=workers)
    evaluate_command(None, overrides, opts)
