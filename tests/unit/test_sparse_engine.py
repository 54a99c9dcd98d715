"""The fast engine's sparse path (mobrl.network.neighbours) against its dense path: same episodes,
step for step, on the built-in layouts (the sparse path forced on small ones, the dense one on
city-scale ones).

Tolerance: exact, except per-station utility means, which the sparse path sums in UE order and
the dense one pairwise (the rewards and observations built on them may differ in the last
bits): within 1e-9 relative, as the engine against stock mobile-env (tests/unit/test_engine.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.envs.netstats import EpisodeTracker, step_arrays
from mobrl.evaluation.baselines.classic import GreedyPolicy
from mobrl.network import neighbours, pair_topk
from mobrl.scenarios.kinds.mobile import make_mobile_core
from tests.unit.test_engine import _assert_same, _LateArrival


def _make(layout: str, sparse: bool, obs: str = "mobile", mode: str = "ma", **kwargs):
    saved = neighbours.GRID_MIN_PAIRS
    neighbours.GRID_MIN_PAIRS = 0 if sparse else 2**62
    try:
        topk = 3 if obs.startswith("topk") else None
        core = make_mobile_core(
            layout, mode, "fast", kwargs.pop("config", {}), None, obs, topk, **kwargs
        )
    finally:
        neighbours.GRID_MIN_PAIRS = saved
    assert (core._grid is not None) == sparse
    return core


def _compare_state(dense, sparse, where: str) -> None:
    assert np.array_equal(dense._conn, sparse._conn), where
    assert np.array_equal(dense._reach, sparse._reach), where
    _assert_same(dense._rates(), sparse._rates(), f"{where} link rates")  # `datarates`
    for key in ("counts", "bs_util", "util"):
        _assert_same(dense.topk_state()[key], sparse.topk_state()[key], f"{where} {key}")
    _assert_same(vars(dense.link_state()), vars(sparse.link_state()), f"{where} link_state")
    a, b = dense.metric_arrays(), sparse.metric_arrays()
    _assert_same(a[:3], b[:3], f"{where} metrics")
    _assert_same(np.where(a[2], a[3], 0.0), np.where(b[2], b[3], 0.0), f"{where} link SNR")


def _play(layout: str, obs: str, episodes: int, seed: int, steps: int | None = None, **kwargs):
    """Play both paths with greedy's actions (two steps in three) and random ones, through
    the gymnasium API; compare everything each step and the episodes' per-UE metrics."""
    dense, sparse = _make(layout, False, obs, **kwargs), _make(layout, True, obs, **kwargs)
    rng, greedy = np.random.default_rng(seed), GreedyPolicy()
    for episode in range(episodes):
        first = dense.reset(seed=seed + episode)
        _assert_same(first, sparse.reset(seed=seed + episode), "reset")
        trackers = [EpisodeTracker(d.NUM_STATIONS, sorted(d.users)) for d in (dense, sparse)]
        obs_d, t, done = first[0], 0, False
        while not done and (steps is None or t < steps):
            k = getattr(dense.handler, "topk", None)
            if t % 3 < 2:  # greedy: the sparse path's own is the baseline's
                act = greedy.station_actions(dense)
                assert np.array_equal(act, pair_topk.greedy_actions(sparse)), f"greedy {t}"
                if k is not None:
                    assert np.array_equal(act, greedy.station_actions(sparse))
                    slots = greedy.slot_actions(dense, act, k)
                    assert np.array_equal(slots, greedy.slot_actions(sparse, act, k))
                    act = slots
            else:
                act = rng.integers(0, (k or dense.NUM_STATIONS) + 1, size=dense.NUM_USERS)
            if isinstance(obs_d, dict):
                action = {u: int(act[dense.ue_columns()[u]]) for u in obs_d}
            else:  # central: one action per UE
                action = act
            out_d, out_s = dense.step(action), sparse.step(action)
            where = f"{layout} {obs} episode {episode} step {t}"
            for name, d, s in zip(("obs", "reward", "term", "trunc", "info"), out_d, out_s):
                _assert_same(d, s, f"{where} {name}")
            _compare_state(dense, sparse, where)
            for tracker, core in zip(trackers, (dense, sparse)):  # sparse: link pairs
                tracker.record(*step_arrays(core, tracker.ue_ids))
            obs_d, done, t = out_d[0], out_d[3], t + 1
        _assert_same(trackers[0].summary(), trackers[1].summary(), f"{layout} per-UE metrics")
        if steps is None:
            assert t == 100


