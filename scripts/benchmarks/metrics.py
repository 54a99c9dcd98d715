"""Sampling throughput of an RLlib env runner with mobrl's per-UE metrics callback on vs off.

One env runner samples in alternating rounds with the callback attached and detached (same
process, env, module and moment), so the ratio is not biased by two different runners; a
stopwatch around the callback's hooks gives its share of sampling time directly. Usage:

    python scripts/bench.py metrics [--scenario small] [--mode ma] [--steps 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.report import Report


class _Clock:
    seconds = 0.0


def _timed_callback_class():
    """mobrl's callback with a stopwatch around each hook (to report its share of sampling)."""
    from mobrl.envs.callbacks import EpisodeMetricsCallback

    class Timed(EpisodeMetricsCallback):
        pass

    for hook in ("on_episode_start", "on_episode_step", "on_episode_end"):
        original = getattr(EpisodeMetricsCallback, hook)

        def timed(self, *args, _original=original, **kwargs):
            start = time.perf_counter()
            try:
                return _original(self, *args, **kwargs)
            finally:
                _Clock.seconds += time.perf_counter() - start

        setattr(Timed, hook, timed)
    return Timed


def make_runner(scenario: str, mode: str, metrics_on: bool):
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(
        [
            f"scenario={scenario}",
            f"env={mode}",
            "run.resources.num_env_runners=0",
            f"run.ue_metrics={str(metrics_on).lower()}",
        ]
    )
    env_config = factory.env_config_from(cfg)
    factory.register()
    algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    if metrics_on:
        algo_config.callbacks(_timed_callback_class())
    if factory.is_multi_agent(env_config):
        from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner as Runner
    else:
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner as Runner
    return Runner(config=algo_config)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--mode", default="ma")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=8)


def run(args: argparse.Namespace, report: Report) -> None:
    runner = make_runner(args.scenario, args.mode, True)
    attached = list(runner._callbacks)
    rates: dict[str, list[float]] = {"off": [], "on": []}
    on_seconds = 0.0
    runner.sample(num_timesteps=200, random_actions=False)  # warm-up: module, connectors
    _Clock.seconds = 0.0
    for i in range(args.rounds):
        order = ["off", "on"] if i % 2 == 0 else ["on", "off"]  # ABBA: cancel drift
        for name in order:
            runner._callbacks = attached if name == "on" else []
            start = time.perf_counter()
            runner.sample(num_timesteps=args.steps, random_actions=False)
            elapsed = time.perf_counter() - start
            rates[name].append(args.steps / elapsed)
            if name == "on":
                on_seconds += elapsed
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    share = _Clock.seconds / on_seconds
    report.table(
        f"scenario={args.scenario} env={args.mode}, {args.rounds} rounds of {args.steps} steps",
        ["metrics", "env steps/s (median)"],
        [["off", off], ["on", on]],
        formats={"env steps/s (median)": ".1f"},
    )
    report.line(f"on/off throughput ratio: {on / off:.3f} (slowdown {100 * (1 - on / off):.1f} %)")
    report.line(f"time inside the metrics callback: {100 * share:.1f} % of sampling (stopwatch)")
