"""Wall time of a Hydra multirun of smoke jobs: one after another (Hydra's basic launcher) vs
side by side (`hydra/launcher=joblib`, the jobs sharing one Ray), in alternating rounds.

    python scripts/bench.py multirun [--jobs 4] [--rounds 1] [--runners 0] [OVERRIDE ...]

`--runners` sets run.resources.num_env_runners of every job (a trial holds 1 + runners CPUs:
with 0, two trials fit 2 cores at once). Records each time and the ratio parallel / sequential.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Report


def timed(overrides: list[str], workdir: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mobrl", "train", "-m", *overrides],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"multirun failed:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    if done.stdout.count("results: ") != overrides_jobs(overrides):
        raise SystemExit(f"not every job finished:\n{done.stdout[-1500:]}")
    return elapsed


def overrides_jobs(overrides: list[str]) -> int:
    seeds = next(o for o in overrides if o.startswith("run.seed="))
    return len(seeds.split("=", 1)[1].split(","))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--runners", type=int, default=0)
    parser.add_argument("overrides", nargs="*")


def run(args: argparse.Namespace, report: Report) -> None:
    common = [
        "run=smoke",
        "run.seed=" + ",".join(str(s) for s in range(args.jobs)),
        f"run.resources.num_env_runners={args.runners}",
        *args.overrides,
    ]
    times: dict[str, list[float]] = {"sequential": [], "joblib": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, extra in (("sequential", []), ("joblib", ["hydra/launcher=joblib"])):
                seconds = timed([*common, *extra], Path(tmp))
                times[name].append(seconds)
                print(f"{name:>10}: {seconds:6.1f} s", flush=True)
    seq, par = statistics.median(times["sequential"]), statistics.median(times["joblib"])
    report.table(
        f"{args.jobs} jobs, {args.runners} env runners each: wall seconds (median of "
        f"{args.rounds} rounds)",
        ["launcher", "wall s"],
        [["sequential", seq], ["joblib", par]],
        formats={"wall s": ".1f"},
    )
    report.line(
        f"{args.jobs} jobs, {args.runners} env runners each: joblib / sequential = {par / seq:.2f}"
    )
