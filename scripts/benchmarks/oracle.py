"""The `oracle` reference against the link-set planner it replaced, measured in one run.

Per layout, every policy plays the same held-out episode seeds (0, 1, ...) one after the
other in one process: mean UE utility − greedy and − plan (paired by seed, mean ± 95 % CI),
connected fraction and 5th-percentile UE utility (means over episodes), and the policy's own
time per step (its `act`, the env's step not included; read them as ratios within one run, the
machine's load moves all of them). Policies:

- `greedy`: mobrl's greedy baseline (the zero of the gaps);
- `plan`: the earlier `oracle`: the step's best link set (exhaustive up to 12 candidate links,
  else a local search from greedy's), walked towards one toggle per UE;
- `oracle`: mobrl's oracle, the best one-toggle-per-UE actions of the step;
- `oracle2` (with `--lookahead`): the two-step look-ahead of `mobrl.evaluation.oracle`.

With `--scale`, also the oracle's time per step on a generated 100-station / 1,000-UE layout
(a few steps of greedy play, the search timed on each state), and its rounds; `--scale-layout
city_interference` times it on a named layout instead (under interference the coupled search,
each candidate rescored where it can move rates; `--scale-steps` states). `--layouts none` plays no episodes. Usage:

    python scripts/bench.py oracle [--layouts small,medium,large,dense_urban,highway]
                                   [--episodes 40] [--obs mobile,topk] [--lookahead] [--scale]
                                   [--scale-layout NAME] [--scale-steps 10]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import Report
from mobrl.core import metrics as keys


def env_config(layout: str, obs: str | None = None) -> dict[str, Any]:
    """The env `mobrl evaluate scenario=LAYOUT [env.obs=OBS]` plays."""
    from mobrl.envs.factory import env_config_from
    from mobrl.training.checks import validate_command_line

    overrides = [f"scenario={layout}"] + ([f"env.obs={obs}"] if obs else [])
    return env_config_from(validate_command_line(overrides))


class Timed:
    """A policy whose `act` time is summed (the env's step is not)."""

    def __init__(self, policy: Any):
        self.policy, self.seconds, self.steps = policy, 0.0, 0
        self.reads_observation = getattr(policy, "reads_observation", True)

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def act(self, observation: Any, env: Any = None) -> Any:
        start = time.perf_counter()
        action = self.policy.act(observation, env)
        self.seconds += time.perf_counter() - start
        self.steps += 1
        return action


def policies(lookahead: bool) -> dict[str, Any]:
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.references import _LinkSetPolicy
    from mobrl.network.service import best_links

    class PlanPolicy(_LinkSetPolicy):
        name = "plan"

        def links(self, state: Any) -> np.ndarray:
            return best_links(state)

    out = {"greedy": BASELINES["greedy"](), "plan": PlanPolicy(), "oracle": BASELINES["oracle"]()}
    if lookahead:
        from mobrl.evaluation.policies import LookaheadOraclePolicy

        out["oracle2"] = LookaheadOraclePolicy()
    return out


def ci95(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    half = 1.96 * a.std(ddof=1) / math.sqrt(len(a)) if len(a) > 1 else float("nan")
    return float(a.mean()), float(half)


def bench_layout(layout: str, obs: str, episodes: int, lookahead: bool) -> list[dict[str, Any]]:
    from mobrl.evaluation.rollout import run_episode

    cfg = env_config(layout, obs)
    timed = {name: Timed(p) for name, p in policies(lookahead).items()}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in timed}
    for seed in range(episodes):
        for name, policy in timed.items():
            rows[name].append(run_episode(cfg, policy, seed))
    greedy = [r[keys.UTILITY_MEAN] for r in rows["greedy"]]
    plan = [r[keys.UTILITY_MEAN] for r in rows["plan"]]
    out = []
    for name, policy in timed.items():
        utility = [r[keys.UTILITY_MEAN] for r in rows[name]]
        gap, half = ci95(list(np.subtract(utility, greedy)))
        vs_plan, vs_half = ci95(list(np.subtract(utility, plan)))
        out.append(
            {
                "layout": layout,
                "obs": obs,
                "policy": name,
                "gap": gap,
                "half": half,
                "vs_plan": vs_plan,
                "vs_half": vs_half,
                "connected": float(np.mean([r[keys.NET_CONNECTED] for r in rows[name]])),
                "p5": float(np.mean([r[keys.UTILITY_P5] for r in rows[name]])),
                "ms": 1e3 * policy.seconds / max(policy.steps, 1),
            }
        )
    return out


def scale_layout(stations: int = 100, ues: int = 1000, seed: int = 0) -> dict[str, Any]:
    """A square of `stations` masts on a jittered grid (~100 m apart, ~87 m range) with
    `ues` pedestrians, in mobrl's layout format."""
    from mobrl.scenarios import validate

    rng = np.random.default_rng(seed)
    side = int(math.ceil(math.sqrt(stations)))
    size = side * 100
    grid = [(50 + 100 * (i % side), 50 + 100 * (i // side)) for i in range(stations)]
    masts = [
        {"x": int(x + rng.integers(-15, 16)), "y": int(y + rng.integers(-15, 16))} for x, y in grid
    ]
    data = {
        "description": "generated scale test",
        "width": size,
        "height": size,
        "episode_length": 100,
        "seed": seed,
        "station_defaults": {"bandwidth": 9.0e6, "frequency": 2500, "tx_power": 30, "height": 50},
        "stations": masts,
        "ues": {
            "count": ues,
            "snr_threshold": 2.0e-8,
            "noise": 1.0e-9,
            "height": 1.5,
            "velocity": 1.5,
        },  # fmt: skip
        "movement": {"model": "random_waypoint"},
        "arrival": {"model": "always"},
    }
    return validate(data, Path("generated.yaml"))


def bench_scale(report: Report, steps: int = 10, layout: str | None = None) -> None:
    from mobrl.evaluation.oracle import StepSearch
    from mobrl.evaluation.policies import GreedyPolicy
    from mobrl.network.service import link_state
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core(layout or scale_layout(), "central", "fast", {"seed": 0})
    core.reset()
    greedy, search = GreedyPolicy(), StepSearch()
    times = []
    for _ in range(steps):
        move = greedy.station_actions(core)
        state = link_state(core)
        start = time.perf_counter()
        acts = search.decide_state(state, move)
        times.append(time.perf_counter() - start)
        core.step(acts)
    links = int(np.count_nonzero(state.reach))
    name = layout or "generated"
    # the coupled search (interference) keeps no counts
    rounds = search.stats["rounds"] / search.stats["runs"] if search.stats.get("runs") else None
    report.table(
        f"oracle's time per step at scale (median of {steps} states)",
        ["layout", "stations", "UEs", "links in range", "median ms / step", "max ms / step",
         "rounds per start"],
        [[name, len(core.stations), len(core.users), links, 1e3 * float(np.median(times)),
          1e3 * max(times), rounds]],
        formats={"median ms / step": ".0f", "max ms / step": ".0f", "rounds per start": ".1f"},
    )  # fmt: skip
    report.line(
        f"{name}, {len(core.stations)} stations / {len(core.users)} UEs ({links} links in "
        "range): oracle "
        f"{1e3 * np.median(times):.0f} ms per step (median of {steps}, max "
        f"{1e3 * max(times):.0f})"
        + (f", {rounds:.1f} rounds per start" if rounds is not None else "")
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layouts", default="small,medium,large,dense_urban,highway")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--obs", default="mobile,topk", help="env.obs values to play")
    parser.add_argument("--lookahead", action="store_true")
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--scale-layout", default=None, help="a layout name (default: generated)")
    parser.add_argument("--scale-steps", type=int, default=10)


def run(args: argparse.Namespace, report: Report) -> None:
    layouts = [] if args.layouts == "none" else args.layouts.split(",")
    if layouts:
        rows = []
        for obs in args.obs.split(","):
            for layout in layouts:
                for r in bench_layout(layout, obs, args.episodes, args.lookahead):
                    rows.append(
                        [r["layout"], r["obs"], r["policy"], r["gap"], r["half"], r["vs_plan"],
                         r["vs_half"], r["connected"], r["p5"], r["ms"]]
                    )  # fmt: skip
                    print(f"{layout} {obs} {r['policy']}: − greedy {r['gap']:+.4f}", flush=True)
        report.table(
            f"seeds 0-{args.episodes - 1}, paired; UE utility − greedy and − plan as mean ± 95 % CI",
            ["layout", "obs", "policy", "UE utility − greedy", "± CI", "− plan", "± CI (plan)",
             "connected", "p5 utility", "ms / step"],
            rows,
            formats={"UE utility − greedy": "+.4f", "± CI": ".4f", "− plan": "+.4f",
                     "± CI (plan)": ".4f", "connected": ".3f", "p5 utility": "+.3f",
                     "ms / step": ".2f"},
        )  # fmt: skip
    if args.scale:
        bench_scale(report, args.scale_steps, args.scale_layout)
