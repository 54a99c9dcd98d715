"""`mobrl serve --replicas N` and `ray.address=...`: the same app (the API behind the guard)
deployed with Ray Serve's FastAPI integration (`@serve.deployment` over `@serve.ingress`),
on a local Ray this process starts and stops or on a cluster it joins. Ray Serve's proxy
spreads the requests over the replicas; each replica holds the policy loaded here (sent to
it by Ray, so a checkpoint need not be on the cluster's nodes) and answers as the
single-process service does, errors included.

Nothing of this module imports Ray at import time: `mobrl serve` without replicas stays off
Ray."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mobrl.core.errors import Interrupted, UserError, first_line

#: the application's name on Ray Serve (`serve status` shows it)
APP_NAME = "mobrl-serve"
#: how long the replicas may take to start (a checkpoint's replicas import torch and RLlib)
START_TIMEOUT_S = 180.0
#: the `ray.KEY=VALUE` overrides `mobrl serve` takes
RAY_KEYS = ("ray.address", "ray.num_cpus")


@dataclass(frozen=True)
class RaySettings:
    """Where the replicas run: a cluster (`ray.address`), else a local Ray of `num_cpus`
    CPUs (default: this machine's)."""

    address: str | None = None
    num_cpus: int | None = None

    @classmethod
    def split(cls, overrides: list[str]) -> tuple[RaySettings, list[str]]:
        """The `ray.` overrides, and the others (which name the layout to play)."""
        settings: dict[str, Any] = {}
        rest = []
        for item in overrides:
            key, eq, value = item.partition("=")
            if not key.lstrip("+~").startswith("ray."):
                rest.append(item)
                continue
            if key not in RAY_KEYS or not eq:
                raise UserError(
                    f"mobrl serve takes {' and '.join(k + '=...' for k in RAY_KEYS)} of Ray's "
                    f"settings, not '{item}'. Drop it (the others are mobrl train's)."
                )
            if key == "ray.num_cpus":
                if not value.isdigit() or int(value) < 1:
                    raise UserError(
                        f"ray.num_cpus={value} must be a whole number of CPUs, 1 or more "
                        "(e.g. ray.num_cpus=2)."
                    )
                settings["num_cpus"] = int(value)
            else:
                settings["address"] = value or None
        return cls(**settings), rest


def check_ray_serve(settings: RaySettings, port: int) -> None:
    """One-line errors, before the policy loads: ray.num_cpus for a cluster, --port 0 on a
    cluster, Ray Serve not installed, a `ray.address` that is not host:port or where nobody
    answers."""
    from mobrl.training.raysession import probe_ray_address

    if settings.address is not None and settings.num_cpus is not None:
        raise UserError(
            f"ray.num_cpus={settings.num_cpus} sizes a local Ray; the cluster at "
            f"ray.address={settings.address} has its own CPUs. Drop one of them."
        )
    if settings.address is not None and port == 0:
        raise UserError(
            "--port 0 picks a free port of this machine, but on a Ray cluster (ray.address) "
            "Ray Serve's proxies listen on its nodes. Give a port, e.g. --port 8000."
        )
    try:
        from ray import serve  # noqa: F401
    except ImportError as err:
        raise UserError(
            f"--replicas and ray.address deploy on Ray Serve, which is not installed "
            f"({first_line(err)}). Install it: pip install 'mobrl[serve-ray]'."
        ) from err
    probe_ray_address(settings.address)


def _builder(policy: Any, token: str | None, max_body: int, read_timeout: float) -> Any:
    """The function each replica calls once to build its app (its own metrics)."""

    def build() -> Any:
        from mobrl.serve.app import guarded_app

        return guarded_app(policy, token, max_body, read_timeout)

    return build


def application(
    policy: Any,
    token: str | None,
    max_body: int,
    read_timeout: float,
    replicas: int,
    cpus: float,
    grace: float,
) -> Any:
    """The Ray Serve application: `replicas` copies of the guarded app, `cpus` CPUs each,
    each letting its requests in flight finish for `grace` seconds when stopped."""
    from ray import serve

    @serve.deployment(
        name="policy",
        num_replicas=replicas,
        ray_actor_options={"num_cpus": cpus},
        # a request in flight when told to stop may finish, as in one process
        graceful_shutdown_wait_loop_s=0.2,
        graceful_shutdown_timeout_s=grace,
        logging_config={"log_level": "WARNING", "enable_access_log": False},
    )
    @serve.ingress(_builder(policy, token, max_body, read_timeout))
    class PolicyService:
        """A replica: the policy behind mobrl serve's API."""

    return PolicyService.bind()


def _quiet() -> None:
    """Ray's own start and stop notices off (mobrl prints where it serves)."""
    from mobrl.training.raysession import configure_ray

    configure_ray("error")
    logging.getLogger("ray.serve").setLevel(logging.WARNING)


def _start_ray(settings: RaySettings) -> None:
    import ray

    common = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if settings.address is None:
        ray.init(num_cpus=settings.num_cpus or os.cpu_count() or 1, **common)
        return
    from mobrl.training.raysession import join_cluster

    # as `mobrl train` joins: this machine's Ray token, if it has one
    join_cluster(settings.address, "serve on a local Ray", first_line, **common)


def _cpus_per_replica(replicas: int) -> float:
    """One CPU per replica, or a share of the cluster's when it has fewer."""
    import ray

    total = float(ray.cluster_resources().get("CPU", 0))
    if total <= 0:
        raise UserError(
            "the Ray cluster has no CPUs for the replicas. Join a cluster with CPUs "
            "(ray.address) or give a local one ray.num_cpus=2."
        )
    return min(1.0, round(total / replicas, 3))


def _wait_running(url: str | None, token: str | None, stop: threading.Event) -> None:
    """Until the application runs and (locally) its proxy answers /healthz, or a one-line
    error with Ray Serve's reason; at once when told to stop."""
    from ray import serve

    deadline = time.monotonic() + START_TIMEOUT_S
    while not stop.is_set():
        app = serve.status().applications.get(APP_NAME)
        state = str(getattr(app, "status", "NOT_STARTED")).rsplit(".", 1)[-1]
        if state == "RUNNING" and (url is None or _answers(url, token)):
            return
        if state in ("DEPLOY_FAILED", "UNHEALTHY"):
            reason = first_line(getattr(app, "message", "") or state)
            raise UserError(
                f"Ray Serve could not start the replicas ({state}: {reason}). See Ray's "
                "logs (/tmp/ray/session_latest/logs/serve) and try --replicas 1."
            )
        if time.monotonic() > deadline:
            raise UserError(
                f"the replicas did not start within {START_TIMEOUT_S:g} s ({state}). The "
                "cluster may lack free CPUs: lower --replicas or add nodes."
            )
        stop.wait(0.25)


def _answers(url: str, token: str | None) -> bool:
    request = urllib.request.Request(f"{url}/healthz")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:
            return answer.status == 200 and json.load(answer).get("status") == "ready"
    except (OSError, ValueError):
        return False


class _Deployment:
    """What this command set up on Ray (and so takes down): the application, and Serve
    itself where it started it."""

    def __init__(self, local: bool) -> None:
        self.local = local
        self.deployed = False
        self.started_serve = False

    def run(
        self, policy: Any, token: str | None, max_body: int, opts: Any, port: int, grace: float
    ) -> None:
        """Start Serve (where it is not running) and the application, without waiting."""
        from ray import serve
        from ray.serve.exceptions import RayServeException

        status = serve.status()
        self.started_serve = not (status.proxies or status.applications)
        if APP_NAME in status.applications:
            raise UserError(
                f"a mobrl serve already runs on this Ray cluster (application {APP_NAME}). "
                "Stop it first (`serve shutdown`, or Ctrl-C where it runs)."
            )
        cpus = _cpus_per_replica(opts.replicas)
        app = application(policy, token, max_body, opts.read_timeout, opts.replicas, cpus, grace)
        try:
            serve.start(
                http_options={"host": opts.host, "port": port},
                logging_config={"log_level": "WARNING", "enable_access_log": False},
            )
            self.deployed = True  # from here on, whatever of it started is deleted at the end
            serve.run_many(
                [serve.RunTarget(app, name=APP_NAME, route_prefix="/")],
                wait_for_applications_running=False,
            )
        except RayServeException as err:
            raise UserError(f"Ray Serve refused the service: {first_line(err)}") from None

    def stop(self) -> None:
        """The application deleted (its replicas drain their requests first), Serve shut
        down on a cluster where this command started it, and Ray left (a local Ray: every
        process of it ends here)."""
        import ray
        from ray import serve

        try:
            if self.deployed:
                serve.delete(APP_NAME)
            if self.started_serve and not self.local:
                serve.shutdown()
        finally:
            ray.shutdown()


def serve_on_ray(
    policy: Any,
    token: str | None,
    max_body: int,
    opts: Any,
    settings: RaySettings,
    port: int,
    url: str,
    banner: Callable[[str], None],
    grace: float,
) -> None:
    """Deploy the service on Ray Serve with its proxies on `port`, print where it answers
    (`banner`, once `url` answers) and keep it up until SIGTERM or Ctrl-C; then take it down
    (and the local Ray this process started)."""
    local = settings.address is None
    _quiet()
    import ray

    stop = threading.Event()
    stopped_by: list[int] = []

    def on_signal(sig: int, frame: Any) -> None:
        stopped_by.append(sig)
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C: at once

    before = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    deployment = _Deployment(local)
    try:
        _start_ray(settings)
        # again: ray.init's worker installs a SIGTERM handler of its own that ends the
        # process at once, its local Ray left behind
        signal.signal(signal.SIGTERM, on_signal)
        try:
            if not stop.is_set():
                deployment.run(policy, token, max_body, opts, port, grace)
                _wait_running(url if local else None, token, stop)
            if not stop.is_set():
                where = f" by {opts.replicas} replica{'s' * (opts.replicas > 1)} on Ray Serve"
                where += " (a local Ray)" if local else f" (the Ray cluster at {settings.address})"
                banner(where)
                if not deployment.started_serve:
                    print(
                        "note: Ray Serve already ran on this cluster: its proxies' HTTP "
                        "address applies, not --host and --port (Ray Serve keeps the first)",
                        flush=True,
                    )
                stop.wait()
        finally:
            if ray.is_initialized():
                deployment.stop()
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if stopped_by and stopped_by[0] == signal.SIGINT:
        raise Interrupted("mobrl serve stopped; its replicas are shut down.")
    print("mobrl serve: stopped (SIGTERM); its replicas are shut down.", flush=True)
