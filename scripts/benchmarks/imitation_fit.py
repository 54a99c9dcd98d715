"""What a fit of `run.imitate` costs per minibatch (`mobrl.training.imitation.fit`, 256 rows):
through PPO's RLModule as `ModuleLogits` runs it (the actor encoder and `pi` head) and through
`forward_train` (which also runs the critic's encoder), with torch on one thread and on every
thread (`dagger` fits on one: `one_torch_thread`), each with and without a busy process on
another core (what Ray's processes or the env are on a 2-core machine). Ratios measured in one
run; read the milliseconds as orders of magnitude. Usage:

    python scripts/bench.py imitation_fit [--updates 1000] [--obs 30] [--hidden 64,64]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from typing import Any

import numpy as np

from benchmarks.report import Report


def busy(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        x = (x * 31 + 7) % 1_000_003


def module(obs: int, hidden: list[int]) -> Any:
    import gymnasium as gym
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    return RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-np.inf, np.inf, (obs,), np.float32),
        action_space=gym.spaces.Discrete(4),
        model_config={"fcnet_hiddens": hidden, "vf_share_layers": False},
    ).build()


class ForwardTrain:
    """The module's logits through `forward_train` (critic's encoder included)."""

    def __init__(self, m: Any):
        self.m = m

    def parameters(self) -> Any:
        return self.m.parameters()

    def __call__(self, x: Any) -> Any:
        from ray.rllib.core.columns import Columns

        return self.m.forward_train({Columns.OBS: x})[Columns.ACTION_DIST_INPUTS]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--obs", type=int, default=30)
    parser.add_argument("--hidden", default="64,64")


def run(args: argparse.Namespace, report: Report) -> None:
    import torch

    from mobrl.training.imitation import ModuleLogits, fit

    hidden = [int(h) for h in args.hidden.split(",")]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100_000, args.obs)).astype(np.float32)
    y = rng.integers(0, 4, 100_000)
    m = module(args.obs, hidden)
    every = torch.get_num_threads()
    fit(ModuleLogits(m), x, y, 100)  # warm-up: the first minibatches pay torch's start-up
    rows = []
    for loaded in (False, True):
        stop = mp.Event()
        other = mp.Process(target=busy, args=(stop,)) if loaded else None
        if other is not None:
            other.start()
        try:
            for threads in sorted({1, every}):
                torch.set_num_threads(threads)
                for name, net in (("actor (ModuleLogits)", ModuleLogits(m)),
                                  ("forward_train", ForwardTrain(m))):  # fmt: skip
                    start = time.perf_counter()
                    fit(net, x, y, args.updates)
                    ms = (time.perf_counter() - start) / args.updates * 1e3
                    rows.append(["busy" if loaded else "idle", threads, name, ms])
                    print(f"{'busy' if loaded else 'idle'}, {threads} threads, {name}: "
                          f"{ms:.2f} ms", flush=True)  # fmt: skip
        finally:
            if other is not None:
                stop.set()
                other.join()
    torch.set_num_threads(every)
    report.table(
        f"a fit's minibatch (256 rows, {args.updates} updates; obs {args.obs}, hidden {args.hidden})",
        ["other core", "torch threads", "path", "ms per minibatch"],
        rows,
        formats={"ms per minibatch": ".2f"},
    )
