"""Fixed cost per command: wall time of `mobrl train ... run=smoke` minus its training
iterations, and of evaluating its checkpoint, rendering and reporting it; this checkout vs
another commit, in one run (alternating rounds, each command in a fresh process).

    python scripts/bench_startup.py [--ref COMMIT] [--rounds 3]

The reference is a git worktree of `--ref` put first on PYTHONPATH (as in bench_evaluate.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import ROOT, timed  # noqa: E402


def iteration_seconds(run: Path) -> float:
    """Seconds the trial spent in its training iterations (Tune's time_total_s)."""
    (results,) = run.glob("tune/*/result.json")
    last = [json.loads(line) for line in results.read_text().splitlines() if line.strip()][-1]
    return float(last["time_total_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", help="commit to compare with (default: this checkout only)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="cartpole")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    rows: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="mobrl-startup-") as tmp:
        tmp = Path(tmp)
        sources: dict[str, Path | None] = {"this checkout": None}
        if args.ref:
            ref_dir = tmp / "ref"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(ref_dir), args.ref],
                check=True, capture_output=True,
            )  # fmt: skip
            sources = {f"ref {args.ref}": ref_dir, **sources}
        try:
            for r in range(args.rounds):
                for name, source in sources.items():
                    tag = f"{r}_{len(name)}"
                    run = tmp / f"run_{tag}"
                    train = ["train", f"scenario={args.scenario}", "run=smoke",
                             f"hydra.run.dir={run}"]  # fmt: skip
                    wall = timed(train, source, tmp)
                    measured = {
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
                    for label, seconds in measured.items():
                        rows.setdefault((label, name), []).append(seconds)
                        print(f"{label} [{name}]: {seconds:.1f} s", flush=True)
        finally:
            if args.ref:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tmp / "ref")],
                    capture_output=True,
                )
    table = Table(title=f"seconds, median of {args.rounds} rounds (one machine, one run)")
    table.add_column("command")
    for name in sources:
        table.add_column(name, justify="right")
    if args.ref:
        table.add_column("ref / this", justify="right")
    for label in dict.fromkeys(label for label, _ in rows):
        medians = [statistics.median(rows[label, name]) for name in sources]
        cells = [f"{m:.1f}" for m in medians]
        if args.ref:
            cells.append(f"{medians[0] / medians[1]:.2f}×")
        table.add_row(label, *cells)
    Console().print(table)


if __name__ == "__main__":
    main()
