"""Wrappers: mobile-env with one agent per UE (RLlib's multi-agent API, without importing Ray),
and one-hot observations."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def agent_id(ue_id: int) -> str:
    """RLlib agent id of a UE (also the name used in per-agent metrics)."""
    return f"ue_{ue_id}"


def ue_id(agent: str) -> int:
    return int(agent.removeprefix("ue_"))


def share_rewards(rewards: np.ndarray, team: float) -> np.ndarray:
    """Each UE's learning reward: `1 - team` of its own plus `team` of the mean over the UEs
    rewarded in this step. The sum over UEs is unchanged, so is the episode return."""
    if not team or rewards.size == 0:
        return rewards
    return (1.0 - team) * rewards + team * rewards.mean()


class UEAgentsEnv(gym.Env):
    """One agent per UE of a mobile-env core built with the multi-agent handler, with the API
    of RLlib's `MultiAgentEnv` (dict observations, rewards and dones per agent, `__all__`).
    Evaluation and rendering use it as it is, without importing Ray; RLlib gets the subclass
    `mobrl.envs.rllib_env.MobileMultiAgentEnv`.

    UEs that are inactive (not yet arrived or departed) do not act. A UE that leaves, or every
    UE when the episode ends, gets a final zero observation and is marked truncated, as RLlib
    needs a last observation to bootstrap from.
    """

    def __init__(self, core: Any, team_reward: float = 0.0):
        super().__init__()
        self.core = core
        #: share of each UE's reward taken from the mean over rewarded UEs (env.team_reward)
        self.team_reward = team_reward
        self._agent_of = {u: agent_id(u) for u in core.users}
        self._ue_of = {a: u for u, a in self._agent_of.items()}
        self.possible_agents = [self._agent_of[u] for u in sorted(core.users)]
        self._rank = {a: i for i, a in enumerate(self.possible_agents)}
        self.agents = list(self.possible_agents)
        self.observation_spaces = {agent_id(u): s for u, s in core.observation_space.spaces.items()}
        self.action_spaces = {agent_id(u): s for u, s in core.action_space.spaces.items()}
        self.max_episode_steps = core.EP_MAX_TIME
        self.render_mode = core.render_mode
        self._acting: set[str] = set()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.core.reset(seed=seed, options=options)
        out = {agent_id(u): o for u, o in obs.items()}
        self._acting = set(out)
        self.agents = sorted(out)
        return out, {}

    def step(self, action_dict: dict[str, int]):
        ue_of, agent_of = self._ue_of, self._agent_of
        actions = {ue_of[a] if a in ue_of else ue_id(a): int(act) for a, act in action_dict.items()}
        obs, rewards, terminated, truncated, info = self.core.step(actions)
        out_obs = {agent_of[u]: o for u, o in obs.items()}
        out_rew = {agent_of[u]: float(r) for u, r in rewards.items()}
        if self.team_reward and out_rew:
            shared = share_rewards(np.array(list(out_rew.values())), self.team_reward)
            out_rew = dict(zip(out_rew, shared.tolist()))
        active = {agent_of[ue.ue_id] for ue in self.core.active}
        done = set(self._acting) if truncated else self._acting - active
        # in the agents' order, not the set's (which differs between processes)
        for a in sorted(self._acting, key=self._rank.__getitem__):
            if a not in out_obs:
                space = self.observation_spaces[a]
                out_obs[a] = np.zeros(space.shape, dtype=space.dtype)
            out_rew.setdefault(a, 0.0)
        # only agents that observe something may appear in the reward/done dicts
        out_rew = {a: r for a, r in out_rew.items() if a in out_obs}
        truncs = {a: a in done for a in out_obs}
        truncs["__all__"] = bool(truncated)
        terms = {a: False for a in out_obs}
        terms["__all__"] = bool(terminated)
        self._acting = set() if truncated else active
        self.agents = sorted(self._acting)
        return out_obs, out_rew, terms, truncs, {"__common__": info}

    def render(self):
        return self.core.render()

    def close(self):
        self.core.close()


class OneHotObservation(gym.ObservationWrapper):
    """Encode a Discrete observation (FrozenLake's cell index) as a one-hot float vector."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        n = int(env.observation_space.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        out = np.zeros(self.observation_space.shape, dtype=np.float32)
        out[int(observation)] = 1.0
        return out


def find_env(env: Any, wanted: Any, env_index: int = 0) -> Any | None:
    """The first env for which `wanted(env)` holds behind whatever RLlib hands a callback
    (vector env, Gymnasium wrappers, mobrl's multi-agent wrapper)."""
    node = env
    envs = getattr(node, "envs", None)
    if envs is not None:
        node = envs[env_index]
    for _ in range(8):
        if wanted(node):
            return node
        node = getattr(node, "core", None) or getattr(node, "env", None)
        if node is None:
            return None
    return None


def find_core(env: Any, env_index: int = 0) -> Any | None:
    """The mobile-env core behind whatever RLlib hands a callback (vector env, wrappers), or
    what stands for one: the measures a simulator behind `mobrl.external` sends of its steps
    (`MetricArrays` with the core's station count and UEs)."""
    from mobile_env.core.base import MComCore

    from mobrl.core.protocols import MetricArrays, implements

    def is_core(node: Any) -> bool:
        return isinstance(node, MComCore) or implements(node, MetricArrays)

    return find_env(env, is_core, env_index)
