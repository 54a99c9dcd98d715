"""Local scoring under a radio model against scoring each link set whole, measured in one run.

On a layout with interference (default `city_interference`: 100 stations, 1,000 UEs,
proportional fair), the episode is played with random station actions (UEs end up with one to
three links) and, at each state, every active UE's every single toggle and its leaving all
links are scored twice: by `mobrl.network.service.column_changes` (each change rescored on the
components of stations and UEs it can move, `mobrl.radio.local`) and as whole link sets (the
radio model's arithmetic on the full (station, UE) arrays, a sample of them: `--whole N`).
Records per state the candidates, the share that switch a station on or off, both times per
candidate, their ratio and the largest difference of the summed utility's change. Usage:

    python scripts/bench.py local [--layout city_interference] [--steps 4] [--whole 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.report import Report


def candidates(state) -> tuple[np.ndarray, np.ndarray]:
    """Every active UE's single toggles (in range or linked) and its leaving all links."""
    ues, cols = [], []
    for ue in np.flatnonzero(state.active):
        for b in np.flatnonzero(state.reach[:, ue] | state.conn[:, ue]):
            col = state.conn[:, ue].copy()
            col[b] = ~col[b] & state.reach[b, ue]
            ues.append(ue)
            cols.append(col)
        ues.append(ue)
        cols.append(np.zeros(state.conn.shape[0], dtype=bool))
    return np.array(ues), np.array(cols)


def random_actions(state, rng: np.random.Generator) -> np.ndarray:
    """Per active UE: keep half the time, else toggle a station it holds or can reach (a UE
    with three links leaves one)."""
    act = np.zeros(state.conn.shape[1], dtype=np.int64)
    for ue in np.flatnonzero(state.active):
        held = np.flatnonzero(state.conn[:, ue]) + 1
        joins = np.flatnonzero(state.reach[:, ue] & ~state.conn[:, ue]) + 1
        if len(held) >= 3:
            act[ue] = rng.choice(held)
        elif rng.random() < 0.5 and len(held) + len(joins):
            act[ue] = rng.choice(np.concatenate([joins, held]))
    return act


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layout", default="city_interference")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--whole", type=int, default=300, help="link sets scored whole per state")


def run(args: argparse.Namespace, report: Report) -> None:
    from mobrl.network.service import column_changes, link_state
    from mobrl.radio.local import keeps_powers
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core(args.layout, "central", "fast", {"seed": 0})
    core.reset()
    rng = np.random.default_rng(3)
    rows = []
    _warm_up(link_state(core))
    for step in range(args.steps):
        state = link_state(core)
        ues, cols = candidates(state)
        start = time.perf_counter()
        total = column_changes(state, state.conn, ues, cols)
        local = (time.perf_counter() - start) / len(ues)
        sub = rng.choice(len(ues), size=min(len(ues), args.whole), replace=False)
        sets = np.repeat(state.conn[None], len(sub), axis=0)
        sets[np.arange(len(sub)), :, ues[sub]] = cols[sub]
        start = time.perf_counter()
        whole = state.utility_sum(sets) - state.utility_sum(state.conn)
        whole_t = (time.perf_counter() - start) / len(sub)
        switch = 1.0 - keeps_powers(state.radio, state.conn, ues, cols).mean()
        rows.append(
            [step, int(state.conn.sum()), len(ues), 100 * float(switch), 1e3 * local,
             1e3 * whole_t, whole_t / local, float(np.abs(whole - total[sub]).max())]
        )  # fmt: skip
        print(f"step {step}: {len(ues)} candidates, local {1e3 * local:.4f} ms, "
              f"whole {1e3 * whole_t:.3f} ms per candidate", flush=True)  # fmt: skip
        core.step(random_actions(state, rng))
    report.table(
        f"{args.layout}: every UE's every single toggle and its leave-all, per state",
        ["step", "links up", "candidates", "switch a station %", "local ms/cand",
         "whole ms/cand", "ratio", "max diff"],
        rows,
        formats={"switch a station %": ".0f", "local ms/cand": ".4f", "whole ms/cand": ".3f",
                 "ratio": "{:.0f}×", "max diff": ".1e"},
    )  # fmt: skip


def _warm_up(state) -> None:
    """Load the compiled parts (numba's cache) before anything is timed: a change that keeps
    the stations' powers and one that switches a station on, from one link up."""
    from mobrl.network.service import column_changes

    b, ue = np.argwhere(state.reach)[0]
    conn = np.zeros_like(state.conn)
    conn[b, ue] = True
    others = np.flatnonzero(state.reach[b])
    idle = np.flatnonzero(state.reach[:, ue] & ~conn[:, ue])
    cols = np.zeros((2, conn.shape[0]), dtype=bool)
    cols[0, b] = True  # another UE joins the station in use
    cols[1, [b, idle[0]] if idle.size else b] = True  # the UE adds an idle station
    column_changes(state, conn, np.array([others[-1], ue]), cols)
