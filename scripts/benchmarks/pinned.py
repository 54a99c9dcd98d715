"""The default model's speed against a pinned older commit: env steps per second of `greedy`
through `mobrl baselines` (the evaluation path a user times), this checkout against a git
worktree of PIN, in alternating rounds in one run. Each round times the command with
`--episodes N` and with `--episodes 2` and takes the difference, so start-up and set-up drop
out; the ratio is this checkout's time per step over PIN's.

    python scripts/bench.py pinned [--pin 4af711e] [--scenario city] [--episodes 10]
                                   [--rounds 3]

PIN is checked out once into a worktree under the system's temp dir (kept for the next
call), its `conf/` and `scenarios/` linked where the installed package finds them
(`mobrl.conf`, `mobrl.layouts`); both run in this environment's Python. 4af711e is the
engine before the radio model; a layout file of your own works as `--scenario PATH.yaml`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Report

REPO = Path(__file__).resolve().parents[2]


def worktree(pin: str) -> Path:
    """A worktree of `pin`, made once, with the links the package layout needs."""
    folder = Path(tempfile.gettempdir()) / f"mobrl-pinned-{pin}"
    if not (folder / "mobrl").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", str(folder), pin],
                       check=True, capture_output=True)  # fmt: skip
    for name, target in (("conf", "conf"), ("layouts", "scenarios")):
        link = folder / "mobrl" / name
        if not link.exists():
            link.symlink_to(folder / target)
    return folder


def timed(root: Path | None, scenario: str, episodes: int, out: Path) -> float:
    """Wall seconds of one `mobrl baselines` process (`root`: PIN's checkout, else this)."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    cmd = [sys.executable, "-m", "mobrl", "baselines", f"scenario={scenario}",
           "--baselines", "greedy", "--episodes", str(episodes), "--workers", "1",
           "--output", str(out)]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=out.parent)
    return time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pin", default="4af711e")
    parser.add_argument("--scenario", default="city")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)


def run(args: argparse.Namespace, report: Report) -> None:
    pinned = worktree(args.pin)
    work = Path(tempfile.mkdtemp(prefix="mobrl-bench-"))
    if args.scenario.endswith(".yaml"):  # a layout file: found in ./scenarios/ by both
        (work / "scenarios").mkdir()
        shutil.copy(args.scenario, work / "scenarios")
        args.scenario = Path(args.scenario).stem
    steps = (args.episodes - 2) * 100  # mobile-env's layouts: 100 steps an episode
    per_step: dict[str, list[float]] = {"this": [], args.pin: []}
    for _ in range(args.rounds):
        for name, root in (("this", None), (args.pin, pinned)):
            out = work / name
            full = timed(root, args.scenario, args.episodes, out)
            short = timed(root, args.scenario, 2, out)
            per_step[name].append((full - short) / steps)
            print(f"{name}: {steps / (full - short):.0f} env steps/s", flush=True)
    this, old = (statistics.median(per_step[k]) for k in ("this", args.pin))
    report.table(
        f"{args.scenario}, greedy, {args.episodes} - 2 episodes, {args.rounds} rounds",
        ["checkout", "env steps/s"],
        [["this checkout", 1 / this], [args.pin, 1 / old]],
        formats={"env steps/s": ".0f"},
    )
    report.line(f"time per step, this / {args.pin}: {this / old:.2f}x")
    shutil.rmtree(work, ignore_errors=True)
