"""Wall time of `mobrl evaluate` and `mobrl render`, this checkout vs another commit, one run.

Each command runs in a fresh process (imports, policy loading and worker start-up count), in
alternating rounds: reference, this checkout, reference, ... so that both see the machine in
the same state. The reference is a git worktree of `--ref` in a temporary directory, put first
on PYTHONPATH. Usage:

    python scripts/bench.py evaluate [--ref COMMIT] [--checkpoint zoo:small] [--episodes 100]
                                     [--rounds 2]

`--checkpoint` also takes a run dir or checkpoint of `mobrl train`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.report import Report

ROOT = Path(__file__).resolve().parents[2]


def timed(argv: list[str], source: Path | None, workdir: Path) -> float:
    """Seconds of wall time of `mobrl ARGV` run from `source` (None: this checkout)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    done = subprocess.run(  # `python -m mobrl`: each source's own entry point, as a user runs it
        [sys.executable, "-m", "mobrl", *argv], cwd=workdir, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"`mobrl {' '.join(argv)}` failed:\n{done.stderr[-2000:]}")
    return elapsed


@contextmanager
def sources_of(tmp: Path, ref: str | None) -> Iterator[dict[str, Path | None]]:
    """{"ref COMMIT": its worktree, "this checkout": None}, the worktree removed afterwards."""
    if not ref:
        yield {"this checkout": None}
        return
    ref_dir = tmp / "ref"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(ref_dir), ref],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield {f"ref {ref}": ref_dir, "this checkout": None}
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref_dir)],
            capture_output=True,
        )


def record_medians(
    report: Report, title: str, times: dict[tuple[str, str], list[float]], sources: list[str]
) -> None:
    """A table of median seconds per command and source, and ref / this with two sources."""
    columns = ["command", *sources]
    if len(sources) == 2:
        columns.append("ref / this")
    rows = []
    for label in dict.fromkeys(label for label, _ in times):
        medians = [statistics.median(times[label, name]) for name in sources]
        cells: list = [label, *medians]
        if len(sources) == 2:
            cells.append(medians[0] / medians[1])
        rows.append(cells)
    report.table(
        title, columns, rows, formats={**{name: ".1f" for name in sources}, "ref / this": "{:.2f}×"}
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ref", help="commit to compare with (default: this checkout only)")
    parser.add_argument("--checkpoint", default="zoo:small")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)


def run(args: argparse.Namespace, report: Report) -> None:
    with tempfile.TemporaryDirectory(prefix="mobrl-bench-") as tmp:
        tmp = Path(tmp)
        checkpoint = args.checkpoint
        if not checkpoint.startswith("zoo:"):
            checkpoint = str(Path(checkpoint).expanduser().absolute())
        commands = {
            f"evaluate {args.episodes} episodes × 5 policies": [
                "evaluate",
                "--checkpoint",
                checkpoint,
                "--episodes",
                str(args.episodes),
                "--output",
                str(tmp / "eval"),
            ],
            "render --policy greedy, 100 steps (MP4)": [
                "render",
                "--policy",
                "greedy",
                "scenario=small",
                "--video",
                str(tmp / "greedy.mp4"),
                "--overwrite",
            ],
        }
        times: dict[tuple[str, str], list[float]] = {}
        with sources_of(tmp, args.ref) as sources:
            for _ in range(args.rounds):
                for label, argv in commands.items():
                    for name, source in sources.items():
                        if label.startswith("evaluate"):
                            subprocess.run(["rm", "-rf", str(tmp / "eval")], check=True)
                        seconds = timed(argv, source, tmp)
                        times.setdefault((label, name), []).append(seconds)
                        print(f"{label} [{name}]: {seconds:.1f} s", flush=True)
    record_medians(report, f"wall time, median of {args.rounds} rounds (s)", times, list(sources))