@pytest.mark.parametrize("layout", ["small", "large"])
@pytest.mark.parametrize("obs", ["mobile", "topk", "topk_gain"])
def test_sparse_path_plays_the_dense_episodes(layout: str, obs: str) -> None:
    _play(layout, obs, episodes=3, seed=0)


@pytest.mark.parametrize("obs", ["mobile", "topk"])
def test_sparse_path_plays_city_episodes(obs: str) -> None:
    _play("city", obs, episodes=2 if obs == "topk" else 1, seed=1)


def test_sparse_path_metro_steps() -> None:
    _play("metro", "topk", episodes=1, seed=2, steps=6)


@pytest.mark.parametrize("reward", ["utility", "marginal"])
def test_sparse_path_learning_rewards(reward: str) -> None:
    _play("medium", "topk", episodes=1, seed=3, reward=reward)


def test_sparse_path_central_mode() -> None:
    _play("small", "extended", episodes=2, seed=4, mode="central")


def test_sparse_path_follows_arrivals_and_departures() -> None:
    from mobile_env.core.arrival import Arrival

    arrival = type("LateArrival", (_LateArrival, Arrival), {})
    _play("medium", "topk", episodes=1, seed=5, config={"arrival": arrival, "seed": 7})


@pytest.mark.parametrize("obs", ["topk", "topk_gain"])
def test_step_arrays_and_observe_all_match(obs: str) -> None:
    """The UE-slot sampler's calls (`step_arrays`, `observe_all`) on city."""
    dense, sparse = _make("city", False, obs), _make("city", True, obs)
    dense.reset(seed=6)
    sparse.reset(seed=6)
    greedy = GreedyPolicy()
    for t in range(30):
        act = greedy.slot_actions(dense, greedy.station_actions(dense), 3)
        _assert_same(dense.step_arrays(act), sparse.step_arrays(act), f"step {t}")
        _assert_same(dense.observe_all(), sparse.observe_all(), f"observe_all {t}")
        assert np.array_equal(dense.snr_matrix(), sparse.snr_matrix())


def test_the_path_is_chosen_by_layout_size() -> None:
    for layout in ("small", "medium", "large"):
        assert make_mobile_core(layout, "ma", "fast")._grid is None
    for layout in ("city",):
        assert make_mobile_core(layout, "ma", "fast", {}, None, "topk", 3)._grid is not None


def test_every_ue_sees_every_station_in_range() -> None:
    """The candidate pairs hold every pair in range and each UE's k strongest stations."""
    core = _make("city", True, "topk")
    core.reset(seed=8)
    core._x[:5], core._y[5:10] = -300.0, 5000.0  # a few off the map
    core._compute_snr()
    snr = core._dense_snr()
    pairs = core._pairs
    cand = np.zeros(snr.shape, dtype=bool)
    cand[pairs.b, pairs.u] = True
    assert not (snr > core._thr)[~cand].any()
    top = np.argsort(-snr, axis=0, kind="stable")[:3]
    assert cand[top, np.arange(snr.shape[1])[None, :]].all()
    _assert_same(snr[pairs.b, pairs.u], pairs.snr, "pair SNRs")


