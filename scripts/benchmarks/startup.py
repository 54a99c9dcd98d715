"""Fixed cost per command: wall time of `mobrl train ... run=smoke` minus its training
iterations, and of evaluating its checkpoint, rendering and reporting it; this checkout vs
another commit, in one run (alternating rounds, each command in a fresh process).

    python scripts/bench.py startup [--ref COMMIT] [--rounds 3]

The reference is a git worktree of `--ref` put first on PYTHONPATH (as in
scripts/benchmarks/evaluate.py).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.evaluate import record_medians, sources_of, timed
from benchmarks.report import Report


def iteration_seconds(run: Path) -> float:
    """Seconds the trial spent in its training iterations (Tune's time_total_s)."""
    (results,) = run.glob("tune/*/result.json")
    last = [json.loads(line) for line in results.read_text().splitlines() if line.strip()][-1]
    return float(last["time_total_s"])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ref", help="commit to compare with (default: this checkout only)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="cartpole")


def run(args: argparse.Namespace, report: Report) -> None:
    rows: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="mobrl-startup-") as tmp:
        tmp = Path(tmp)
        with sources_of(tmp, args.ref) as sources:
            for r in range(args.rounds):
                for name, source in sources.items():
                    for label, seconds in measure(tmp, f"{r}_{len(name)}", source, args).items():
                        rows.setdefault((label, name), []).append(seconds)
                        print(f"{label} [{name}]: {seconds:.1f} s", flush=True)
    record_medians(report, f"seconds, median of {args.rounds} rounds (one machine, one run)",
                   rows, list(sources))  # fmt: skip


def measure(tmp: Path, tag: str, source: Path | None, args: argparse.Namespace) -> dict:
    """One round of every command from `source`: {label: seconds}."""
    run = tmp / f"run_{tag}"
    train = ["train", f"scenario={args.scenario}", "run=smoke", f"hydra.run.dir={run}"]
    wall = timed(train, source, tmp)
    return {
        "train run=smoke: wall": wall,
        "train run=smoke: fixed (wall − iterations)": wall - iteration_seconds(run),
        "evaluate its checkpoint, 2 episodes": timed(
            [
                "evaluate",
                "--checkpoint",
                str(run),
                "--episodes",
                "2",
                "--output",
                str(tmp / f"eval_{tag}"),
            ],
            source,
            tmp,
        ),  # fmt: skip
        "render --policy greedy, 100 steps": timed(
            [
                "render",
                "--policy",
                "greedy",
                "scenario=small",
                "--video",
                str(tmp / f"v_{tag}.mp4"),
            ],
            source,
            tmp,
        ),  # fmt: skip
        "report of the run": timed(
            ["report", str(run), "--out", str(tmp / f"rep_{tag}")], source, tmp
        ),
    }
