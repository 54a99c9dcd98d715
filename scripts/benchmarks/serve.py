"""Load on `mobrl serve`: a 30-UE `POST /v1/act` (zoo:large's observations of the large
layout, 30 UEs) at 1, 16 and 64 concurrent clients, each client one keep-alive connection
sending its next request when the last is answered. Per level: throughput, UE decisions per
second, p50/p99 latency and errors, as a table.

    python scripts/bench.py serve [--requests 10000] [--time-limit 10] [--clients 1,16,64]

Bounded and local: the benchmark starts its own server on 127.0.0.1 (`--port 0`), sends at most
`--requests` requests per level and stops a level after `--time-limit` seconds, then stops the
server with SIGTERM (killing it if it has not left within 5 s). The load generator (one
asyncio process, raw HTTP/1.1) shares the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from benchmarks.report import Report

START_S = 60.0


@contextmanager
def server(checkpoint: str) -> Iterator[tuple[str, int]]:
    """`mobrl serve --checkpoint CHECKPOINT --port 0` on 127.0.0.1: (host, port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", "serve", "--checkpoint", checkpoint, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + START_S
        url = None
        assert proc.stdout is not None
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"mobrl serve ended: {proc.stderr.read() if proc.stderr else ''}")
            found = re.search(r"serving at http://(127\.0\.0\.1):(\d+)", line)
            url = (found.group(1), int(found.group(2))) if found else None
        if url is None:
            raise SystemExit("mobrl serve printed no address in time")
        urllib.request.urlopen(f"http://{url[0]}:{url[1]}/healthz", timeout=10).read()
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def request_body(ues: int) -> bytes:
    """Every UE's observation at a step of a large episode, as a controller would send them."""
    import mobrl

    env = mobrl.parallel_env("large", obs="topk_gain")
    obs, _ = env.reset(seed=0)
    for _ in range(10):  # a step where UEs hold links
        obs, *_ = env.step({a: 1 for a in env.agents})
    env.close()
    agents = sorted(obs)[:ues]
    if len(agents) < ues:
        raise SystemExit(f"the large layout has {len(agents)} UEs, not {ues}")
    return json.dumps({"observations": {a: obs[a].tolist() for a in agents}}).encode()


async def client(
    host: str, port: int, request: bytes, budget: list[int], until: float, out: dict
) -> None:
    """One keep-alive connection: request, read the whole answer, repeat."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        out["errors"] += 1
        return
    try:
        while budget[0] > 0 and time.perf_counter() < until:
            budget[0] -= 1
            start = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))
            body = await reader.readexactly(length)
            out["latency"].append(time.perf_counter() - start)
            if not head.startswith(b"HTTP/1.1 200") or b'"actions"' not in body:
                out["errors"] += 1
    except (OSError, asyncio.IncompleteReadError, AttributeError):
        out["errors"] += 1
    finally:
        writer.close()


async def level(host: str, port: int, body: bytes, clients: int, requests: int, limit: float):
    request = (
        b"POST /v1/act HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (host.encode(), len(body))
    ) + body
    out: dict = {"latency": [], "errors": 0}
    budget = [requests]
    start = time.perf_counter()
    until = start + limit
    await asyncio.gather(*(client(host, port, request, budget, until, out) for _ in range(clients)))
    return out, time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", default="zoo:large")
    parser.add_argument("--requests", type=int, default=10_000, help="at most, per level")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per level")
    parser.add_argument("--clients", default="1,16,64")
    parser.add_argument("--ues", type=int, default=30)


def run(args: argparse.Namespace, report: Report) -> None:
    body = request_body(args.ues)
    rows = []
    with server(args.checkpoint) as (host, port):
        for clients in (int(c) for c in args.clients.split(",")):
            asyncio.run(level(host, port, body, clients, min(200, args.requests), 2.0))  # warm
            out, wall = asyncio.run(
                level(host, port, body, clients, args.requests, args.time_limit)
            )
            lat = np.array(out["latency"]) * 1000
            done = len(lat)
            rows.append(
                [clients, done, out["errors"], done / wall, done * args.ues / wall,
                 float(np.percentile(lat, 50)), float(np.percentile(lat, 99)), wall]
            )  # fmt: skip
            print(f"{clients} clients: {done / wall:,.0f} requests/s", flush=True)
    report.table(
        f"`mobrl serve --checkpoint {args.checkpoint}`, {args.ues}-UE `POST /v1/act` "
        f"({len(body):,} bytes), {os.cpu_count()} cores shared with the load generator",
        ["clients", "requests", "errors", "requests/s", "UE decisions/s", "p50 ms", "p99 ms",
         "wall s"],
        rows,
        formats={"requests/s": ",.0f", "UE decisions/s": ",.0f", "p50 ms": ".2f", "p99 ms": ".2f",
                 "wall s": ".1f"},
    )  # fmt: skip
