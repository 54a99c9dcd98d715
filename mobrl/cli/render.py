"""`mobrl render`: rollouts of a checkpoint or a baseline to a video, headless."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import PASS_THROUGH, app, check_options, interruptible
from mobrl.cli.options import Explore, Pick, PickOption, Seed, Trust


@app.command(context_settings=PASS_THROUGH)
@interruptible
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

    mobile-env scenarios show mobile-env's network dashboard; Gymnasium tasks
    their own rgb_array view. Extra GROUP=OPTION / KEY=VALUE overrides name the
    scenario for baselines (default scenario=small), another layout for a policy
    (scenario=medium: its env mode, env.obs and env.topk carry over) and the
    scenario of checkpoints without a mobrl manifest.
    """
    check_options(ctx)
    from mobrl.rendering.video import RenderOptions, render_command

    opts = RenderOptions(
        episodes, seed, fps, max_steps, pick.value, explore, workers, overwrite, trust
    )
    render_command(checkpoint, policy, video, list(ctx.args), opts)
