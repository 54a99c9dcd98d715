"""Service arithmetic (mobrl.network.service): rewards, the oracle's link sets and `capped`,
checked against brute force and against mobile-env's own central reward."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.evaluation.policies import BASELINES, GreedyPolicy
from mobrl.evaluation.rollout import run_episode
from mobrl.network import service
from mobrl.scenarios import load, path_of
from mobrl.scenarios.kinds.mobile import make_mobile_core


def _env_config(layout: str, **extra) -> dict:
    return {
        "scenario": layout,
        "kind": "mobile",
        "id": layout,
        "kwargs": {},
        "mode": "ma",
        "engine": "fast",
        "layout": load(path_of(layout)),
        **extra,
    }


def _states(layout: str, seed: int, steps: int):
    """Link states along an episode of random actions (varied link sets, some shared)."""
    core = make_mobile_core(layout, "ma", "fast", {"seed": seed})
    obs, _ = core.reset()
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield service.link_state(core)
        acts = {u: int(a) for u, a in zip(obs, rng.integers(0, core.NUM_STATIONS + 1, len(obs)))}
        obs, *_ = core.step(acts)


@pytest.mark.parametrize("engine", ["fast", "stock"])
def test_utility_reward_sums_to_n_times_central_reward(engine: str) -> None:
    ma = make_mobile_core("small", "ma", engine, {"seed": 7}, reward="utility")
    central = make_mobile_core("small", "central", engine, {"seed": 7})
    obs, _ = ma.reset()
    central.reset()
    rng = np.random.default_rng(7)
    for _ in range(100):
        acts = {u: int(a) for u, a in zip(obs, rng.integers(0, ma.NUM_STATIONS + 1, len(obs)))}
        obs, rewards, _, done, _ = ma.step(acts)
        _, central_reward, *_ = central.step(np.array([acts.get(u, 0) for u in sorted(ma.users)]))
        assert sum(rewards.values()) == pytest.approx(len(rewards) * central_reward, abs=1e-12)
        if done:
            break


def test_marginal_rewards_are_each_ues_brute_force_contribution() -> None:
    checked = 0
    for state in _states("medium", 3, 40):
        marginal = service.marginal_utilities(state)
        total = state.utility_sum(state.conn)
        for ue in np.flatnonzero(state.active):
            without = state.conn.copy()
            without[:, ue] = False
            expected = total - state.utility_sum(without)
            assert marginal[ue] == pytest.approx(expected, abs=1e-9)
            checked += int(state.conn[:, ue].sum() > 0 and (state.conn.sum(axis=1) > 1).any())
    assert checked > 100  # many UEs that share a station with others


def test_marginal_rewards_agree_across_engines() -> None:
    cores = [
        make_mobile_core("small", "ma", e, {"seed": 2}, reward="marginal")
        for e in ("fast", "stock")
    ]
    obs = [c.reset()[0] for c in cores][0]
    rng = np.random.default_rng(2)
    for _ in range(50):
        acts = {u: int(a) for u, a in zip(obs, rng.integers(0, 4, len(obs)))}
        (obs, fast, *_), (_, stock, *_) = (c.step(acts) for c in cores)
        assert fast.keys() == stock.keys()
        assert np.allclose(list(fast.values()), list(stock.values()), atol=1e-12)


def test_toggle_gains_match_recomputation() -> None:
    for state in _states("medium", 4, 15):
        gains = service.toggle_gains(state, state.conn)
        before = state.utility_sum(state.conn)
        for b, u in np.argwhere(state.reach):
            toggled = state.conn.copy()
            toggled[b, u] = ~toggled[b, u]
            expected = state.utility_sum(toggled) - before
            assert gains[b, u] == pytest.approx(expected, abs=1e-9)
        assert np.isneginf(gains[~state.reach]).all()


@pytest.mark.parametrize("layout", ["small", "medium"])
def test_oracle_is_never_below_greedy_on_any_step(layout: str) -> None:
    """On every step of greedy episodes: the oracle's link set serves at least as well as
    greedy's; on small (exhaustive) no single toggle improves it."""
    core = make_mobile_core(layout, "ma", "fast", {"seed": 11})
    greedy = GreedyPolicy()
    greedy.reset(11)
    obs, _ = core.reset()
    strictly_better = 0
    for _ in range(100):
        state = service.link_state(core)
        best = service.best_links(state)
        mine = state.team_utility(best)
        theirs = state.team_utility(service.greedy_links(state))
        assert mine >= theirs - 1e-12
        strictly_better += mine > theirs + 1e-9
        assert service.toggle_gains(state, best).max() <= 1e-9
        obs, _, _, done, _ = core.step({u: greedy.ue_action(core, core.users[u]) for u in obs})
        if done:
            break
    assert strictly_better > 0  # the reference has room above greedy at all


