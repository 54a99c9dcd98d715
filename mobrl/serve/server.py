"""`mobrl serve`: load the policy, bind the address, print where it answers and how to ask,
then run the API on uvicorn in this process (no Ray) until SIGTERM or Ctrl-C, which let the
requests in flight finish and stop it within 2 s. With `--replicas N` or `ray.address=...`
the same app runs on Ray Serve instead (`replicas.py`)."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import re
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mobrl.core.errors import Interrupted, UserError, first_line

#: the environment variable a token may come from (a --token is visible to `ps`)
TOKEN_ENV = "MOBRL_SERVE_TOKEN"
#: how long in-flight requests may take to finish once told to stop (seconds)
GRACE_S = 1.0
_SIZE = re.compile(r"^\s*(\d+)\s*(b|k|kb|kib|m|mb|mib)?\s*$", re.IGNORECASE)
_UNITS = {None: 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1000, "m": 1 << 20}
_UNITS |= {"mib": 1 << 20, "mb": 1000**2}


@dataclass
class ServeOptions:
    """The options of `mobrl serve` (see its --help)."""

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    max_body: str = "1MiB"
    read_timeout: float = 5.0
    pick: str = "best"
    trust: bool = False
    #: replicas on Ray Serve (1 and no ray.address: this process, no Ray)
    replicas: int = 1


def parse_size(text: str) -> int:
    """--max-body in bytes: 1048576, 1MiB, 512KiB, 64k (binary K and M)."""
    match = _SIZE.match(str(text))
    if match is None:
        raise UserError(
            f"--max-body '{text}' is not a size. Give bytes or a size like 1MiB, 256KiB."
        )
    size = int(match.group(1)) * _UNITS[(match.group(2) or "").lower() or None]
    if size < 1024:
        raise UserError(f"--max-body {text} is below 1 KiB: no request fits. Give 1KiB or more.")
    return size


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(host: str, token: str | None) -> str | None:
    """The bearer token (--token, else $MOBRL_SERVE_TOKEN); one is required beyond loopback."""
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and (not token.isprintable() or any(c.isspace() for c in token)):
        raise UserError(
            "the token has spaces or control characters. Give a token of printable, non-space characters."
        )
    if token is None and not is_loopback(host):
        raise UserError(
            f"--host {host} exposes the service beyond this machine; it then needs a bearer "
            f"token: add --token TOKEN or set {TOKEN_ENV} (or bind --host 127.0.0.1)."
        )
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port) (port 0: any free port), or a one-line error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise UserError(
            f"--host {host} is not an address of this machine ({first_line(err)}). "
            "Give 127.0.0.1, 0.0.0.0 or one of its addresses."
        ) from err
    family, kind, proto, _, address = infos[0]
    # proto IPPROTO_TCP, as getaddrinfo gives it: asyncio then sets TCP_NODELAY on each
    # connection (with proto 0 it does not, and every answer waits 40 ms for a delayed ACK)
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {host} is in use. Pick another with --port, or --port 0 for "
                "any free one."
            ) from err
        raise UserError(
            f"cannot listen on {host}:{port} ({first_line(err)}). Pick another --host or --port."
        ) from err
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}"


def example_request(url: str, policy: Any, token: str | None) -> str:
    """A curl command a user can paste: every agent of the layout, zero observations."""
    network = policy.networks[0]
    shown = 2 if network.obs_size <= 32 else 1
    agents = [a for a in (network.agents or policy.layout_agents()) if a][:shown] or ["agent_0"]
    zeros = "[" + ", ".join(["0"] * network.obs_size) + "]"
    body = '{"observations": {' + ", ".join(f'"{a}": {zeros}' for a in agents) + "}}"
    auth = f' -H "Authorization: Bearer ${TOKEN_ENV}"' if token else ""
    return f"curl -s{auth} -H 'Content-Type: application/json' -d '{body}' {url}/v1/act"


def _serve_libraries() -> None:
    try:
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise UserError(
            f"mobrl serve needs the serve extra ({first_line(err)}). Install it: "
            "pip install 'mobrl[serve]'."
        ) from err


def serve_command(checkpoint: str, overrides: list[str], opts: ServeOptions) -> None:
    """Check the options, load the policy, bind, print, and answer until stopped."""
    from mobrl.evaluation.targets import check_pick
    from mobrl.serve.replicas import RaySettings

    check_pick(opts.pick)
    max_body = parse_size(opts.max_body)
    if not opts.read_timeout > 0:
        raise UserError(f"--read-timeout must be above 0 seconds, got {opts.read_timeout}.")
    token = resolve_token(opts.host, opts.token)
    ray_settings, overrides = RaySettings.split(overrides)
    on_ray = opts.replicas > 1 or ray_settings.address is not None
    if ray_settings.num_cpus is not None and not on_ray:
        raise UserError(
            f"ray.num_cpus={ray_settings.num_cpus} sizes the Ray of --replicas N; one process "
            "uses no Ray. Add --replicas 2 (or more), or drop it."
        )
    _serve_libraries()
    if on_ray:
        from mobrl.serve.replicas import check_ray_serve

        check_ray_serve(ray_settings, opts.port)
    from mobrl.serve.policy import ServedPolicy

    policy = ServedPolicy.load(checkpoint, overrides, opts.pick, opts.trust)
    if on_ray:
        _serve_on_ray(policy, token, max_body, opts, ray_settings)
        return
    sock = bind(opts.host, opts.port)
    try:
        server = _server(policy, token, max_body, opts.read_timeout)
        url = url_of(sock)
        _banner(url, policy, token, opts.host)
        server.run(sockets=[sock])
    finally:
        sock.close()
    stopped = server.stopped_by
    served = int(sum(server.metrics_total()))
    if stopped == signal.SIGINT:
        raise Interrupted(f"mobrl serve stopped after {served} requests.")
    print(f"mobrl serve: stopped ({_signal_name(stopped)}) after {served} requests.", flush=True)


def _serve_on_ray(
    policy: Any, token: str | None, max_body: int, opts: ServeOptions, settings: Any
) -> None:
    """The same app on Ray Serve (`replicas.py`), at the address checked here."""
    from mobrl.serve.replicas import serve_on_ray

    local = settings.address is None
    port = opts.port
    if local:  # checked (or picked: --port 0) here, then handed to Ray Serve's proxy
        sock = bind(opts.host, opts.port)
        port = sock.getsockname()[1]
        sock.close()
    url = f"http://{_shown_host(opts.host, settings.address)}:{port}"

    def banner(where: str) -> None:
        _banner(url, policy, token, opts.host, where)

    serve_on_ray(policy, token, max_body, opts, settings, port, url, banner, GRACE_S)


def _shown_host(host: str, address: str | None) -> str:
    """Where a client reaches Ray Serve's proxies: this machine for a loopback --host (on a
    cluster: each node with a replica), the head node of `ray.address` for 0.0.0.0, else
    --host."""
    if is_loopback(host):
        return "127.0.0.1"
    if host not in ("0.0.0.0", "::"):
        return f"[{host}]" if ":" in host else host
    target = (address or "").split("://", 1)[-1].rstrip("/")
    head = target.rpartition(":")[0]
    return head if head and address != "auto" else "127.0.0.1"


def _signal_name(sig: int | None) -> str:
    return signal.Signals(sig).name if sig is not None else "shut down"


def _banner(url: str, policy: Any, token: str | None, host: str, where: str = "") -> None:
    net = policy.networks[0]
    shape = " ".join(
        f"env.{k if k != 'name' else 'obs'}={v}"
        for k, v in policy.observation.items()
        if k != "size"
    )
    size = f"{net.obs_size} values per agent, {net.actions} actions"
    if len(policy.networks) > 1:
        size = f"{len(policy.networks)} networks"
    bound = "" if is_loopback(host) else f" (listening on {host})"
    print(f"mobrl serve: {policy.note} on {policy.scenario} ({shape}; {size})")
    print(f"serving at {url}{bound}{where}; agents: {policy.agents_text()}")
    if token:
        print(f"every request needs 'Authorization: Bearer <token>' (--token or ${TOKEN_ENV})")
    print(f"try: {example_request(url, policy, token)}")
    print(f"API: {url}/healthz, {url}/docs; stop with Ctrl-C or SIGTERM", flush=True)


def _server(policy: Any, token: str | None, max_body: int, read_timeout: float) -> Any:
    """The uvicorn server of the guarded app (its access log off: /metrics counts)."""
    import uvicorn

    from mobrl.serve.app import guarded_app

    app = guarded_app(policy, token, max_body, read_timeout)
    metrics = app.metrics
    config = uvicorn.Config(
        app,
        # the same event loop and HTTP parser whatever else is installed (Ray Serve brings
        # uvloop and httptools): the stack the tests and benchmarks measured
        loop="asyncio",
        http="h11",
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACE_S,
        server_header=False,
    )
    server = _server_class()(config)
    server.metrics = metrics
    return server


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopping on SIGTERM or Ctrl-C without raising the signal again
        afterwards (mobrl tells how it stopped and exits itself)."""

        stopped_by: int | None = None
        metrics: Any = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.stopped_by is None:
                self.stopped_by = sig
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            signals = (signal.SIGINT, signal.SIGTERM)
            before = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

        def metrics_total(self) -> list[float]:
            return [
                s.value
                for metric in self.metrics.requests.collect()
                for s in metric.samples
                if s.name.endswith("_total")
            ]

    return Server
