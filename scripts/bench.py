"""Run one of mobrl's benchmarks (scripts/benchmarks/NAME.py): its tables and headline lines on
the terminal, and a JSON record of them.

    python scripts/bench.py --list                      # every benchmark and what it measures
    python scripts/bench.py NAME --help                 # a benchmark's options
    python scripts/bench.py NAME [its options] [--json PATH]

The JSON record (default `outputs/bench/NAME.json` under the current directory) holds the
benchmark's name, its command line, when it started, its wall seconds, the machine (CPUs,
Python, platform), its tables (title, columns, rows of plain numbers and strings, note) and
its lines.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib
import sys
import time
from datetime import datetime
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
BENCHMARKS = SCRIPTS / "benchmarks"
NOT_BENCHMARKS = {"__init__", "report"}


def names() -> list[str]:
    """Every benchmark's name (its module in scripts/benchmarks/)."""
    return sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem not in NOT_BENCHMARKS)


def summary(name: str) -> str:
    """The first line of a benchmark's docstring, read without importing it."""
    doc = ast.get_docstring(ast.parse((BENCHMARKS / f"{name}.py").read_text())) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def list_benchmarks() -> None:
    width = max(len(name) for name in names())
    for name in names():
        print(f"{name:<{width}}  {summary(name)}")


def run_benchmark(name: str, argv: list[str]) -> Path:
    """Parse `argv` with the benchmark's options, run it, show its report and write its JSON."""
    sys.path.insert(0, str(SCRIPTS))
    from benchmarks.report import Report

    module = importlib.import_module(f"benchmarks.{name}")
    doc = (module.__doc__ or "").strip()
    parser = argparse.ArgumentParser(
        prog=f"bench.py {name}",
        description=doc.split("\n\n")[0],
    )
    module.add_arguments(parser)
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("outputs") / "bench" / f"{name}.json",
        help="where to write the JSON record (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    report = Report(name)
    started = datetime.now().astimezone()
    start = time.perf_counter()
    module.run(args, report)
    seconds = time.perf_counter() - start
    report.show()
    meta = {
        "argv": [name, *argv],
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
    }
    return report.write(args.json, meta)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if argv[0] in ("--list", "-l"):
        list_benchmarks()
        return 0
    name, rest = argv[0], argv[1:]
    if name not in names():
        close = difflib.get_close_matches(
            name.removeprefix("bench_").removesuffix(".py"), names(), n=1
        )
        hint = f" Did you mean '{close[0]}'?" if close else ""
        print(f"unknown benchmark '{name}'.{hint} Use --list.", file=sys.stderr)
        return 2
    path = run_benchmark(name, rest)
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
