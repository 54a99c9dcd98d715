"""Steps per second of mobrl's scenarios in process and through mobrl.external's protocol.

    python scripts/bench.py external                       # small and large, 5 rounds
    python scripts/bench.py external --scenarios small --rounds 3 --steps 1000

For each scenario (env=ma, random valid actions, episodes reset as they end) the same env
steps in this process (`mobrl.external.mobile`, i.e. `UEAgentsEnv` as mobrl trains it without
Ray) and through the protocol from a second process (`python -m mobrl.external
mobrl.external:mobile ...` on 127.0.0.1, one connection per encoding: msgpack and JSON).
The variants run in alternating rounds (their order rotating), so a machine busy with other
work slows each alike; the table shows the median round's steps/s, each variant's ratio to in
process and what a round trip costs per step. A benchmark, never a timed test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks.report import Report


def _serve(scenario: str) -> tuple[subprocess.Popen, str]:
    kwargs = json.dumps({"scenario": scenario, "mode": "ma"})
    process = subprocess.Popen(
        [sys.executable, "-m", "mobrl.external", "mobrl.external:mobile", "--kwargs", kwargs],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    if " on " not in line:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, line.rsplit(" on ", 1)[1].strip()


class Variant:
    """One env stepping with its own random actions, episode after episode."""

    def __init__(self, name: str, env: Any, seed: int) -> None:
        self.name, self.env = name, env
        self.rng = np.random.default_rng(seed)
        self.n = {a: int(s.n) for a, s in env.action_spaces.items()}
        self.obs, _ = env.reset(seed=seed)
        self.rates: list[float] = []

    def round(self, steps: int) -> None:
        env, rng, n = self.env, self.rng, self.n
        obs = self.obs
        start = time.perf_counter()
        for _ in range(steps):
            agents = list(obs)
            picks = rng.random(len(agents))
            actions = {a: int(p * n[a]) for a, p in zip(agents, picks)}
            obs, _, terms, truncs, _ = env.step(actions)
            if terms["__all__"] or truncs["__all__"]:
                obs, _ = env.reset()
        self.rates.append(steps / (time.perf_counter() - start))
        self.obs = obs


def bench(scenario: str, rounds: int, steps: int) -> list[tuple[str, str, float, float]]:
    from mobrl.external import connect, mobile

    process, address = _serve(scenario)
    try:
        variants = [
            Variant("in process", mobile(scenario, "ma"), 0),
            Variant("msgpack", connect(address, encoding="msgpack"), 0),
            Variant("json", connect(address, encoding="json"), 0),
        ]
        for v in variants:  # warm up: caches, allocations, the server's first episode
            v.round(max(steps // 10, 50))
            v.rates.clear()
        for r in range(rounds):
            shift = r % len(variants)
            for v in variants[shift:] + variants[:shift]:
                v.round(steps)
        for v in variants:
            v.env.close()
    finally:
        process.terminate()
        process.wait(10)
    base = statistics.median(variants[0].rates)
    return [(scenario, v.name, statistics.median(v.rates), base) for v in variants]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", nargs="+", default=["small", "large"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000, help="steps per variant per round")


def run(args: argparse.Namespace, report: Report) -> None:
    rows = []
    for scenario in args.scenarios:
        got = bench(scenario, args.rounds, args.steps)
        rows += got
        rates = ", ".join(f"{name} {rate:,.0f}" for _, name, rate, _ in got)
        print(f"{scenario}: {rates} steps/s", flush=True)
    report.table(
        f"{args.rounds} rounds of {args.steps} steps per variant (median round), env=ma",
        ["scenario", "path", "steps/s", "vs in process", "µs/step over in process"],
        [
            [scenario, name, rate, rate / base,
             None if name == "in process" else 1e6 / rate - 1e6 / base]
            for scenario, name, rate, base in rows
        ],
        formats={"steps/s": ",.0f", "vs in process": ".2f", "µs/step over in process": ".0f"},
    )  # fmt: skip
