"""The metrics callback's view of a real mobile-env (no Ray started)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from mobrl.core import metrics as keys
from mobrl.envs.callbacks import EpisodeMetricsCallback
from mobrl.envs.factory import make_env
from mobrl.envs.netstats import EpisodeTracker, step_arrays
from mobrl.envs.wrappers import find_core


def _env(mode: str):
    return make_env({"kind": "mobile", "id": "small", "mode": mode, "kwargs": {}})


@pytest.mark.parametrize("mode", ["ma", "central"])
def test_find_core_through_vector_env_and_wrappers(mode: str) -> None:
    env = _env(mode)
    vector = SimpleNamespace(envs=[env])
    core = find_core(vector, 0)
    assert core is not None and core.NUM_USERS == 5
    assert find_core(SimpleNamespace(envs=[make_env(_cartpole())]), 0) is None


def _cartpole() -> dict:
    return {"kind": "gym", "id": "CartPole-v1", "mode": "gym", "kwargs": {}}


class _Logger:
    def __init__(self) -> None:
        self.logged: dict[str, list[float]] = {}

    def log_value(self, key, value, **kwargs) -> None:
        self.logged.setdefault(key, []).append(value)


@pytest.mark.parametrize("mode", ["ma", "central"])
def test_callback_logs_every_metric_for_a_whole_episode(mode: str) -> None:
    env = _env(mode)
    vector = SimpleNamespace(envs=[env])
    callback = EpisodeMetricsCallback()
    episode = SimpleNamespace(custom_data={})
    logger = _Logger()
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    callback.on_episode_start(episode=episode, env=vector, env_index=0)
    done = False
    while not done:
        if mode == "ma":
            action = {agent: int(rng.integers(0, 4)) for agent in obs}
        else:
            action = env.action_space.sample()
        obs, _, term, trunc, _ = env.step(action)
        callback.on_episode_step(episode=episode, env=vector, env_index=0)
        done = (term["__all__"] or trunc["__all__"]) if mode == "ma" else (term or trunc)
    callback.on_episode_end(episode=episode, metrics_logger=logger)
    for tag in (keys.UTILITY_MEAN, keys.UTILITY_P5, keys.JAIN_UTILITY, keys.NET_CONNECTED):
        assert tag in logger.logged and math.isfinite(logger.logged[tag][0])
    for ue in range(5):
        assert -1 <= logger.logged[keys.ue_tag(ue, keys.UE_UTILITY)][0] <= 1
        assert 0 <= logger.logged[keys.ue_tag(ue, keys.UE_CONNECTED)][0] <= 1
    assert 0.2 <= logger.logged[keys.JAIN_UTILITY][0] <= 1.0
    assert episode.custom_data == {}


def test_step_arrays_match_the_core_state() -> None:
    env = _env("ma")
    env.reset(seed=1)
    # connect every UE to base station 1 (action 2) where it is reachable
    env.step({agent: 2 for agent in env.possible_agents})
    core = env.core
    ids = sorted(core.users)
    utility, rate, links, snr_db = step_arrays(core, ids)
    active = {ue.ue_id for ue in core.active}
    assert {ids[i] for i in np.flatnonzero(~np.isnan(utility))} == active
    served = links.any(axis=0)
    assert served.any() and not links[[0, 2]].any()  # only base station 1 serves
    assert (rate[served] > 0).all() and (rate[~served] == 0).all()
    assert np.isfinite(snr_db[links]).all()
    tracker = EpisodeTracker(core.NUM_STATIONS, ids)
    tracker.record(utility, rate, links, snr_db)
    expected = served.sum() / len(active)
    assert tracker.summary()[keys.NET_CONNECTED] == pytest.approx(expected)


def test_snr_from_rates_equals_channel_snr() -> None:
    env = _env("central")
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(30):
        env.step(rng.integers(0, 4, size=5))
        ids = sorted(env.users)
        _, _, links, snr_db = step_arrays(env, ids)
        for bs_id, column in zip(*np.nonzero(links)):
            ue = env.users[ids[column]]
            direct = 10 * math.log10(env.channel.snr(env.stations[bs_id], ue))
            assert snr_db[bs_id, column] == pytest.approx(direct, abs=1e-6)
            checked += 1
    assert checked > 10
