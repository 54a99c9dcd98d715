"""The simulator's side in Python: `ExternalServer` serves an env (or a factory, one env per
connection) over the protocol, each connection in a thread; `serve_env` runs one in the
foreground until SIGTERM, Ctrl-C or `max_clients` connections have ended."""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

from mobrl.core.errors import UserError, first_line
from mobrl.external.served import Served, describe
from mobrl.external.spaces import SpaceError
from mobrl.external.wire import (
    ENCODINGS,
    PROTOCOL_VERSION,
    Channel,
    WireError,
    codec,
    format_address,
    msgpack_available,
    parse_address,
)

#: how often the accept loop looks whether it should stop (seconds)
_POLL = 0.2


def _is_env(obj: Any) -> bool:
    return not isinstance(obj, type) and hasattr(obj, "reset") and hasattr(obj, "step")


class ExternalServer:
    """Serves `env_or_factory` on `address` (`HOST:PORT`, port 0: any free port; the bound
    one is `.address`). An env is served to one client at a time (a second one is refused
    while it is in use); a zero-argument factory makes one env per connection, and
    connections are served at once, each in its own thread. A factory is called once here,
    so that a broken one fails now, and that env goes to the first client.

    `max_clients`: stop after that many connections have ended; `idle_timeout`: seconds a
    connection may stay silent before the server drops it. Use `start()` (a thread) and
    `stop()`, or `serve_forever()`; also a context manager."""

    def __init__(
        self,
        env_or_factory: Any,
        address: str = "127.0.0.1:0",
        *,
        max_clients: int | None = None,
        idle_timeout: float | None = None,
        name: str | None = None,
    ) -> None:
        if _is_env(env_or_factory):
            self._env, self._factory, spare = env_or_factory, None, env_or_factory
        elif callable(env_or_factory):
            self._env, self._factory = None, env_or_factory
            spare = env_or_factory()
            if not _is_env(spare):
                raise UserError(
                    f"{describe(env_or_factory)} made {type(spare).__name__}, not an env "
                    "(an object with reset and step). Return a Gymnasium, PettingZoo or "
                    "RLlib-style multi-agent env."
                )
        else:
            raise UserError(
                f"serve_env needs an env or a zero-argument callable making one, not "
                f"{type(env_or_factory).__name__}."
            )
        try:  # every space must travel: say so now, not at the first hello
            probe = Served(spare, binary=False, name=name)
            probe.announce()
        except SpaceError as err:
            raise UserError(f"{describe(spare)} cannot be served: {err}.") from err
        self.name = probe.name
        self._spare: Any = spare if self._factory is not None else None
        self.max_clients, self.idle_timeout = max_clients, idle_timeout
        host, port = parse_address(address)
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self._listener = socket.socket(family, socket.SOCK_STREAM)
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(64)
        except OSError as err:
            raise UserError(
                f"cannot listen on {address}: {err.strerror or err}. Pick another port "
                "(port 0: any free one)."
            ) from err
        self._listener.settimeout(_POLL)
        self.address = format_address(host, self._listener.getsockname()[1])
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._busy = threading.Lock()  # the one env (not a factory) serves one client at a time
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._thread: threading.Thread | None = None
        self._closed = False
        self.accepted = 0

    # -- running ------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Accept and serve until `stop()` or until `max_clients` connections have ended."""
        try:
            while not self._stopping.is_set():
                if self.max_clients is not None and self.accepted >= self.max_clients:
                    self._wait_for_connections()
                    break
                try:
                    sock, _ = self._listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                self.accepted += 1
                thread = threading.Thread(
                    target=self._serve_connection, args=(sock,), daemon=True,
                    name=f"mobrl.external {self.address} #{self.accepted}",
                )  # fmt: skip
                with self._lock:
                    self._connections[sock] = thread
                thread.start()
        finally:
            self._shutdown()

    def _wait_for_connections(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                threads = list(self._connections.values())
            if not threads:
                return
            threads[0].join(_POLL)

    def start(self) -> ExternalServer:
        """Serve in a daemon thread; returns self (`.address` is bound already)."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True,
                                        name=f"mobrl.external {self.address}")  # fmt: skip
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, drop every connection, close the envs; wait up to `timeout`."""
        self._stopping.set()
        with self._lock:
            for sock in self._connections:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        self.stop(timeout=0)
        try:
            self._listener.close()
        except OSError:
            pass
        with self._lock:
            threads = list(self._connections.values())
        for thread in threads:
            thread.join(5.0)
        for env in (self._spare, self._env):
            if env is not None:
                _close(env)
        self._spare = None

    def __enter__(self) -> ExternalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- one connection -------------------------------------------------------------------

    def _take_env(self) -> tuple[Any, bool]:
        """The connection's env and whether it is its own (closed when it ends)."""
        if self._factory is None:
            if not self._busy.acquire(blocking=False):
                raise UserError(
                    "this simulator serves one env and another client is using it; serve a "
                    "factory (a callable making an env) for several clients"
                )
            return self._env, False
        with self._lock:
            spare, self._spare = self._spare, None
        return (spare if spare is not None else self._factory()), True

    def _serve_connection(self, sock: socket.socket) -> None:
        sock.settimeout(self.idle_timeout)
        channel = Channel(sock)
        env, own, served = None, False, None
        try:
            hello = _hello(channel)
            if hello is None:
                return
            try:
                env, own = self._take_env()
                wanted = hello.get("encoding", "json")
                encoding = "msgpack" if wanted == "msgpack" and msgpack_available() else "json"
                served = Served(env, binary=encoding == "msgpack", name=self.name)
                reply = {**served.announce(), "encoding": encoding}
            except Exception as err:  # noqa: BLE001 - told to the client, one line
                channel.send(json.dumps({"error": _one_line(err)}).encode())
                return
            channel.send(json.dumps(reply).encode())
            _requests(channel, codec(encoding), served)
        except WireError:
            pass  # the client went away, was idle too long, or the server stops
        finally:
            channel.close()
            if env is not None:
                if own:
                    _close(env)
                else:
                    self._busy.release()
            with self._lock:
                self._connections.pop(sock, None)


def _hello(channel: Channel) -> dict[str, Any] | None:
    """The client's hello (JSON), or None after answering a bad one with an error."""
    try:
        hello = json.loads(bytes(channel.recv()))
    except (UnicodeDecodeError, ValueError):
        hello = None
    problem = None
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        problem = 'the first message must be a JSON hello ({"type": "hello", ...})'
    elif hello.get("version") != PROTOCOL_VERSION:
        problem = (f"protocol version {hello.get('version')!r} is not spoken here; this "
                   f"simulator speaks version {PROTOCOL_VERSION}")  # fmt: skip
    elif hello.get("encoding", "json") not in ENCODINGS:
        problem = f"unknown encoding {hello.get('encoding')!r} (json or msgpack)"
    if problem:
        channel.send(json.dumps({"error": problem}).encode())
        return None
    return hello


def _requests(channel: Channel, wire: Any, served: Served) -> None:
    """Answer requests until the client closes (or the connection ends)."""
    step, reset, render = served.step, served.reset, served.render
    while True:
        request = wire.loads(channel.recv())
        kind = request.get("type") if type(request) is dict else None
        try:
            if kind == "step":
                reply = step(request)
            elif kind == "reset":
                reply = reset(request)
            elif kind == "render":
                reply = render(request)
            elif kind == "close":
                channel.send(wire.dumps({}))
                return
            else:
                reply = {"error": f"unknown request type {kind!r} (reset, step, render, close)"}
        except Exception as err:  # noqa: BLE001 - the env's own failure, told to the client
            reply = {"error": _one_line(err)}
        channel.send(wire.dumps(reply))


def _one_line(err: BaseException) -> str:
    if isinstance(err, (UserError, SpaceError)):
        return first_line(err)
    return f"{type(err).__name__}: {first_line(err)}"


def _close(env: Any) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001 - closing must not hide why the server stopped
        pass


def serve_env(
    env_or_factory: Any,
    address: str = "127.0.0.1:0",
    *,
    max_clients: int | None = None,
    idle_timeout: float | None = None,
    ready: Callable[[str], Any] | None = None,
    name: str | None = None,
) -> str:
    """Serve an env (or a factory: one env per connection) on `address` in the foreground:
    prints `mobrl.external: serving <what> on HOST:PORT`, calls `ready(address)`, and returns
    the address once SIGTERM, Ctrl-C or the end of `max_clients` connections stopped it."""
    server = ExternalServer(
        env_or_factory, address, max_clients=max_clients, idle_timeout=idle_timeout, name=name
    )
    in_main = threading.current_thread() is threading.main_thread()
    previous = None
    if in_main:  # before the address is out: a client's supervisor may stop it at once
        previous = signal.signal(signal.SIGTERM, lambda *_: server.stop(timeout=0))
    try:
        print(f"mobrl.external: serving {server.name} on {server.address}", flush=True)
        if ready is not None:
            ready(server.address)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._shutdown()  # (serve_forever has, unless stopped before it started)
        if in_main:
            signal.signal(signal.SIGTERM, previous)
    print(f"mobrl.external: stopped serving on {server.address}", file=sys.stderr, flush=True)
    return server.address
