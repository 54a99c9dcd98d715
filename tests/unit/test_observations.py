"""`env.obs=extended`: mobile-env's observation plus per-station range and load, the same on
both engines, and what each added column means."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from, make_env
from mobrl.scenarios.kinds.mobile import make_mobile_core
from mobrl.training.checks import validate_command_line


@pytest.mark.parametrize("mode", ["ma", "central"])
def test_extended_observation_is_the_same_on_both_engines(mode: str) -> None:
    fast = make_mobile_core("small", mode, "fast", {"seed": 3}, obs="extended")
    stock = make_mobile_core("small", mode, "stock", {"seed": 3}, obs="extended")
    assert fast.observation_space == stock.observation_space
    obs_f, _ = fast.reset()
    obs_s, _ = stock.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        if mode == "ma":
            assert obs_f.keys() == obs_s.keys()
            for ue in obs_f:
                np.testing.assert_allclose(obs_f[ue], obs_s[ue], atol=1e-6)
            action = {ue: int(rng.integers(0, fast.NUM_STATIONS + 1)) for ue in obs_f}
        else:
            np.testing.assert_allclose(obs_f, obs_s, atol=1e-6)
            action = rng.integers(0, fast.NUM_STATIONS + 1, size=len(fast.users))
        obs_f, *_ = fast.step(action)
        obs_s, *_ = stock.step(action)


def test_added_columns_are_range_and_load_of_each_station() -> None:
    core = make_mobile_core("medium", "ma", "fast", {"seed": 1}, obs="extended")
    plain = make_mobile_core("medium", "ma", "fast", {"seed": 1})
    n_bs, n_ues = core.NUM_STATIONS, len(core.users)
    obs, _ = core.reset()
    base, _ = plain.reset()
    rng = np.random.default_rng(1)
    for _ in range(30):
        action = {ue: int(rng.integers(0, n_bs + 1)) for ue in obs}
        obs, *_ = core.step(action)
        base, *_ = plain.step(action)
        stations = [core.stations[b] for b in sorted(core.stations)]
        for ue_id, row in obs.items():
            width = base[ue_id].size
            np.testing.assert_array_equal(row[:width], base[ue_id])  # mobile-env's part first
            reach, load = row[width : width + n_bs], row[width + n_bs :]
            ue = core.users[ue_id]
            expected_reach = [float(core.check_connectivity(bs, ue)) for bs in stations]
            served = [len(core.connections.get(bs, ())) / n_ues for bs in stations]
            np.testing.assert_array_equal(reach, expected_reach)
            np.testing.assert_allclose(load, np.array(expected_reach) * served, atol=1e-6)
    space = core.observation_space[min(core.users)]
    assert space.shape == (plain.observation_space[min(plain.users)].shape[0] + 2 * n_bs,)


def test_env_obs_reaches_the_env_and_a_typo_is_a_user_error() -> None:
    env_config = env_config_from(validate_command_line(["scenario=small", "env.obs=extended"]))
    assert env_config["obs"] == "extended"
    env = make_env({**env_config, "sampler": "multi_agent"})
    obs, _ = env.reset()
    assert next(iter(obs.values())).shape == (4 * 3 + 1 + 2 * 3,)  # 3 stations
    with pytest.raises(UserError, match="unknown env.obs 'extnded'. Did you mean 'extended'"):
        validate_command_line(["env.obs=extnded"])


# --- env.obs=topk: k station slots, the same spaces on every layout ----------------------------


def _topk_core(layout: str, engine: str = "fast", k: int = 3, seed: int = 3):
    return make_mobile_core(layout, "ma", engine, {"seed": seed}, obs="topk", topk=k)


@pytest.mark.parametrize("layout", ["small", "medium"])
def test_topk_is_the_same_on_both_engines(layout: str) -> None:
    fast, stock = _topk_core(layout, "fast"), _topk_core(layout, "stock")
    obs_f, _ = fast.reset()
    obs_s, _ = stock.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        assert obs_f.keys() == obs_s.keys()
        for ue in obs_f:
            np.testing.assert_allclose(obs_f[ue], obs_s[ue], atol=1e-6)
        action = {ue: int(rng.integers(0, 4)) for ue in obs_f}
        obs_f, rew_f, *_ = fast.step(action)
        obs_s, rew_s, *_ = stock.step(action)
        assert rew_f == pytest.approx(rew_s)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_topk_spaces_do_not_depend_on_the_layout(k: int) -> None:
    from mobrl.envs.observations import topk_size

    for layout in ("small", "medium", "large", "dense_urban", "highway"):
        core = _topk_core(layout, k=k)
        ue = min(core.users)
        assert core.observation_space[ue].shape == (topk_size(k),) == (5 * k + 2,)
        assert core.action_space[ue].n == k + 1
        obs, _ = core.reset()
        assert all(core.observation_space[ue].contains(o) for o in obs.values())


def test_topk_slots_show_the_links_first_then_the_strongest_and_act_on_them() -> None:
    core = _topk_core("medium", k=3, seed=5)
    obs, _ = core.reset()
    rng = np.random.default_rng(2)
    stations = [core.stations[b] for b in sorted(core.stations)]
    for _ in range(40):
        # before acting: what each UE's slots show, recomputed from mobile-env's own objects
        slots = {}
        for ue_id, row in obs.items():
            ue = core.users[ue_id]
            snr = {bs.bs_id: core.channel.snr(bs, ue) for bs in stations}
            linked = {
                bs.bs_id
                for bs in stations
                if ue in core.connections.get(bs, ()) and core.check_connectivity(bs, ue)
            }
            ranked = sorted(snr, key=lambda b: (b not in linked, -snr[b], b))[:3]
            slots[ue_id] = ranked
            block = row[:15].reshape(3, 5)
            np.testing.assert_array_equal(block[:, 0], [b in linked for b in ranked])
            np.testing.assert_allclose(
                block[:, 1], [snr[b] / max(snr.values()) for b in ranked], rtol=1e-5
            )
            assert row[-1] == pytest.approx(min(len(linked) / 3, 1.0))
        action = {ue: int(rng.integers(0, 4)) for ue in obs}
        linked_before = {
            u: {b.bs_id for b in stations if core.users[u] in core.connections.get(b, ())}
            for u in obs
        }
        reach_before = {
            u: {b.bs_id for b in stations if core.check_connectivity(b, core.users[u])} for u in obs
        }
        obs, *_ = core.step(action)
        toggled = 0
        for ue_id, a in action.items():
            if a == 0:
                continue
            bs = slots[ue_id][a - 1]
            if bs not in reach_before[ue_id]:
                continue  # out of range: the action does nothing, as in mobile-env
            now = core.users[ue_id] in core.connections.get(core.stations[bs], ())
            assert now != (bs in linked_before[ue_id]), (ue_id, a, bs)
            toggled += 1
        if action:
            assert toggled or not any(reach_before.values())


def test_topk_pads_layouts_with_fewer_stations_than_slots() -> None:
    core = _topk_core("small", k=5)  # 3 stations
    obs, _ = core.reset()
    for row in obs.values():
        assert not row[15:25].any()  # slots 4 and 5: all zero
    before = core.connections
    snapshot = {bs: set(ues) for bs, ues in before.items()}
    core.step({ue: 5 for ue in obs})  # toggling an empty slot does nothing
    assert sum(len(v) for v in core.connections.values()) == sum(len(v) for v in snapshot.values())


@pytest.mark.parametrize("layout", ["small", "medium", "large"])
def test_greedy_plays_the_same_episode_on_topk_as_on_mobile_env_actions(layout: str) -> None:
    from mobrl.evaluation.policies import GreedyPolicy
    from mobrl.evaluation.rollout import run_episode

    plain = env_config_from(validate_command_line([f"scenario={layout}"]))
    topk = env_config_from(validate_command_line([f"scenario={layout}", "env.obs=topk"]))
    for seed in (0, 1):
        a = run_episode(plain, GreedyPolicy(), seed)
        b = run_episode(topk, GreedyPolicy(), seed)
        assert a["return"] == pytest.approx(b["return"])


def test_topk_options_are_checked() -> None:
    with pytest.raises(UserError, match="env.obs=topk needs one agent per UE"):
        env_config_from(validate_command_line(["env=central", "env.obs=topk"]))
    with pytest.raises(UserError, match="env.topk=0 is not a positive"):
        env_config_from(validate_command_line(["env.obs=topk", "env.topk=0"]))
    env_config = env_config_from(validate_command_line(["env.obs=topk", "env.topk=4"]))
    assert env_config["topk"] == 4
    env = make_env({**env_config, "sampler": "multi_agent"})
    obs, _ = env.reset()
    assert next(iter(obs.values())).shape == (22,)


# --- env.obs=topk_gain: topk plus each slot's single-toggle gain --------------------------------


@pytest.mark.parametrize("layout", ["small", "medium"])
def test_topk_gain_is_the_same_on_both_engines(layout: str) -> None:
    fast = make_mobile_core(layout, "ma", "fast", {"seed": 4}, obs="topk_gain", topk=3)
    stock = make_mobile_core(layout, "ma", "stock", {"seed": 4}, obs="topk_gain", topk=3)
    assert fast.observation_space == stock.observation_space
    assert fast.action_space == stock.action_space
    obs_f, _ = fast.reset()
    obs_s, _ = stock.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        assert obs_f.keys() == obs_s.keys()
        for ue in obs_f:
            np.testing.assert_allclose(obs_f[ue], obs_s[ue], atol=1e-5)
        action = {ue: int(rng.integers(0, 4)) for ue in obs_f}
        obs_f, rew_f, *_ = fast.step(action)
        obs_s, rew_s, *_ = stock.step(action)
        assert rew_f == pytest.approx(rew_s)


@pytest.mark.parametrize("k", [2, 5])
def test_topk_gain_is_topk_plus_each_slots_toggle_gain(k: int) -> None:
    from mobrl.envs.observations import station_arrays, topk_size, topk_slots, ue_columns
    from mobrl.network.service import link_state, toggle_gains

    core = make_mobile_core("medium", "ma", "fast", {"seed": 2}, obs="topk_gain", topk=k)
    plain = _topk_core("medium", k=k, seed=2)
    ue = min(core.users)
    assert core.observation_space[ue].shape == (topk_size(k) + k,)
    assert core.action_space == plain.action_space
    obs, _ = core.reset()
    base, _ = plain.reset()
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(30):
        state = link_state(core)
        gains = toggle_gains(state, state.conn)
        order = topk_slots(station_arrays(core), k)
        column = ue_columns(core)
        for ue_id, row in obs.items():
            np.testing.assert_array_equal(row[: topk_size(k)], base[ue_id])
            for j, b in enumerate(order[:, column[ue_id]]):
                g = gains[b, column[ue_id]] if b >= 0 else 0.0
                want = g if np.isfinite(g) else 0.0
                assert row[topk_size(k) + j] == pytest.approx(want, abs=1e-5)
                seen += bool(want)
        assert all(core.observation_space[u].contains(o) for u, o in obs.items())
        action = {u: int(rng.integers(0, k + 1)) for u in obs}
        obs, *_ = core.step(action)
        base, *_ = plain.step(action)
    assert seen  # some slots carry a gain


def test_topk_gain_reaches_the_env_and_needs_env_ma() -> None:
    env_config = env_config_from(validate_command_line(["env.obs=topk_gain", "env.topk=2"]))
    assert env_config["obs"] == "topk_gain" and env_config["topk"] == 2
    env = make_env({**env_config, "sampler": "multi_agent"})
    obs, _ = env.reset()
    assert next(iter(obs.values())).shape == (5 * 2 + 2 + 2,)
    with pytest.raises(UserError, match="env.obs=topk_gain needs one agent per UE"):
        env_config_from(validate_command_line(["env=central", "env.obs=topk_gain"]))


# --- env.obs=topk_impact: each slot's gain split into the UE's own change and the others' ------


@pytest.mark.parametrize("layout", ["medium", "uma19"])
def test_topk_impact_splits_each_gain_into_own_and_others(layout: str) -> None:
    from mobrl.envs.observations import station_arrays, topk_size, topk_slots, ue_columns
    from mobrl.network.service import link_state

    k = 3
    impact = make_mobile_core(layout, "ma", "fast", {"seed": 5}, obs="topk_impact", topk=k)
    gain = make_mobile_core(layout, "ma", "fast", {"seed": 5}, obs="topk_gain", topk=k)
    ue = min(impact.users)
    assert impact.observation_space[ue].shape == (topk_size(k) + 2 * k,)
    obs, _ = impact.reset()
    ref, _ = gain.reset()
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(25):
        state = link_state(impact)
        now = state.ue_utilities()
        order = topk_slots(station_arrays(impact), k)
        column = ue_columns(impact)
        for ue_id, row in obs.items():
            head, own, others = row[: topk_size(k)], row[-2 * k : -k], row[-k:]
            np.testing.assert_array_equal(head, ref[ue_id][: topk_size(k)])
            np.testing.assert_allclose(own + others, ref[ue_id][-k:], atol=1e-5)
            u = column[ue_id]
            for j, b in enumerate(order[:, u]):  # the own change, recomputed by hand
                if b < 0 or not state.reach[b, u]:
                    assert own[j] == 0.0 and others[j] == 0.0
                    continue
                toggled = state.conn.copy()
                toggled[b, u] = ~toggled[b, u]
                after = state.ue_utilities(toggled)
                assert own[j] == pytest.approx(after[u] - now[u], abs=1e-5)
                rest = np.nansum(after) - after[u] - (np.nansum(now) - now[u])
                assert others[j] == pytest.approx(rest, abs=1e-5)
                checked += 1
        action = {u: int(rng.integers(0, k + 1)) for u in obs}
        obs, *_ = impact.step(action)
        ref, *_ = gain.step(action)
    assert checked > 50


# --- env.obs=topk_intent: each slot's gain in rounds, given the other UEs' intents -------------


@pytest.mark.parametrize("layout", ["medium", "uma19"])
def test_topk_intent_rounds_count_the_other_ues_intended_toggles(layout: str) -> None:
    from mobrl.envs.observations import (
        INTENT_ROUNDS,
        station_arrays,
        topk_size,
        topk_slots,
        ue_columns,
    )
    from mobrl.evaluation.oracle import step_utility
    from mobrl.network.service import link_state

    k, size = 3, topk_size(3)
    intent = make_mobile_core(layout, "ma", "fast", {"seed": 5}, obs="topk_intent", topk=k)
    gain = make_mobile_core(layout, "ma", "fast", {"seed": 5}, obs="topk_gain", topk=k)
    assert intent.observation_space[min(intent.users)].shape == (size + INTENT_ROUNDS * k,)
    obs, _ = intent.reset()
    ref, _ = gain.reset()
    rng = np.random.default_rng(2)
    checked = moved = 0
    for _ in range(12):
        state = link_state(intent)
        order = topk_slots(station_arrays(intent), k)
        column = ue_columns(intent)
        team = int(state.active.sum())
        rounds = np.zeros((INTENT_ROUNDS, state.conn.shape[1], k))
        for ue_id, row in obs.items():
            np.testing.assert_array_equal(row[: size + k], ref[ue_id])  # round 1: topk_gain
            rounds[:, column[ue_id]] = row[size:].reshape(INTENT_ROUNDS, k)
        for r in range(1, INTENT_ROUNDS):
            # the intents of round r - 1, as mobile-env station actions, recomputed by hand
            intents = np.zeros(state.conn.shape[1], dtype=np.int64)
            for u in np.flatnonzero(state.active):
                best = int(np.argmax(rounds[r - 1, u]))
                if rounds[r - 1, u, best] > 1e-9 and order[best, u] >= 0:
                    intents[u] = order[best, u] + 1
            moved += int((intents > 0).sum())
            for u in rng.choice(np.flatnonzero(state.active), size=6, replace=False):
                others = intents.copy()
                others[u] = 0
                base = step_utility(state, others)
                for j, b in enumerate(order[:, u]):
                    if b < 0 or not state.reach[b, u]:
                        assert rounds[r, u, j] == 0.0
                        continue
                    acts = others.copy()
                    acts[u] = b + 1
                    want = (step_utility(state, acts) - base) * team
                    assert rounds[r, u, j] == pytest.approx(want, abs=2e-5)
                    checked += 1
        action = {u: int(rng.integers(0, k + 1)) for u in obs}
        obs, *_ = intent.step(action)
        ref, *_ = gain.step(action)
    assert checked > 100 and moved > 10
