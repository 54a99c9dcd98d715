"""`mobrl serve`: a trained policy answering a network controller over HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from mobrl.cli.app import PASS_THROUGH, app, check_options, interruptible
from mobrl.cli.options import Pick, PickOption, Trust


@app.command(context_settings=PASS_THROUGH)
@interruptible
def serve(
    ctx: typer.Context,
    checkpoint: Annotated[
        str,
        typer.Option(
            "--checkpoint", help="zoo:NAME, a checkpoint, or a trial, run or multirun dir."
        ),
    ],
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on; beyond 127.0.0.1 (e.g. 0.0.0.0) a token is required.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one, printed).")
    ] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Bearer token every request must send (default: $MOBRL_SERVE_TOKEN).",
        ),
    ] = None,
    max_body: Annotated[
        str, typer.Option("--max-body", help="Largest request body: bytes, or 1MiB, 256KiB.")
    ] = "1MiB",
    read_timeout: Annotated[
        float,
        typer.Option("--read-timeout", help="Seconds a client may take to send its body."),
    ] = 5.0,
    replicas: Annotated[
        int,
        typer.Option(
            "--replicas",
            min=1,
            help="Copies of the service on Ray Serve (the serve-ray extra); 1 without "
            "ray.address: this process, no Ray.",
        ),
    ] = 1,
    pick: PickOption = Pick.best,
    trust: Trust = False,
) -> None:
    """Serve a policy over HTTP: POST /v1/act (observations in, actions out), the KServe v1
    predict endpoint, /healthz and Prometheus /metrics, in this process (no Ray), or with
    --replicas N on Ray Serve (ray.address=HOST:PORT: on a cluster).

    Extra GROUP=OPTION / KEY=VALUE overrides name another layout, as for `mobrl evaluate`
    (scenario=medium), or the scenario of a checkpoint without a mobrl manifest;
    ray.address and ray.num_cpus say where the replicas run.
    """
    check_options(ctx)
    from mobrl.serve.server import ServeOptions, serve_command

    opts = ServeOptions(host, port, token, max_body, read_timeout, pick.value, trust, replicas)
    serve_command(checkpoint, list(ctx.args), opts)
