"""mobile-env layouts as PettingZoo `ParallelEnv`s: one agent per UE, on mobrl's fast engine,
for the multi-agent libraries that speak PettingZoo (BenchMARL, TorchRL, SuperSuit, ...).

A UE that arrives during an episode (e.g. on `dense_urban`) joins `agents` in the step it
arrives, with its first observation and a zero reward; a UE that leaves is truncated with a
last zero observation and leaves `agents`; at the episode's end every UE left is truncated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pettingzoo import ParallelEnv

from mobrl.envs.wrappers import UEAgentsEnv


class MobileParallelEnv(ParallelEnv):
    metadata = {"name": "mobrl_mobile_v0", "render_modes": ["rgb_array"]}

    def __init__(self, make: Callable[[int | None], UEAgentsEnv]) -> None:
        """`make(seed)`: the UE-agent env whose movement and arrivals that seed fixes (None:
        the layout's own seed)."""
        self.make = make
        self.env = env = make(None)
        self.possible_agents = list(env.possible_agents)
        self.observation_spaces = dict(env.observation_spaces)
        self.action_spaces = dict(env.action_spaces)
        self.render_mode = env.render_mode
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> Any:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode. `seed` fixes the UEs' movement and arrivals (mobile-env draws
        them from its config's seed, which `reset(seed=...)` does not change, so a seeded reset
        builds the env anew with it); later unseeded resets continue its random stream.
        mobile-env takes no reset options: they are ignored."""
        if seed is not None:
            self.env.close()
            self.env = self.make(int(seed))
        obs, _ = self.env.reset()
        self.agents = list(self.env.agents)
        return obs, {agent: {} for agent in obs}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        live = set(self.agents)
        obs, rewards, terms, truncs, info = self.env.step(
            {a: int(act) for a, act in actions.items() if a in live}
        )
        keys = live | set(obs)  # the UEs that acted, and those that just arrived
        common = info.get("__common__", {})
        out = (
            {a: obs[a] for a in keys},
            {a: float(rewards.get(a, 0.0)) for a in keys},
            {a: bool(terms.get(a, False)) or bool(terms["__all__"]) for a in keys},
            {a: bool(truncs.get(a, False)) or bool(truncs["__all__"]) for a in keys},
            {a: dict(common) for a in keys},
        )
        finished = {a for a in keys if out[2][a] or out[3][a]}
        self.agents = sorted(keys - finished, key=self.possible_agents.index)
        return out

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
