"""What the energy sections cost and what the energy layouts carry, measured in one run.

Steps per second of each energy layout with its `power:` and `traffic:` sections against the
same layout without them, in alternating rounds in one process (the ratio is the goal: a step
with power and finite traffic costs at most 1.3x one without), UEs playing `greedy` and the
cells a rule (`all_on` by default; `--rule idle_off` for city_energy's 300 steps/s). With
`--loads`, each layout's busy-hour load instead: the median over cells of each cell's mean
load at 22:00 (every UE present, every station on, UEs by greedy), over a few episodes.

    python scripts/bench.py energy [--scenarios uma19_energy,umi_dense_energy,city_energy]
                                   [--rule all_on] [--seconds 3] [--rounds 3] [--loads]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.report import Report
from mobrl import scenarios
from mobrl.evaluation.policies import make_baseline
from mobrl.scenarios.kinds.mobile import make_mobile_core

SECTIONS = ("power", "traffic", "step_seconds")


def core_of(name: str, plain: bool, hour: float | None = None):
    layout = scenarios.load(scenarios.path_of(name))
    if plain:
        for key in SECTIONS:
            layout.pop(key, None)
    elif hour is not None:
        layout["traffic"] = {**layout["traffic"], "hour": hour}
    return make_mobile_core(layout, "ma", engine="fast")


def play(core, rule, seconds: float, seed: int) -> float:
    """Steps per second of `rule` (cell states, then greedy's station actions) for `seconds`."""
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        rule.reset(seed)
        core.reset(seed=seed)
        seed += 1
        done = False
        while not done:
            if core.power_model() is not None and hasattr(rule, "cell_states"):
                states = rule.cell_states(core)
                if states is not None:
                    core.set_cell_states(states)
            _, done = core.step_arrays(rule.station_actions(core))
            steps += 1
    return steps / (time.perf_counter() - start)


def speed(report: Report, names: list[str], rule_name: str, seconds: float, rounds: int) -> None:
    rows = []
    for name in names:
        cores = {plain: core_of(name, plain) for plain in (False, True)}
        rules = {False: make_baseline(rule_name), True: make_baseline("greedy")}
        got: dict[bool, list[float]] = {False: [], True: []}
        for r in range(rounds):
            for plain in (False, True):
                got[plain].append(play(cores[plain], rules[plain], seconds, 100 * r))
        on, off = statistics.median(got[False]), statistics.median(got[True])
        rows.append([name, on, off, off / on])
        print(f"{name}: {on:.0f} steps/s with the sections, {off:.0f} without", flush=True)
    report.table(
        f"steps/s with the energy sections and without ({rule_name}; median of {rounds} "
        "alternating rounds)",
        ["layout", "with sections", "without", "ratio"],
        rows,
        note="ratio: steps/s without the power and traffic sections over steps/s with them",
        formats={"with sections": ".0f", "without": ".0f", "ratio": "{:.2f}x"},
    )


def loads(report: Report, names: list[str], episodes: int = 3) -> None:
    greedy = make_baseline("all_on")
    rows = []
    for name in names:
        core = core_of(name, False, hour=22.0)
        medians = []
        for seed in range(episodes):
            greedy.reset(seed)
            core.reset(seed=seed)
            per_step, done = [], False
            while not done:
                _, done = core.step_arrays(greedy.station_actions(core))
                per_step.append(core.cell_loads())
            medians.append(float(np.median(np.mean(per_step[10:], axis=0))))
        rows.append([name, float(np.mean(medians)), ", ".join(f"{m:.2f}" for m in medians)])
        print(f"{name:18} busy-hour median cell load {np.mean(medians):.2f} "
              f"(episodes: {', '.join(f'{m:.2f}' for m in medians)})", flush=True)  # fmt: skip
    report.table(
        f"busy-hour (22:00) median cell load, mean of {episodes} episodes",
        ["layout", "median cell load", "episodes"],
        rows,
        formats={"median cell load": ".2f"},
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", default="uma19_energy,umi_dense_energy,city_energy")
    parser.add_argument("--rule", default="all_on")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loads", action="store_true")


def run(args: argparse.Namespace, report: Report) -> None:
    names = args.scenarios.split(",")
    if args.loads:
        loads(report, names)
    else:
        speed(report, names, args.rule, args.seconds, args.rounds)
