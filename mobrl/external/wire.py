"""The protocol's bytes: length-prefixed frames on a TCP socket (`Channel`), the two payload
encodings (`Codec`: JSON, msgpack), addresses and the errors both sides raise.

A frame is a 4-byte big-endian unsigned length, then that many bytes of payload. The hello
and its reply are always JSON; every later message uses the encoding the reply names.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

from mobrl.core.errors import UserError

#: the protocol's version: a simulator and mobrl that speak different versions refuse each other
PROTOCOL_VERSION = 1
ENCODINGS = ("msgpack", "json")
#: the largest frame either side accepts (a longer announced length is not mobrl's framing)
MAX_FRAME = 256 * 1024 * 1024

_HEADER = struct.Struct(">I")


class ExternalEnvError(Exception):
    """A one-line failure of an external simulator, naming its address."""


class ExternalConnectError(ExternalEnvError, UserError):
    """Connecting failed: nothing listens, the hello went wrong, another protocol version."""


class ExternalStepError(ExternalEnvError, RuntimeError):
    """A failure during an episode (a `RuntimeError`, which RLlib's fault tolerance handles):
    the simulator died, timed out, answered garbage or an error, or broke its spaces."""


class WireError(Exception):
    """A broken frame or connection (turned into an `ExternalEnvError` by the caller)."""


class WireClosed(WireError):
    pass


class WireTimeout(WireError):
    pass


def parse_address(address: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:PORT`) as (host, port), or a one-line `UserError`."""
    text = str(address).strip()
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UserError(
            f"address {address!r} is not HOST:PORT. Write it as e.g. 127.0.0.1:5555 "
            "(port 0: any free port, when serving)."
        )
    return host, int(port)


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def nodelay(sock: socket.socket) -> None:
    """Small request and reply frames leave at once (no Nagle delay waiting for an ACK)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Channel:
    """Frames over one connected socket. `recv` reads into a preallocated buffer with
    `recv_into` and returns a memoryview of the payload, valid until the next `recv`."""

    def __init__(self, sock: socket.socket) -> None:
        nodelay(sock)
        self.sock = sock
        self._buf = bytearray(1 << 16)
        self._view = memoryview(self._buf)
        self._start = self._end = 0

    def send(self, payload: bytes) -> None:
        try:
            self.sock.sendall(_HEADER.pack(len(payload)) + payload)
        except TimeoutError as err:
            raise WireTimeout("sending timed out") from err
        except OSError as err:
            raise WireClosed(f"the connection broke while sending ({err.strerror or err})") from err

    def _more(self) -> None:
        if self._end == len(self._buf):  # only a frame longer than the buffer gets here
            self._grow(2 * len(self._buf))
        try:
            got = self.sock.recv_into(self._view[self._end :])
        except TimeoutError as err:
            raise WireTimeout("no reply") from err
        except OSError as err:
            raise WireClosed(f"the connection broke ({err.strerror or err})") from err
        if not got:
            raise WireClosed("the peer closed the connection")
        self._end += got

    def _grow(self, size: int) -> None:
        kept = self._buf[self._start : self._end]
        self._buf = bytearray(max(size, len(kept)))
        self._buf[: len(kept)] = kept
        self._view = memoryview(self._buf)
        self._start, self._end = 0, len(kept)

    def recv(self) -> memoryview:
        while self._end - self._start < 4:
            self._more()
        (size,) = _HEADER.unpack_from(self._buf, self._start)
        if size > MAX_FRAME:
            head = bytes(self._buf[self._start : self._start + 4])
            raise WireError(
                f"a frame announcing {size} bytes (first bytes {head!r}): not mobrl's framing "
                "(4-byte big-endian length, then the payload)"
            )
        need = 4 + size
        if len(self._buf) - self._start < need:
            self._grow(need)
        while self._end - self._start < need:
            self._more()
        payload = self._view[self._start + 4 : self._start + need]
        self._start += need
        if self._start == self._end:
            self._start = self._end = 0
        return payload

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Codec:
    """One payload encoding: `dumps(obj) -> bytes`, `loads(buffer) -> obj`; `binary` says
    whether arrays may travel as raw bytes."""

    name = "json"
    binary = False

    def dumps(self, obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    def loads(self, buf: Any) -> Any:
        try:
            return json.loads(bytes(buf))
        except (UnicodeDecodeError, ValueError) as err:
            raise WireError(f"a reply that is not valid JSON ({_shown(buf)})") from err


class MsgpackCodec(Codec):
    name = "msgpack"
    binary = True

    def __init__(self) -> None:
        import msgpack

        self._packer = msgpack.Packer(use_bin_type=True)
        self._unpackb = msgpack.unpackb
        self._errors = (msgpack.UnpackException, ValueError, TypeError)

    def dumps(self, obj: Any) -> bytes:
        return self._packer.pack(obj)

    def loads(self, buf: Any) -> Any:
        try:
            return self._unpackb(buf, raw=False, strict_map_key=False)
        except self._errors as err:
            raise WireError(f"a reply that is not valid msgpack ({_shown(buf)})") from err


def codec(name: str) -> Codec:
    return MsgpackCodec() if name == "msgpack" else Codec()


def msgpack_available() -> bool:
    try:
        import msgpack  # noqa: F401
    except ImportError:
        return False
    return True


def _shown(buf: Any) -> str:
    head = bytes(buf[:24])
    return f"{len(buf)} bytes starting {head!r}"
