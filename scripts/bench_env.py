"""Steps per second of stock mobile-env vs mobrl's fast engine, measured in one run.

Both engines step the same scenario with the same pre-drawn random actions, in alternating
rounds in one process, so the ratio is not biased by the machine's load at one moment. With
`--train`, also measures `mobrl train` sampling throughput (env steps/s of one env runner)
with each engine. Usage:

    python scripts/bench_env.py [--scenarios small,medium,large] [--modes ma,central]
                                [--seconds 2] [--rounds 3] [--train]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def make(scenario: str, mode: str, engine: str):
    """The bare mobile-env core (no RLlib wrapper) of a scenario with the given engine."""
    from mobrl.envs.factory import make_mobile_core

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


def bench_training(scenarios: list[str], steps: int) -> None:
    """Env-runner sampling throughput under RLlib, one runner per engine, same moment."""
    import ray
    from rich.console import Console
    from rich.table import Table

    from mobrl.algos import build_algorithm_config
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.train import _configure_ray

    _configure_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    factory.register()
    table = Table(title=f"RLlib env-runner sampling, env steps/s ({steps} steps, env=ma)")
    for col in ("scenario", "stock", "mobrl", "ratio"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    try:
        for scenario in scenarios:
            rates = {}
            for engine in ("stock", "fast"):
                cfg = compose([f"scenario={scenario}", "env=ma", "run=smoke", f"engine={engine}"])
                env_config = factory.env_config_from(cfg)
                algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
                algo_config.env_runners(num_env_runners=0)
                algo = algo_config.build_algo()
                runner = algo.env_runner
                runner.sample(num_timesteps=200, random_actions=False)  # warm-up
                start = time.perf_counter()
                runner.sample(num_timesteps=steps, random_actions=False)
                rates[engine] = steps / (time.perf_counter() - start)
                algo.stop()
            ratio = rates["fast"] / rates["stock"]
            table.add_row(
                scenario, f"{rates['stock']:.0f}", f"{rates['fast']:.0f}", f"{ratio:.1f}x"
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
    args = parser.parse_args()
    bench_engines(args.scenarios.split(","), args.modes.split(","), args.seconds, args.rounds)
    if args.train:
        bench_training(args.train_scenarios.split(","), args.train_steps)


if __name__ == "__main__":
    main()
