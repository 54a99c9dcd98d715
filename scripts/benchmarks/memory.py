"""Peak memory of `mobrl evaluate`/`mobrl baselines` against --episodes (Linux: reads /proc).

    python scripts/bench.py memory --episodes 100,100000

Runs `mobrl baselines` once per episode count and samples the resident memory of the whole
process tree (the command and its worker processes) every 0.2 s. Memory should not grow with
--episodes: episodes are tallied and written a block at a time."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import Report


def _tree_rss(root: int) -> tuple[int, int]:
    """(sum, largest) resident set in KiB of `root` and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(
                line.split(":", 1) for line in (entry / "status").read_text().splitlines()
            )
        except (OSError, ValueError):
            continue
        pid = int(entry.name)
        parents[pid] = int(fields["PPid"])
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    tree = {root}
    grew = True
    while grew:
        new = {p for p, parent in parents.items() if parent in tree} - tree
        tree |= new
        grew = bool(new)
    sizes = [rss.get(p, 0) for p in tree]
    return sum(sizes), max(sizes)


def measure(episodes: int, scenario: str, baselines: str, workers: int | None) -> dict:
    out = Path(tempfile.mkdtemp(prefix="mobrl-mem-")) / "eval"
    cmd = [sys.executable, "-m", "mobrl", "baselines", f"scenario={scenario}",
           "--baselines", baselines, "--episodes", str(episodes), "--output", str(out)]  # fmt: skip
    if workers:
        cmd += ["--workers", str(workers)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak_sum = peak_one = 0
    while proc.poll() is None:
        total, largest = _tree_rss(proc.pid)
        peak_sum, peak_one = max(peak_sum, total), max(peak_one, largest)
        time.sleep(0.2)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr.read()}")
    return {
        "episodes": episodes,
        "wall_s": time.perf_counter() - start,
        "peak_tree_mib": peak_sum / 1024,
        "peak_process_mib": peak_one / 1024,
        "csv_mib": (out / "episodes.csv").stat().st_size / 2**20,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", default="100,100000")
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--baselines", default="greedy")
    parser.add_argument("--workers", type=int, default=None)


def run(args: argparse.Namespace, report: Report) -> None:
    if not Path("/proc/self/status").exists():
        raise SystemExit("the memory benchmark reads /proc: run it on Linux.")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    rows = []
    for n in args.episodes.split(","):
        rows.append(measure(int(n), args.scenario, args.baselines, args.workers))
        print(f"{n} episodes: peak tree {rows[-1]['peak_tree_mib']:.0f} MiB", flush=True)
    report.table(
        f"`mobrl baselines scenario={args.scenario} --baselines {args.baselines}`: peak memory",
        ["episodes", "wall s", "tree MiB", "largest MiB", "csv MiB"],
        [[r["episodes"], r["wall_s"], r["peak_tree_mib"], r["peak_process_mib"], r["csv_mib"]]
         for r in rows],
        formats={"wall s": ".1f", "tree MiB": ".0f", "largest MiB": ".0f", "csv MiB": ".1f"},
    )  # fmt: skip
    first, last = rows[0], rows[-1]
    report.line(
        f"peak tree memory, {last['episodes']} vs {first['episodes']} episodes: "
        f"x{last['peak_tree_mib'] / first['peak_tree_mib']:.2f}"
    )
