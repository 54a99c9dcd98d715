"""Every heuristic baseline against greedy on each layout, paired by episode seed.

Per layout, each rule plays the same held-out episodes (seeds S, S+1, ..., as `mobrl
baselines --seed S` plays them; default S = 0) one after the other in one process, in `env=ma`
with mobile-env's observations (the env of `mobrl baselines scenario=LAYOUT`). Recorded as a
table: mean UE utility − greedy (paired by seed: mean ± 95 % Student-t CI), the
connected fraction of UE-steps and the 5th-percentile UE utility (means over episodes), and
the rule's own time per step (its `act`, the env's step not included; on a shared machine
read them as an order of magnitude). Usage:

    python scripts/bench.py baselines [--layouts small,medium,large,dense_urban,highway]
        [--episodes 50] [--seed 0]
        [--baselines greedy_fill,deepcomp_dynamic,deepcomp_dynamic_eps08,deepcomp_static,...]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from benchmarks.oracle import Timed, env_config
from benchmarks.report import Report
from mobrl.core import metrics as keys
from mobrl.evaluation.baselines import FIELD_RULES

RULES = ",".join([*FIELD_RULES, "full"])


def bench_layout(layout: str, names: list[str], seeds: range) -> list[dict[str, Any]]:
    from mobrl.evaluation.paired import mean_ci
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import run_episode

    cfg = env_config(layout)
    timed = {name: Timed(BASELINES[name]()) for name in ["greedy", *names]}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in timed}
    for seed in seeds:
        for name, policy in timed.items():
            rows[name].append(run_episode(cfg, policy, seed))
    greedy = [r[keys.UTILITY_MEAN] for r in rows["greedy"]]
    out = []
    for name, policy in timed.items():
        utility = [r[keys.UTILITY_MEAN] for r in rows[name]]
        gap, half, _ = mean_ci(np.subtract(utility, greedy))
        out.append(
            {
                "layout": layout,
                "policy": name,
                "utility": float(np.mean(utility)),
                "gap": gap,
                "half": 0.0 if name == "greedy" else half,
                "connected": float(np.mean([r[keys.NET_CONNECTED] for r in rows[name]])),
                "p5": float(np.mean([r[keys.UTILITY_P5] for r in rows[name]])),
                "ms": 1e3 * policy.seconds / max(policy.steps, 1),
            }
        )
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layouts", default="small,medium,large,dense_urban,highway")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baselines", default=RULES, help="rules besides greedy")


def run(args: argparse.Namespace, report: Report) -> None:
    names = [n for n in args.baselines.split(",") if n and n != "greedy"]
    seeds = range(args.seed, args.seed + args.episodes)
    rows = []
    for layout in args.layouts.split(","):
        for r in bench_layout(layout, names, seeds):
            rows.append(
                {
                    "layout": r["layout"],
                    "baseline": r["policy"],
                    "mean UE utility": r["utility"],
                    "− greedy": 0.0 if r["policy"] == "greedy" else r["gap"],
                    "± 95 % CI": r["half"],
                    "connected": r["connected"],
                    "p5 UE utility": r["p5"],
                    "ms / step": r["ms"],
                }
            )
            print(f"{layout} {r['policy']}: − greedy {r['gap']:+.4f}", flush=True)
    report.table(
        f"every baseline against greedy, seeds {seeds.start}-{seeds.stop - 1} paired; "
        "env=ma, env.obs=mobile",
        ["layout", "baseline", "mean UE utility", "− greedy", "± 95 % CI", "connected",
         "p5 UE utility", "ms / step"],
        rows,
        note="− greedy: mean UE utility minus greedy's, paired by seed (± the 95 % Student-t CI)",
        formats={"mean UE utility": "+.3f", "− greedy": "+.4f", "± 95 % CI": ".4f",
                 "connected": ".3f", "p5 UE utility": "+.3f", "ms / step": ".2f"},
    )  # fmt: skip
