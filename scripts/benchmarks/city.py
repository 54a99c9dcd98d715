"""Env steps/s of the fast engine's dense and sparse paths at city scale, measured in one run.

For each layout, both paths (mobrl.network.neighbours: the sparse one on candidate (BS, UE) pairs,
the dense one on (BS, UE) arrays) step the same episodes in alternating rounds in one process:
`greedy` plays greedy's station actions through `step_arrays` (each path computes them from
its own arrays: the dense one as mobrl's `greedy` baseline does, the sparse one with
`pair_topk.greedy_actions`, tested equal), `topk` greedy's slot actions with `env.obs=topk`
and every UE's observation rows after each step (what the UE-slot sampler reads), `topk_gain`
the same with `env.obs=topk_gain`. Peak memory:
tracemalloc's peak of the env's arrays plus 5 steps of each, after the timing. Usage:

    python scripts/bench.py city [--scenarios large,city,metro] [--seconds 2] [--rounds 3]
                                 [--metrics]

`--metrics` also records mobrl's per-step metrics each step (`netstats.EpisodeTracker`, as
training and evaluation do).

With `--compare DIR` instead: the layouts' default path (dense below city scale) of this
checkout and of the mobrl checkout at DIR (e.g. `git worktree add /tmp/prev HEAD~1`), one
worker process each, rounds alternating between them:

    python scripts/bench.py city --compare /tmp/prev --scenarios small,medium,large
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from benchmarks.report import Report

#: this checkout (mobrl's root) and its scripts/ folder
ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"

#: (env.obs, the row's name): greedy actions alone, then with each slot observation
OBSERVATIONS = (("mobile", "greedy"), ("topk", "topk"), ("topk_gain", "topk_gain"))


def make(scenario: str, obs: str, path: str | None):
    """A multi-agent fast-engine core; `path` "dense" or "sparse" forces one (None: default)."""
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    if path is None:
        return make_mobile_core(
            scenario, "ma", "fast", {"seed": 0}, None, obs, 3 if obs.startswith("topk") else None
        )
    from mobrl.network import neighbours

    saved = neighbours.GRID_MIN_PAIRS
    neighbours.GRID_MIN_PAIRS = 0 if path == "sparse" else 2**62
    try:
        return make(scenario, obs, None)
    finally:
        neighbours.GRID_MIN_PAIRS = saved


def stepper(core, obs: str, metrics: bool = False):
    """One env step with greedy actions (and topk observations of every UE; with `metrics`,
    mobrl's per-step metrics as training and evaluation record them)."""
    from mobrl.envs.netstats import EpisodeTracker, step_arrays
    from mobrl.evaluation.baselines.classic import GreedyPolicy

    greedy = GreedyPolicy()
    tracker = EpisodeTracker(core.NUM_STATIONS, sorted(core.users)) if metrics else None
    k = getattr(core.handler, "topk", None)
    sparse = getattr(core, "_grid", None) is not None

    def step() -> None:
        if sparse:
            from mobrl.network.neighbours import greedy_actions

            act = greedy_actions(core)
        else:
            act = greedy.station_actions(core)
        if k is not None:
            act = greedy.slot_actions(core, act, k)
        _, done = core.step_arrays(act)
        if tracker is not None:
            tracker.record(*step_arrays(core, tracker.ue_ids))
        if k is not None:
            core.observe_all()
        if done:
            core.reset()

    return step


def rate(step, seconds: float) -> float:
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    return steps / (time.perf_counter() - start)


def peak_mb(scenario: str, obs: str, path: str | None, steps: int = 5) -> float:
    tracemalloc.start()
    core = make(scenario, obs, path)
    core.reset(seed=0)
    step = stepper(core, obs)
    tracemalloc.reset_peak()
    for _ in range(steps):
        step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def bench(report: Report, scenarios: list[str], seconds: float, rounds: int, metrics: bool) -> None:
    title = "fast engine, env steps/s" + (" with per-step metrics" if metrics else "")
    rows = []
    for scenario in scenarios:
        for obs, label in OBSERVATIONS:
            steppers = {}
            for path in ("dense", "sparse"):
                core = make(scenario, obs, path)
                core.reset(seed=0)
                steppers[path] = stepper(core, obs, metrics)
                steppers[path]()  # warm-up
            rates: dict[str, list[float]] = {p: [] for p in steppers}
            for _ in range(rounds):
                for path, step in steppers.items():
                    rates[path].append(rate(step, seconds))
            dense, sparse = (statistics.median(rates[p]) for p in ("dense", "sparse"))
            peaks = [peak_mb(scenario, obs, p) for p in ("dense", "sparse")]
            rows.append([scenario, label, dense, sparse, sparse / dense, peaks[0], peaks[1]])
            print(f"{scenario} {label}: dense {dense:.0f}, sparse {sparse:.0f} steps/s", flush=True)
    report.table(
        f"{title} (median of {rounds} alternating rounds)",
        ["scenario", "obs", "dense", "sparse", "sparse / dense", "peak MB dense", "peak MB sparse"],
        rows,
        formats={"dense": ".0f", "sparse": ".0f", "sparse / dense": "{:.1f}x",
                 "peak MB dense": ".0f", "peak MB sparse": ".0f"},
    )  # fmt: skip
    import resource

    report.line(
        f"process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


def worker() -> None:
    """Serve rounds on stdin: one line `scenario obs seconds` -> one JSON rate."""
    steppers = {}
    for line in sys.stdin:
        scenario, obs, seconds = line.split()
        if (scenario, obs) not in steppers:
            core = make(scenario, obs, None)
            core.reset(seed=0)
            steppers[scenario, obs] = stepper(core, obs)
            steppers[scenario, obs]()
        print(json.dumps(rate(steppers[scenario, obs], float(seconds))), flush=True)


#: a fresh Python running `worker()` (this module found through scripts/, mobrl through
#: PYTHONPATH)
WORKER = [
    sys.executable,
    "-c",
    "import sys; sys.path.insert(0, sys.argv[1]); from benchmarks.city import worker; worker()",
    str(SCRIPTS),
]


def compare(report: Report, other: str, scenarios: list[str], seconds: float, rounds: int) -> None:
    here = str(ROOT)
    procs = {}
    for name, root in (("this", here), ("other", os.path.abspath(other))):
        env = {**os.environ, "PYTHONPATH": root}
        procs[name] = subprocess.Popen(
            WORKER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=root,
        )  # fmt: skip
    print(
        f"env steps/s, median of {rounds} alternating rounds: this checkout vs {other}", flush=True
    )
    rows = []
    try:
        for scenario in scenarios:
            for obs, label in OBSERVATIONS:
                rates: dict[str, list[float]] = {p: [] for p in procs}
                for _ in range(rounds):
                    for name, proc in procs.items():
                        proc.stdin.write(f"{scenario} {obs} {seconds}\n")
                        proc.stdin.flush()
                        rates[name].append(json.loads(proc.stdout.readline()))
                this, prev = (statistics.median(rates[p]) for p in ("this", "other"))
                rows.append([scenario, label, this, prev, this / prev])
                print(f"  {scenario:8} {label:7} this {this:8.0f}  other {prev:8.0f}  "
                      f"ratio {this / prev:.2f}", flush=True)  # fmt: skip
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    report.table(
        f"env steps/s, median of {rounds} alternating rounds: this checkout vs {other}",
        ["scenario", "obs", "this", "other", "this / other"],
        rows,
        formats={"this": ".0f", "other": ".0f", "this / other": ".2f"},
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", default="large,city,metro")
    parser.add_argument("--seconds", type=float, default=2.0, help="per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", default=None, help="another mobrl checkout")
    parser.add_argument("--metrics", action="store_true", help="also record per-step metrics")


def run(args: argparse.Namespace, report: Report) -> None:
    if args.compare:
        compare(report, args.compare, args.scenarios.split(","), args.seconds, args.rounds)
    else:
        bench(report, args.scenarios.split(","), args.seconds, args.rounds, args.metrics)