def test_local_search_finds_the_exhaustive_optimum_on_small() -> None:
    found = total = 0
    for state in _states("small", 5, 60):
        exact = service.best_links(state)
        local = service.best_links(state, local=True)
        a, b = state.team_utility(exact), state.team_utility(local)
        assert b <= a + 1e-12
        found += b >= a - 1e-12
        total += 1
    assert found >= 0.9 * total


def test_capped_keeps_each_stations_strongest_ue() -> None:
    """Two stations, three UEs: UEs 0 and 1 are strongest at station 0 (UE 1 more so), UE 2
    at station 1, which UE 0 also reaches."""
    cap = np.array([[5.0, 9.0, 0.0], [4.0, 0.0, 7.0]])
    state = service.LinkState(
        cap=cap,
        reach=cap > 0,
        conn=np.zeros((2, 3), dtype=bool),
        active=np.ones(3, dtype=bool),
        lower=-20.0,
        upper=20.0,
        coeffs=(10.0, 0.0, 10.0),
    )
    assert service.greedy_links(state).tolist() == [[True, True, False], [False, False, True]]
    assert service.capped_links(state).tolist() == [[False, True, False], [False, False, True]]
    # one toggle per UE towards it: UE 1 joins station 0, UE 2 station 1, UE 0 stays out
    assert service.toward(state, service.capped_links(state)).tolist() == [0, 1, 2]


def test_capped_leaves_at_most_one_ue_per_station_in_episodes() -> None:
    core = make_mobile_core("medium", "ma", "fast", {"seed": 1})
    capped = BASELINES["capped"]()
    capped.reset(1)
    obs, _ = core.reset()
    for _ in range(20):
        obs, *_ = core.step({u: capped.ue_action(core, core.users[u]) for u in obs})
    assert (core.connectivity().sum(axis=1) <= 1).all()


def test_oracle_serves_better_than_greedy_over_episodes() -> None:
    cfg = _env_config("small")
    seeds = range(990000, 990006)
    oracle = [run_episode(cfg, BASELINES["oracle"](), s)["ue/utility/mean"] for s in seeds]
    greedy = [run_episode(cfg, BASELINES["greedy"](), s)["ue/utility/mean"] for s in seeds]
    diffs = np.subtract(oracle, greedy)
    assert (diffs >= -1e-3).all() and diffs.mean() > 0.003


def test_marginal_utilities_from_station_pairs_equal_the_dense_arrays() -> None:
    """City-scale layouts compute `marginal_utilities` from the pairs of UEs sharing a
    station; it gives the dense (BS, UE, UE) computation's numbers, shared links, idle
    stations and inactive UEs included."""
    from mobrl.network.link_utility import _others_dense, _others_pairs
    from mobrl.network.service import LinkState

    rng = np.random.default_rng(7)
    for _ in range(200):
        stations, ues = int(rng.integers(1, 15)), int(rng.integers(1, 40))
        reach = rng.random((stations, ues)) < 0.5
        active = rng.random(ues) < 0.9
        state = LinkState(
            cap=np.where(reach, rng.random((stations, ues)) * 5e7, 0.0),
            reach=reach & active[None],
            conn=reach & active[None] & (rng.random((stations, ues)) < 0.5),
            active=active, lower=-20.0, upper=20.0, coeffs=(10.0, 0.0, 10.0),
        )  # fmt: skip
        counts = state.conn.sum(axis=1)
        rate = state.rates(state.conn)
        util = state.utility(rate)
        dense = _others_dense(state, counts, rate, util)
        pairs = _others_pairs(state, counts, rate, util)
        np.testing.assert_allclose(pairs, dense, rtol=1e-12, atol=1e-12)
