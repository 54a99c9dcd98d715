"""The fast engine against stock mobile-env: same episodes, step for step.

Tolerance: values are compared exactly, and where not bit-identical within 1e-9 relative.
mobile-env sums some utilities (per-BS means, neighbourhood sums in the multi-agent reward,
the mean-datarate metric) in the iteration order of Python sets of objects, which follows
memory addresses; the engine sums in id order. Floating-point addition is not associative, so
those sums may differ in the last bits from run to run of mobile-env itself.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor

import gymnasium as gym
import numpy as np
import pytest

from mobrl.evaluation.policies import GreedyPolicy
from mobrl.network.engine import FastEngine, UnsupportedByEngine
from mobrl.scenarios.kinds.mobile import make_mobile_core

SEEDS = 20
REL_TOL = 1e-9


def _assert_same(stock, fast, where: str) -> int:
    """Assert equal structure and values; return how many leaves were not bit-identical."""
    if isinstance(stock, dict):
        assert stock.keys() == fast.keys(), f"{where}: keys {stock.keys()} != {fast.keys()}"
        return sum(_assert_same(stock[k], fast[k], f"{where}[{k!r}]") for k in stock)
    if isinstance(stock, tuple):
        assert isinstance(fast, tuple) and len(stock) == len(fast), where
        return sum(_assert_same(s, f, f"{where}[{i}]") for i, (s, f) in enumerate(zip(stock, fast)))
    a, b = np.asarray(stock), np.asarray(fast)
    assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
    assert (
        a.dtype == b.dtype
        or a.dtype.kind == b.dtype.kind == "f"
        or (a.dtype.kind in "iub" and b.dtype.kind in "iub")
    ), f"{where}: dtype {a.dtype} != {b.dtype}"
    if np.array_equal(a, b):
        return 0
    np.testing.assert_allclose(b, a, rtol=REL_TOL, atol=1e-12, err_msg=where)
    return 1


def _links(core) -> set[tuple[int, int]]:
    return {(bs.bs_id, ue.ue_id) for bs, ues in core.connections.items() for ue in ues}


def _actions(policy: str, core, obs, rng: np.random.Generator, mode: str):
    if policy == "greedy":  # read from the fast core: its state is asserted equal each step
        greedy = GreedyPolicy()
        if mode == "ma":
            return {u: greedy.ue_action(core, core.users[u]) for u in obs}
        return np.asarray([greedy.ue_action(core, core.users[u]) for u in sorted(core.users)])
    high = core.NUM_STATIONS + 1
    if mode == "ma":
        return {u: int(a) for u, a in zip(obs, rng.integers(0, high, size=len(obs)))}
    return rng.integers(0, high, size=core.NUM_USERS)


def compare_episode(layout: str, mode: str, seed: int, policy: str) -> tuple[int, int]:
    """Run one whole episode on both engines; return (steps, values not bit-identical)."""
    stock = make_mobile_core(layout, mode, "stock", {"seed": seed})
    fast = make_mobile_core(layout, mode, "fast", {"seed": seed})
    rng = np.random.default_rng(seed)
    first_stock, first_fast = stock.reset(), fast.reset()
    inexact = _assert_same(first_stock, first_fast, "reset")
    obs, steps = first_fast[0], 0
    while True:
        action = _actions(policy, fast, obs, rng, mode)
        out_stock, out_fast = stock.step(action), fast.step(action)
        steps += 1
        names = ("obs", "reward", "terminated", "truncated", "info")
        for name, s, f in zip(names, out_stock, out_fast):
            inexact += _assert_same(s, f, f"{layout}-{mode} seed {seed} step {steps} {name}")
        assert _links(stock) == _links(fast), f"connections differ at step {steps}"
        assert [ue.ue_id for ue in stock.active] == [ue.ue_id for ue in fast.active]
        for ue_id, ue in stock.users.items():
            assert (ue.x, ue.y) == (fast.users[ue_id].x, fast.users[ue_id].y)
        obs = out_fast[0]
        if out_stock[2] or out_stock[3]:
            return steps, inexact


def _episodes(args: tuple[str, str, list[int]]) -> list[tuple[int, int]]:
    layout, mode, seeds = args
    return [compare_episode(layout, mode, s, p) for s in seeds for p in ("random", "greedy")]


@pytest.mark.parametrize(
    "layout",
    # stock mobile-env steps medium and large at 20-90 steps/s: minutes for 40 episodes each
    [
        "small",
        pytest.param("medium", marks=pytest.mark.slow),
        pytest.param("large", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("mode", ["ma", "central"])
def test_fast_engine_reproduces_stock_episodes(layout: str, mode: str) -> None:
    workers = max(1, min(os.cpu_count() or 1, 4))
    # large's stock steps are the slowest: half the seeds there (still 20 whole episodes)
    seeds = SEEDS // 2 if layout == "large" else SEEDS
    chunks = [(layout, mode, list(range(seeds))[i::workers]) for i in range(workers)]
    if layout == "small":  # cheap: no process start-up
        results = [r for chunk in chunks for r in _episodes(chunk)]
    else:
        with ProcessPoolExecutor(workers) as pool:
            results = [r for rs in pool.map(_episodes, chunks) for r in rs]
    assert len(results) == 2 * seeds
    assert all(steps == 100 for steps, _ in results)  # whole 100-step episodes


def test_fast_engine_episodes_continue_across_resets() -> None:
    """mobile-env keeps its RNG state across resets (new positions each episode): so does the
    engine, over several episodes of one env object."""
    stock = make_mobile_core("small", "ma", "stock", {"seed": 3})
    fast = make_mobile_core("small", "ma", "fast", {"seed": 3})
    for _ in range(3):
        first_s, first_f = stock.reset()[0], fast.reset()[0]
        _assert_same(first_s, first_f, "reset")
        done = False
        while not done:
            action = {u: 1 for u in first_s}
            out_s, out_f = stock.step(action), fast.step(action)
            _assert_same(out_s[0], out_f[0], "obs")
            _assert_same(out_s[1], out_f[1], "reward")
            first_s, done = out_s[0], out_s[3]


class _LateArrival:
    """UE 0 arrives at t=10 and UE 1 leaves at t=40; the rest stay the whole episode."""

    def __init__(self, ep_time: int, **kwargs):
        self.ep_time = ep_time

    def reset(self) -> None:
        pass

    def arrival(self, ue) -> int:
        return 10 if ue.ue_id == 0 else 0

    def departure(self, ue) -> int:
        return 40 if ue.ue_id == 1 else self.ep_time


def test_arrivals_and_departures_match_stock() -> None:
    from mobile_env.core.arrival import Arrival

    arrival = type("LateArrival", (_LateArrival, Arrival), {})
    config = {"arrival": arrival, "seed": 7}
    stock = make_mobile_core("medium", "ma", "stock", config)
    fast = make_mobile_core("medium", "ma", "fast", config)
    first = stock.reset()
    _assert_same(first, fast.reset(), "reset")
    rng = np.random.default_rng(0)
    obs, done, steps = first[0], False, 0
    while not done:
        action = {u: int(a) for u, a in zip(obs, rng.integers(0, 8, size=len(obs)))}
        out_s, out_f = stock.step(action), fast.step(action)
        for s, f in zip(out_s, out_f):
            _assert_same(s, f, f"step {steps}")
        assert _links(stock) == _links(fast)
        obs, done, steps = out_s[0], out_s[3], steps + 1
    assert steps == 100


def test_gymnasium_ids_mirror_mobile_env() -> None:
    import mobrl  # noqa: F401  (registers the ids)

    for layout in ("small", "medium", "large"):
        for mode in ("ma", "central"):
            env = gym.make(f"mobrl/mobile-{layout}-{mode}-v0", config={"seed": 2})
            stock = gym.make(f"mobile-{layout}-{mode}-v0")
            assert isinstance(env.unwrapped, FastEngine)
            assert env.unwrapped.seed == 2
            assert env.observation_space == stock.observation_space
            assert env.action_space == stock.action_space
    env = gym.make("mobrl/mobile-small-central-v0", render_mode="rgb_array")
    assert env.unwrapped.render_mode == "rgb_array"
    stock = gym.make("mobile-small-central-v0")
    obs_f, _ = env.reset()
    obs_s, _ = stock.reset()
    np.testing.assert_array_equal(obs_f, obs_s)
    action = env.action_space.sample()
    out_f, out_s = env.step(action), stock.step(action)
    np.testing.assert_array_equal(out_f[0], out_s[0])
    assert math.isclose(out_f[1], out_s[1], rel_tol=REL_TOL)


def test_unsupported_models_name_the_fix() -> None:
    from mobile_env.core.schedules import RateFair

    with pytest.raises(UnsupportedByEngine, match="scheduler=RateFair.*engine=stock"):
        make_mobile_core("small", "ma", "fast", {"scheduler": RateFair})


def test_invalid_action_fails_like_mobile_env() -> None:
    fast = make_mobile_core("small", "ma", "fast")
    stock = make_mobile_core("small", "ma", "stock")
    fast.reset(), stock.reset()
    with pytest.raises(KeyError):
        stock.step({0: 9})
    with pytest.raises(KeyError):
        fast.step({0: 9})


def test_dict_views_follow_the_arrays() -> None:
    """Baselines, rendering and users' metrics read mobile-env's dicts: they stay right."""
    fast = make_mobile_core("small", "ma", "fast", {"seed": 1})
    stock = make_mobile_core("small", "ma", "stock", {"seed": 1})
    fast.reset(), stock.reset()
    for _ in range(5):
        action = {u: 1 + u % 3 for u in range(5)}
        fast.step(action), stock.step(action)

    def by_id(d):
        return {
            (
                tuple(getattr(k, "bs_id", None) for k in key)
                if isinstance(key, tuple)
                else key.ue_id
            ): v
            for key, v in d.items()
        }

    for name in ("utilities", "macro"):
        stock_view, fast_view = by_id(getattr(stock, name)), by_id(getattr(fast, name))
        assert stock_view.keys() == fast_view.keys()
        for k in stock_view:
            assert math.isclose(stock_view[k], fast_view[k], rel_tol=REL_TOL)
    rates_s = {(b.bs_id, u.ue_id): r for (b, u), r in stock.datarates.items()}
    rates_f = {(b.bs_id, u.ue_id): r for (b, u), r in fast.datarates.items()}
    assert {k for k, v in rates_s.items() if v} == {k for k, v in rates_f.items() if v}
    for k, v in rates_f.items():
        assert math.isclose(rates_s[k], v, rel_tol=REL_TOL)
    for bs in fast.stations.values():
        for ue in fast.users.values():
            twin = (stock.stations[bs.bs_id], stock.users[ue.ue_id])
            assert fast.check_connectivity(bs, ue) == stock.check_connectivity(*twin)