def test_topk_rows_of_an_engine_made_without_slots() -> None:
    """`topk` read from an engine whose grid was made for no slots (env.obs=mobile)."""
    from mobrl.envs.observations import station_arrays, topk_rows

    dense, sparse = _make("city", False), _make("city", True)
    dense.reset(seed=9)
    sparse.reset(seed=9)
    for _ in range(3):
        act = GreedyPolicy().station_actions(dense)
        dense.step_arrays(act)
        sparse.step_arrays(act)
    columns = np.arange(dense.NUM_USERS)
    rows = [topk_rows(station_arrays(core), columns, 3) for core in (dense, sparse)]
    _assert_same(rows[0], rows[1], "topk rows")


def test_a_tracker_reads_pairs_as_it_reads_arrays() -> None:
    """`EpisodeTracker.record` gives the same episode from (BS, UE) arrays and link pairs."""
    core = _make("city", True)
    core.reset(seed=10)
    trackers = [EpisodeTracker(core.NUM_STATIONS, sorted(core.users)) for _ in range(2)]
    rng = np.random.default_rng(0)
    for t in range(40):
        act = pair_topk.greedy_actions(core) if t % 4 else rng.integers(0, 101, 1000)
        core.step_arrays(act)
        trackers[0].record(*core.metric_arrays())
        trackers[1].record(*core.metric_pairs())
    _assert_same(trackers[0].summary(), trackers[1].summary(), "summary")


def test_a_tracker_fed_arrays_and_pairs_in_turn() -> None:
    """Arrays and pairs, even mixed within an episode, give the same sums to the last bit."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        n_bs, n_ue = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        arrays, mixed = (EpisodeTracker(n_bs, range(n_ue)) for _ in range(2))
        for t in range(30):
            util = np.where(rng.random(n_ue) < 0.3, np.nan, rng.uniform(-1, 1, n_ue))
            rate, snr = rng.uniform(0, 1e7, n_ue), rng.normal(0, 20, (n_bs, n_ue))
            links = rng.random((n_bs, n_ue)) < 0.3
            arrays.record(util, rate, links, snr)
            u, b = np.nonzero(links.T)
            args = (links, snr) if t % 7 == 3 else ((b, u), snr[b, u])
            mixed.record(util, rate, *args)
        a, m = arrays.summary(), mixed.summary()
        assert a.keys() == m.keys()
        assert all(a[k] == m[k] or (np.isnan(a[k]) and np.isnan(m[k])) for k in a)


def test_rules_decide_on_in_range_snrs_as_on_the_full_matrix() -> None:
    """On the sparse path the rules get SNRs only where a UE is in range (0 elsewhere, the full
    matrix not computed): every rule's actions equal those it takes on the full SNR matrix,
    step by step on city (each rule copied before each call: A3 keeps counters)."""
    import copy

    from mobrl.evaluation.policies import BASELINES

    core = _make("city", True)
    obs, _ = core.reset(seed=3)
    names = ["greedy", "greedy_fill", "full", "a3", "a3_ttt2", "deepcomp_dynamic",
             "deepcomp_dynamic_eps08", "deepcomp_static", "deepcomp_static_m3"]  # fmt: skip
    rules = {name: BASELINES[name]() for name in names}
    greedy = GreedyPolicy()
    for t in range(6):
        for name, rule in rules.items():
            core._snr_dense = None  # as after a step that read no SNR (env.obs=mobile reads it)
            in_range = copy.deepcopy(rule).station_actions(core)
            assert core.__dict__.get("_snr_dense") is None, f"{name} built the full matrix"
            core._snr_dense = core._dense_snr()
            full = copy.deepcopy(rule).station_actions(core)
            core._snr_dense = None
            assert np.array_equal(in_range, full), (name, t)
            rule.station_actions(core)  # carry the rule's own state on
        act = greedy.station_actions(core) if t % 2 else np.zeros(core.NUM_USERS, dtype=int)
        obs = core.step({u: int(act[core.ue_columns()[u]]) for u in obs})[0]
