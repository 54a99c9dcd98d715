"""The multi-agent wrapper and the metrics when UEs arrive and depart during an episode."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from mobile_env.core.arrival import Arrival

from mobrl.core import metrics as keys
from mobrl.envs.callbacks import EpisodeMetricsCallback
from mobrl.envs.factory import make_env


class LateAndEarly(Arrival):
    """UE 0 arrives at t=10, UE 1 leaves at t=40, every other UE stays the whole episode."""

    def arrival(self, ue):
        return 10 if ue.ue_id == 0 else 0

    def departure(self, ue):
        return 40 if ue.ue_id == 1 else self.ep_time


class _Logger:
    def __init__(self) -> None:
        self.logged: dict[str, float] = {}

    def log_value(self, key, value, **kwargs) -> None:
        self.logged[key] = value


def test_arrivals_and_departures() -> None:
    env = make_env(
        {"kind": "mobile", "id": "small", "mode": "ma", "kwargs": {"arrival": LateAndEarly}}
    )
    callback, episode, logger = EpisodeMetricsCallback(), SimpleNamespace(custom_data={}), _Logger()
    vector = SimpleNamespace(envs=[env])
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    callback.on_episode_start(episode=episode, env=vector, env_index=0)
    assert "ue_0" not in obs and "ue_1" in obs
    done_agents: set[str] = set()
    acted = {agent: 0 for agent in env.possible_agents}
    while True:
        live = [agent for agent in obs if agent not in done_agents]
        action = {agent: int(rng.integers(0, 4)) for agent in live}
        for agent in action:
            acted[agent] += 1
        obs, rewards, terms, truncs, _ = env.step(action)
        callback.on_episode_step(episode=episode, env=vector, env_index=0)
        # RLlib's contract: an agent that was done never shows up again
        assert not (set(obs) & done_agents), (set(obs), done_agents)
        assert set(rewards) <= set(obs)
        assert set(truncs) - {"__all__"} == set(obs)
        done_agents |= {a for a, v in truncs.items() if a != "__all__" and v}
        if truncs["__all__"]:
            break
    tracker = episode.custom_data["mobrl_recorder"].tracker
    active_steps = tracker.active_steps()
    callback.on_episode_end(episode=episode, metrics_logger=logger)

    # mobile-env lets a UE act from the step after its arrival time up to its departure time
    assert acted["ue_0"] == 100 - 11
    assert acted["ue_1"] == 41
    assert acted["ue_2"] == 100
    assert done_agents == set(env.possible_agents)
    # metrics count each UE only on the steps it acted in
    assert active_steps == {int(a.removeprefix("ue_")): n for a, n in acted.items()}
    for ue in range(5):
        assert 0 <= logger.logged[keys.ue_tag(ue, keys.UE_CONNECTED)] <= 1
    assert episode.custom_data == {}
