"""mobrl's benchmarks, one module each, run by `python scripts/bench.py NAME`.

Each module has a docstring (its first line is what `python scripts/bench.py --list` shows),
`add_arguments(parser)` for its options and `run(args, report)`, which measures and records its
results into the `report.Report` it is given.
"""
