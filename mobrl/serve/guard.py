"""What stands between a client and the API (a plain ASGI wrapper, outermost): the bearer
token, the body's size limit and read timeout, every body read as JSON, the metrics of every
answer, and a one-line JSON error for anything that escapes the API."""

from __future__ import annotations

import asyncio
import hmac
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mobrl.core.errors import first_line
from mobrl.serve.metrics import ServeMetrics

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: methods whose body the guard reads (and limits) before the API sees it
_WITH_BODY = {"POST", "PUT", "PATCH"}


def size_text(n: int) -> str:
    """Bytes in words: 1 MiB, 64 KiB, 300 bytes."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


async def answer(
    send: Send, status: int, message: str, close: bool = False, **headers: str
) -> None:
    """A one-line JSON error `{"error": message}` (`close`: end the connection after it)."""
    body = json.dumps({"error": " ".join(message.split())}, separators=(",", ":")).encode()
    fields = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    fields += [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    if close:
        fields.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI app the server runs: checks and reads a request, then hands it to `app`."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: ServeMetrics,
        token: str | None,
        max_body: int,
        read_timeout: float,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.token = None if token is None else f"Bearer {token}".encode()
        self.max_body = max_body
        self.read_timeout = read_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        sent = {"status": 0}

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self._guarded(scope, receive, counted)
        except Exception as err:  # a fault of the service: one line, it keeps serving
            print(f"mobrl serve: {scope.get('path')}: {first_line(err)}", file=sys.stderr)
            if not sent["status"]:
                await answer(counted, 500, f"the service failed on this request: {first_line(err)}")
        finally:
            self.metrics.in_flight.dec()
            if sent["status"]:  # a client that left before its answer is not counted
                self.metrics.observe(scope["path"], sent["status"], time.perf_counter() - start)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        if self.token is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), self.token
        ):
            await answer(
                send,
                401,
                "missing or wrong bearer token: send the header 'Authorization: Bearer <token>' "
                "with the token the service was started with (--token or MOBRL_SERVE_TOKEN).",
                www_authenticate="Bearer",
            )
            return
        if scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        body = await self._body(headers, receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the client's disconnect, if the API waits for one

        # the body is JSON whatever its Content-Type (curl -d sends a form's)
        kept = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
        scope = {**scope, "headers": [*kept, (b"content-type", b"application/json")]}
        await self.app(scope, replay, send)

    async def _body(
        self, headers: dict[bytes, bytes], receive: Receive, send: Send
    ) -> bytes | None:
        """The whole body, or None once the client was answered (too large, too slow, gone)."""
        limit = self.max_body
        too_large = (
            f"the body is larger than the service's limit of {size_text(limit)} (--max-body). "
            "Send fewer observations per request, or start the service with a larger --max-body."
        )
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await answer(send, 400, f"Content-Length {declared!r} is not a byte count.", True)
                return None
            if int(declared) > limit:
                await answer(send, 413, too_large, close=True)
                return None
        chunks, size = [], 0
        deadline = time.monotonic() + self.read_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0))
            except asyncio.TimeoutError:
                await answer(
                    send,
                    408,
                    f"the body took longer than {self.read_timeout:g} s to arrive "
                    f"({size} bytes came). Send the whole body at once, or start the service "
                    "with a longer --read-timeout.",
                    close=True,
                )
                return None
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await answer(send, 413, too_large, close=True)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
