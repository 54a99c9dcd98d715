"""Every heuristic baseline against greedy on each layout, paired by episode seed.

Per layout, each rule plays the same held-out episodes (seeds S, S+1, ..., as `mobrl
baselines --seed S` plays them; default S = 0) one after the other in one process, in `env=ma`
with mobile-env's observations (the env of `mobrl baselines scenario=LAYOUT`). Printed as a
Markdown table: mean UE utility − greedy (paired by seed: mean ± 95 % Student-t CI), the
connected fraction of UE-steps and the 5th-percentile UE utility (means over episodes), and
the rule's own time per step (its `act`, the env's step not included; on a shared machine
read them as an order of magnitude). Usage:

    python scripts/bench_baselines.py [--layouts small,medium,large,dense_urban,highway]
        [--episodes 50] [--seed 0]
        [--baselines greedy_fill,deepcomp_dynamic,deepcomp_dynamic_eps08,deepcomp_static,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.evaluation.baselines import FIELD_RULES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_oracle import Timed, env_config  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layouts", default="small,medium,large,dense_urban,highway")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baselines", default=RULES, help="rules besides greedy")
    args = parser.parse_args()
    names = [n for n in args.baselines.split(",") if n and n != "greedy"]
    seeds = range(args.seed, args.seed + args.episodes)
    print(f"seeds {seeds.start}-{seeds.stop - 1}, paired; env=ma, env.obs=mobile\n")
    print(
        "| layout | baseline | mean UE utility | − greedy (± 95 % CI) | connected | "
        "p5 UE utility | ms / step |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for layout in args.layouts.split(","):
        for r in bench_layout(layout, names, seeds):
            gap = "0" if r["policy"] == "greedy" else f"{r['gap']:+.4f} ± {r['half']:.4f}"
            print(
                f"| {r['layout']} | `{r['policy']}` | {r['utility']:+.3f} | {gap} | "
                f"{r['connected']:.3f} | {r['p5']:+.3f} | {r['ms']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
