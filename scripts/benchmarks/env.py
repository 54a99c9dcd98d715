"""Steps per second of stock mobile-env vs mobrl's fast engine, measured in one run.

Both engines step the same scenario with the same pre-drawn random actions, in alternating
rounds in one process, so the ratio is not biased by the machine's load at one moment. With
`--train`, also measures RLlib sampling throughput under `mobrl train` (env steps/s of one env
runner): stock mobile-env and mobrl's engine through RLlib's multi-agent runner, and mobrl's
UE-slot sampler (the default for env=ma where it applies). With `--obs a,b`, instead: the fast
engine's env=ma steps/s with each observation (e.g. `--obs topk,topk_gain`), same rounds. Usage:

    python scripts/bench.py env [--scenarios small,medium,large] [--modes ma,central]
                                [--seconds 2] [--rounds 3] [--train] [--copies 8]
                                [--obs topk,topk_gain]
    python scripts/bench.py env --external [--train-scenarios small,large] [--rounds 3]

With `--external`: RLlib's multi-agent runner sampling each scenario served by
`mobrl.external` from a second process, against the same runner sampling it in process.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from benchmarks.report import Report


def make(scenario: str, mode: str, engine: str):
    """The bare mobile-env core (no RLlib wrapper) of a scenario with the given engine."""
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    return make_mobile_core(scenario, mode, engine, {}, None)


def draw_actions(env, mode: str, count: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, env.NUM_STATIONS + 1, size=(count, env.NUM_USERS))
    if mode == "central":
        return list(raw)
    ids = sorted(env.users)
    return [dict(zip(ids, row.tolist())) for row in raw]


def steps_per_second(env, actions: list, seconds: float) -> float:
    env.reset()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in actions:
            *_, truncated, _ = env.step(action)
            steps += 1
            if truncated:
                env.reset()
    return steps / (time.perf_counter() - start)


def bench_engines(
    report: Report, scenarios: list[str], modes: list[str], seconds: float, rounds: int
) -> None:
    rows = []
    for scenario in scenarios:
        for mode in modes:
            envs = {e: make(scenario, mode, e) for e in ("stock", "fast")}
            actions = draw_actions(envs["stock"], mode, 100)
            rates: dict[str, list[float]] = {"stock": [], "fast": []}
            for _ in range(rounds):
                for engine, env in envs.items():
                    rates[engine].append(steps_per_second(env, actions, seconds))
            stock, fast = (statistics.median(rates[e]) for e in ("stock", "fast"))
            rows.append([scenario, mode, stock, fast, fast / stock])
            print(f"{scenario} {mode}: stock {stock:.0f}, mobrl {fast:.0f} steps/s", flush=True)
    report.table(
        f"env steps/s, random actions (median of {rounds} alternating rounds)",
        ["scenario", "mode", "stock", "mobrl", "ratio"],
        rows,
        formats={"stock": ".0f", "mobrl": ".0f", "ratio": "{:.1f}x"},
    )


def bench_observations(
    report: Report, scenarios: list[str], observations: list[str], seconds: float, rounds: int
):
    """The fast engine's env=ma steps/s with each observation, in alternating rounds; the
    ratio is each to the first (slot actions drawn in 0..3, which every k >= 3 accepts)."""
    from mobrl.scenarios.kinds.mobile import TOPK_OBSERVATIONS, make_mobile_core

    ratios = [f"{o} / {observations[0]}" for o in observations[1:]]
    rows = []
    for scenario in scenarios:
        envs = {
            o: make_mobile_core(
                scenario, "ma", "fast", {}, None, o, 3 if o in TOPK_OBSERVATIONS else None
            )
            for o in observations
        }
        first = envs[observations[0]]
        rng = np.random.default_rng(0)
        raw = rng.integers(0, 4, size=(100, first.NUM_USERS))
        ids = sorted(first.users)
        actions = [dict(zip(ids, row.tolist())) for row in raw]
        rates: dict[str, list[float]] = {o: [] for o in observations}
        for _ in range(rounds):
            for o, env in envs.items():
                rates[o].append(steps_per_second(env, actions, seconds))
        med = [statistics.median(rates[o]) for o in observations]
        rows.append([scenario, *med, *(m / med[0] for m in med[1:])])
        print(
            f"{scenario}: " + ", ".join(f"{o} {m:.0f}" for o, m in zip(observations, med)),
            flush=True,
        )
    report.table(
        f"fast engine env=ma steps/s by env.obs (median of {rounds} rounds)",
        ["scenario", *observations, *ratios],
        rows,
        formats={**{o: ".0f" for o in observations}, **{r: ".2f" for r in ratios}},
    )


def sampling_rate(overrides: list[str], steps: int) -> float:
    """Env steps/s of one local RLlib env runner built from `mobrl train` overrides."""
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.envs.slots import uses_slots
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(["env=ma", *overrides])
    env_config = factory.env_config_from(cfg)
    algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    algo_config.env_runners(num_env_runners=0)
    algo = algo_config.build_algo()
    runner = algo.env_runner
    # slot runners count a slot step as 1/n_ues of an env step
    per_step = factory.num_ues(env_config) if uses_slots(env_config) else 1
    try:
        runner.sample(num_timesteps=200 * per_step, random_actions=False)  # warm-up
        start = time.perf_counter()
        runner.sample(num_timesteps=steps * per_step, random_actions=False)
        return steps / (time.perf_counter() - start)
    finally:
        algo.stop()


def bench_training(report: Report, scenarios: list[str], steps: int, copies: int) -> None:
    """RLlib env-runner sampling throughput (env steps/s of one runner), same moment:
    stock mobile-env and mobrl's engine through RLlib's multi-agent runner with one env (as
    before mobrl's samplers), and mobrl's default for env=ma (UE slots of `copies` env copies)."""
    import ray

    from mobrl.envs import factory
    from mobrl.training.raysession import configure_ray

    configure_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    factory.register()
    cols = ["scenario", "stock, multi-agent", "mobrl, multi-agent", f"mobrl, UE slots x{copies}"]
    rows = []
    one_env = ["run.resources.num_envs_per_env_runner=1", "env.sampler=multi_agent"]
    try:
        for scenario in scenarios:
            base = [f"scenario={scenario}", "run=smoke"]
            stock = sampling_rate([*base, *one_env, "engine=stock"], steps)
            multi = sampling_rate([*base, *one_env], steps)
            slots = sampling_rate([*base, f"run.resources.num_envs_per_env_runner={copies}"], steps)
            rows.append([scenario, stock, multi, slots, slots / stock, slots / multi])
            print(f"{scenario}: UE slots {slots:.0f} env steps/s", flush=True)
    finally:
        ray.shutdown()
    report.table(
        f"RLlib env-runner sampling, env steps/s ({steps} steps, env=ma)",
        [*cols, "vs stock", "vs multi-agent"],
        rows,
        formats={
            **{c: ".0f" for c in cols[1:]},
            "vs stock": "{:.1f}x",
            "vs multi-agent": "{:.1f}x",
        },
    )


def serve_scenario(scenario: str) -> tuple[Any, str]:
    """A `python -m mobrl.external` process serving `scenario` (env=ma), and its address."""
    import json
    import subprocess
    import sys

    kwargs = json.dumps({"scenario": scenario, "mode": "ma"})
    argv = [sys.executable, "-m", "mobrl.external", "mobrl.external:mobile", "--kwargs", kwargs]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = ""
    while " on " not in line:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise RuntimeError(f"the simulator for {scenario} exited")
    return process, line.rsplit(" on ", 1)[1].strip()


def bench_external(
    report: Report, scenarios: list[str], steps: int, rounds: int, copies: int
) -> None:
    """RLlib env-runner sampling through mobrl.external (the simulator in a second process,
    msgpack) against the same runner sampling the env in process, alternating rounds in one
    run; mobrl's default sampler for env=ma (UE slots) beside them for reference."""
    import statistics

    import ray

    from mobrl.envs import factory
    from mobrl.training.raysession import configure_ray

    configure_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    factory.register()
    title = f"RLlib sampling through mobrl.external, env steps/s (median of {rounds} rounds)"
    cols = ["scenario", "in process, multi-agent", "external, multi-agent", "external / in process",
            f"in process, UE slots x{copies}"]  # fmt: skip
    rows = []
    one_env = ["run.resources.num_envs_per_env_runner=1", "run=smoke"]
    try:
        for scenario in scenarios:
            process, address = serve_scenario(scenario)
            try:
                local = [f"scenario={scenario}", "env.sampler=multi_agent", *one_env]
                remote = ["scenario=external", f"scenario.address={address}", *one_env]
                rates: dict[str, list[float]] = {"local": [], "remote": []}
                for _ in range(rounds):
                    rates["local"].append(sampling_rate(local, steps))
                    rates["remote"].append(sampling_rate(remote, steps))
                slots = sampling_rate(
                    [f"scenario={scenario}", "run=smoke",
                     f"run.resources.num_envs_per_env_runner={copies}"], steps,
                )  # fmt: skip
            finally:
                process.kill()
            med = {k: statistics.median(v) for k, v in rates.items()}
            rows.append(
                [scenario, med["local"], med["remote"], med["remote"] / med["local"], slots]
            )
            print(f"{scenario}: in process {med['local']:.0f}, external {med['remote']:.0f} "
                  "env steps/s", flush=True)  # fmt: skip
    finally:
        ray.shutdown()
    report.table(
        title,
        cols,
        rows,
        formats={cols[1]: ".0f", cols[2]: ".0f", cols[3]: ".2f", cols[4]: ".0f"},
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", default="small,medium,large")
    parser.add_argument("--modes", default="ma,central")
    parser.add_argument("--seconds", type=float, default=2.0, help="per engine and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train", action="store_true", help="also RLlib sampling throughput")
    parser.add_argument("--train-scenarios", default="small,medium")
    parser.add_argument("--train-steps", type=int, default=2000)
    parser.add_argument("--copies", type=int, default=8, help="env copies of the UE-slot sampler")
    parser.add_argument("--obs", default=None, help="compare env.obs values on the fast engine")
    parser.add_argument(
        "--external", action="store_true", help="RLlib sampling through mobrl.external instead"
    )


def run(args: argparse.Namespace, report: Report) -> None:
    if args.external:
        scenarios = args.train_scenarios.split(",")
        bench_external(report, scenarios, args.train_steps, args.rounds, args.copies)
        return
    if args.obs:
        obs = args.obs.split(",")
        bench_observations(report, args.scenarios.split(","), obs, args.seconds, args.rounds)
        return
    bench_engines(
        report, args.scenarios.split(","), args.modes.split(","), args.seconds, args.rounds
    )
    if args.train:
        bench_training(report, args.train_scenarios.split(","), args.train_steps, args.copies)
