"""What a zoo policy's own steps cost on a layout with interference, and why, measured in one run.

Plays a zoo entry (default `zoo:umi_dense`, UEs deciding in turns) on a layout it is carried
to as `mobrl evaluate --checkpoint zoo:NAME scenario=LAYOUT` carries it (default
`city_interference`: 100 stations, 1,000 UEs), deterministically, and records per step the
wall time of the env's step (the observation's scoring of every candidate move included),
the links up, the UEs holding several links and the largest group of stations they join.
Proportional fair couples every station of such a group (a UE with several links splits its
budget by the stations' prices), so each candidate move touching the group is rescored on
all of its links (`mobrl.radio.local`): the step's cost grows with that group. Then, at the
last state, every UE's every single toggle and its leaving all links are scored as
`scripts/benchmarks/local.py` does, for the time per candidate. `--rule NAME` plays a rule of
`mobrl evaluate --baselines` instead (e.g. `greedy_fill`, which keeps a second link only where
it pays for its interference), every UE deciding at once. Usage:

    python scripts/bench.py policy_steps [--entry umi_dense | --rule greedy_fill]
        [--layout city_interference] [--steps 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.report import Report


def station_groups(conn: np.ndarray) -> tuple[int, int]:
    """UEs with several links and the stations in the largest group they join (stations
    joined through a UE linked to both)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_bs, n_ue = conn.shape
    lb, lu = np.nonzero(conn)
    graph = coo_matrix((np.ones(len(lb)), (lb, n_bs + lu)), shape=(n_bs + n_ue,) * 2)
    _, label = connected_components(graph, directed=False)
    return int((conn.sum(axis=0) > 1).sum()), int(np.bincount(label[:n_bs]).max())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--entry", default="umi_dense")
    parser.add_argument("--rule", help="a rule to play instead of the entry")
    parser.add_argument("--layout", default="city_interference")
    parser.add_argument("--steps", type=int, default=8)


def run(args: argparse.Namespace, report: Report) -> None:
    from benchmarks.local import candidates
    from mobrl.network.service import column_changes, link_state

    rows: list = []
    if args.rule:
        core, played = _play_rule(args, rows), f"the rule {args.rule}"
    else:
        core, played = _play_entry(args, rows), f"zoo:{args.entry}"
    state = link_state(core)
    ues, cols = candidates(state)
    start = time.perf_counter()
    column_changes(state, state.conn, ues, cols)
    per = (time.perf_counter() - start) / len(ues)
    report.table(
        f"{played} on {args.layout}, seed 0: each step",
        ["step", "env step s", "links up", "UEs with several links", "largest station group"],
        rows,
        formats={"env step s": ".2f"},
    )
    report.line(f"{played} on {args.layout}, seed 0, last state: {len(ues)} candidates scored, "
                f"{1e3 * per:.3f} ms per candidate")  # fmt: skip


def _row(core, spent: float, rows: list) -> None:
    from mobrl.network.service import link_state

    conn = link_state(core).conn
    multi, group = station_groups(conn)
    rows.append([int(core.time), spent, int(conn.sum()), multi, group])
    print(f"step {int(core.time)}: {spent:.2f} s", flush=True)


def _play_entry(args, rows: list):
    """The zoo entry carried to the layout, deterministic; the core at the end."""
    from mobrl.envs.wrappers import find_core
    from mobrl.evaluation.matrix import transfer_env
    from mobrl.evaluation.rollout import episode_env
    from mobrl.evaluation.zoo import ZooPolicy

    policy = ZooPolicy.load(f"zoo:{args.entry}")
    env = episode_env(transfer_env(policy.env_config, args.layout), 0)
    core = find_core(env)
    obs, _ = env.reset(seed=0)
    started, at = time.perf_counter(), core.time
    while core.time < args.steps:
        obs, _, term, trunc, _ = env.step(policy.act(obs) if obs else {})
        if core.time != at:
            _row(core, time.perf_counter() - started, rows)
            started, at = time.perf_counter(), core.time
        if term["__all__"] or trunc["__all__"]:
            break
    env.close()
    return core


def _play_rule(args, rows: list):
    """The rule's station actions on the layout's core; the core at the end."""
    from mobrl.evaluation.policies import make_baseline
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core(args.layout, "central", "fast", {"seed": 0})
    core.reset()
    rule = make_baseline(args.rule)
    rule.reset(0)
    for _ in range(args.steps):
        started = time.perf_counter()
        core.step(rule.station_actions(core))
        _row(core, time.perf_counter() - started, rows)
    return core
