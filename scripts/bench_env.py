"""Steps per second of stock mobile-env vs mobrl's fast engine, measured in one run.

Both engines step the same scenario with the same pre-drawn random actions, in alternating
rounds in one process, so the ratio is not biased by the machine's load at one moment. With
`--train`, also measures RLlib sampling throughput under `mobrl train` (env steps/s of one env
runner): stock mobile-env and mobrl's engine through RLlib's multi-agent runner, and mobrl's
UE-slot sampler (the default for env=ma where it applies). Usage:

    python scripts/bench_env.py [--scenarios small,medium,large] [--modes ma,central]
                                [--seconds 2] [--rounds 3] [--train] [--copies 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


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


def bench_engines(scenarios: list[str], modes: list[str], seconds: float, rounds: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"env steps/s, random actions (median of {rounds} alternating rounds)")
    for col in ("scenario", "mode", "stock", "mobrl", "ratio"):
        table.add_column(col, justify="left" if col in ("scenario", "mode") else "right")
    for scenario in scenarios:
        for mode in modes:
            envs = {e: make(scenario, mode, e) for e in ("stock", "fast")}
            actions = draw_actions(envs["stock"], mode, 100)
            rates: dict[str, list[float]] = {"stock": [], "fast": []}
            for _ in range(rounds):
                for engine, env in envs.items():
                    rates[engine].append(steps_per_second(env, actions, seconds))
            stock, fast = (statistics.median(rates[e]) for e in ("stock", "fast"))
            table.add_row(scenario, mode, f"{stock:.0f}", f"{fast:.0f}", f"{fast / stock:.1f}x")
    Console().print(table)


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


def bench_training(scenarios: list[str], steps: int, copies: int) -> None:
    """RLlib env-runner sampling throughput (env steps/s of one runner), same moment:
    stock mobile-env and mobrl's engine through RLlib's multi-agent runner with one env (as
    before mobrl's samplers), and mobrl's default for env=ma (UE slots of `copies` env copies)."""
    import ray
    from rich.console import Console
    from rich.table import Table

    from mobrl.envs import factory
    from mobrl.training.raysession import configure_ray

    configure_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    factory.register()
    table = Table(title=f"RLlib env-runner sampling, env steps/s ({steps} steps, env=ma)")
    cols = ("scenario", "stock, multi-agent", "mobrl, multi-agent", f"mobrl, UE slots x{copies}")
    for col in (*cols, "vs stock", "vs multi-agent"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    one_env = ["run.resources.num_envs_per_env_runner=1", "env.sampler=multi_agent"]
    try:
        for scenario in scenarios:
            base = [f"scenario={scenario}", "run=smoke"]
            stock = sampling_rate([*base, *one_env, "engine=stock"], steps)
            multi = sampling_rate([*base, *one_env], steps)
            slots = sampling_rate([*base, f"run.resources.num_envs_per_env_runner={copies}"], steps)
            table.add_row(
                scenario,
                f"{stock:.0f}",
                f"{multi:.0f}",
                f"{slots:.0f}",
                f"{slots / stock:.1f}x",
                f"{slots / multi:.1f}x",
            )
    finally:
        ray.shutdown()
    Console().print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="small,medium,large")
    parser.add_argument("--modes", default="ma,central")
    parser.add_argument("--seconds", type=float, default=2.0, help="per engine and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train", action="store_true", help="also RLlib sampling throughput")
    parser.add_argument("--train-scenarios", default="small,medium")
    parser.add_argument("--train-steps", type=int, default=2000)
    parser.add_argument("--copies", type=int, default=8, help="env copies of the UE-slot sampler")
    args = parser.parse_args()
    bench_engines(args.scenarios.split(","), args.modes.split(","), args.seconds, args.rounds)
    if args.train:
        bench_training(args.train_scenarios.split(","), args.train_steps, args.copies)


if __name__ == "__main__":
    main()
