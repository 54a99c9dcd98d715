"""Env steps/s of the fast engine under a layout's radio model, each interference mode against
the same layout without interference, measured in one run.

For each layout, one env per `interference` value (`none`, `full_buffer`, `active`; everything
else as the layout says) steps greedy's station actions through `step_arrays` (greedy computed
from the env's own SINRs, as mobrl's `greedy` baseline does) in alternating rounds in one
process, so the ratios compare like with like on a noisy machine. `--obs topk_gain` also
computes every UE's `env.obs=topk_gain` rows each step (what the UE-slot sampler reads; under
interference each slot's gain is a whole link set scored). Usage:

    python scripts/bench.py radio [--scenarios uma19,umi_dense,city_interference]
                                  [--seconds 2] [--rounds 3] [--obs mobile|topk_gain]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

from benchmarks.report import Report

MODES = ("none", "full_buffer", "active")


def make(data: dict, interference: str, obs: str):
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    layout = copy.deepcopy(data)
    layout["radio"]["interference"] = interference
    topk = 3 if obs == "topk_gain" else None
    core = make_mobile_core(layout, "ma", obs=obs, topk=topk)
    core.reset()
    return core


def steps_per_second(core, seconds: float, obs: str) -> float:
    """Greedy steps per second for about `seconds`."""
    from mobrl.network.service import greedy_links, link_state, toward

    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = link_state(core)
        actions = toward(state, greedy_links(state))
        if obs == "topk_gain":
            actions = slot_actions(core, actions)
        _, done = core.step_arrays(actions)
        if obs == "topk_gain":
            core.observe_all()
        steps += 1
        if done:
            core.reset()
    return steps / (time.perf_counter() - start)


def slot_actions(core, actions):
    """Station actions (b + 1) as `env.obs=topk` slot actions (slot + 1; 0 where the station
    is not in the UE's slots)."""
    import numpy as np

    from mobrl.envs.observations import station_arrays, topk_slots

    order = topk_slots(station_arrays(core), 3)
    match = order == (actions - 1)[None, :]
    return np.where((actions > 0) & match.any(axis=0), match.argmax(axis=0) + 1, 0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", default="uma19,umi_dense,city_interference")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--obs", default="mobile", choices=("mobile", "topk_gain"))


def run(args: argparse.Namespace, report: Report) -> None:
    from mobrl import scenarios

    rows = []
    for name in args.scenarios.split(","):
        data = scenarios.load(scenarios.path_of(name))
        cores = {m: make(data, m, args.obs) for m in MODES}
        for core in cores.values():  # warm up: fields, imports, first steps
            steps_per_second(core, 0.2, args.obs)
        rates: dict[str, list[float]] = {m: [] for m in MODES}
        for _ in range(args.rounds):
            for mode, core in cores.items():
                rates[mode].append(steps_per_second(core, args.seconds, args.obs))
        med = {m: statistics.median(v) for m, v in rates.items()}
        # a step's cost with interference over its cost without: time ratio = rate ratio^-1
        rows.append([name, args.obs, *(med[m] for m in MODES), med["none"] / med["active"]])
        print(f"{name}: " + ", ".join(f"{m} {med[m]:,.0f}" for m in MODES) + " steps/s", flush=True)
    columns = ["layout", "obs", *(f"{m} steps/s" for m in MODES), "active / none (time)"]
    report.table(
        f"greedy env steps/s by interference mode (median of {args.rounds} alternating rounds "
        f"of {args.seconds:g} s)",
        columns,
        rows,
        note="active / none: a step's time with interference `active` over its time without",
        formats={**{f"{m} steps/s": ",.0f" for m in MODES}, "active / none (time)": "{:.2f}×"},
    )
