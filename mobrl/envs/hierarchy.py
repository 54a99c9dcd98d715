"""`env=hierarchical`: a network agent above the cell agents of `env=cells`, in RLlib's
hierarchical pattern (one `MultiAgentEnv`; an agent acts when it receives an observation).

The network agent acts every `env.period` steps. It sets the λ at which the cells trade
energy against service for the next period, as a multiple of the layout's
(`WEIGHT_SCALES`): how hard the network saves now is a decision about the whole network and
the hours ahead (its load, the time of day), which no cell sees from its own state and
neighbours, while which cell sleeps is one each cell takes best from what it sees. The
cells observe the λ in force (the last entry of their observation) and learn from their share
of the objective at that λ; the network agent learns from the network's objective at the
layout's λ, summed over the steps since it last acted (and given to it when it next observes,
or at the episode's end), so it is measured on what the layout asks for whatever it asks the
cells.

With `env.cell_policy=zoo:<entry>` the cells are held fixed at a zoo cell policy (played here,
with numpy, on the observations they would get) and the network agent is the only agent:
between its decisions no agent observes, and RLlib steps the env with no actions.

`env.network_reward=difference` (with the cells held fixed) gives the network agent, instead
of the period's objective, its difference from what the same period would have given at the
layout's λ: a copy of the env taken when the network agent acts plays the period alongside
with the cells at 1 × λ, on the same UEs' moves and arrivals (Wolpert and Tumer's difference
reward). What the hour and the load do to the objective cancels, and what is left is what its
decision changed, so it learns from far fewer periods.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from mobrl.envs.cells import CellsEnv, _dones

#: the network agent's agent id
NETWORK = "network"
#: the network agent's choices: the cells' λ for the next period, times the layout's
WEIGHT_SCALES = (0.0, 0.5, 1.0, 2.0, 4.0)
#: its observation: the hour (sin, cos), the profile's level, the UEs present (share of the
#: layout's), the stations' mean load, asleep and waking shares, the share of present UEs
#: unserved, the network's power over its full-load active power, then the scale in force
#: (one-hot)
NETWORK_SIZE = 9 + len(WEIGHT_SCALES)


def network_row(core: Any, scale: int) -> np.ndarray:
    """The network agent's observation with the scale `scale` (an index of `WEIGHT_SCALES`)
    in force."""
    cells = core.power_model()
    v = core.cell_view()
    present = int(np.count_nonzero(v.present))
    unserved = np.count_nonzero(v.rate[v.present] <= 0.0) / present if present else 0.0
    angle = 2.0 * math.pi * v.hour / 24.0
    head = [
        math.sin(angle),
        math.cos(angle),
        v.level,
        present / max(len(v.present), 1),
        float(v.load.mean()),
        float(np.mean(v.state > 0)),
        float(np.mean(v.waking > 0)),
        unserved,
        float(v.power.sum()) / cells.reference(),
    ]
    onehot = np.zeros(len(WEIGHT_SCALES))
    onehot[scale] = 1.0
    return np.concatenate([head, onehot]).astype(np.float32)


class HierarchicalEnv(CellsEnv):
    """The network agent (`NETWORK`, every `period` steps) above one agent per station (every
    step); RLlib gets `mobrl.envs.rllib_env.MobileHierarchicalEnv`."""

    def __init__(
        self,
        core: Any,
        team_reward: float = 0.5,
        neighbours: int = 6,
        period: int = 10,
        guard: str = "coverage",
        ue_policy: str = "greedy",
        cell_policy: str | None = None,
        network_reward: str = "objective",
    ):
        super().__init__(
            core, team_reward=team_reward, neighbours=neighbours, guard=guard, ue_policy=ue_policy
        )
        self.period = int(period)
        #: the layers of the zoo cell policy the cells are held at (None: the cells are agents)
        self.fixed = None
        if cell_policy:
            from mobrl.core import zoo_store

            name = cell_policy.removeprefix(zoo_store.PREFIX)
            self.fixed = zoo_store.load_layers(zoo_store.entries_dir() / f"{name}.npz")
            for agent in self.cells:
                del self.observation_spaces[agent], self.action_spaces[agent]
            self.possible_agents = [NETWORK]
        else:
            self.possible_agents = [NETWORK, *self.cells]
        self.agents = list(self.possible_agents)
        self._cell_obs: dict[str, np.ndarray] = {}
        #: `objective` or `difference` (against a copy at the layout's λ; cells held fixed)
        self.network_reward = network_reward
        self._shadow: HierarchicalEnv | None = None
        self.observation_spaces[NETWORK] = gym.spaces.Box(
            -1.0, np.inf, shape=(NETWORK_SIZE,), dtype=np.float32
        )
        self.action_spaces[NETWORK] = gym.spaces.Discrete(len(WEIGHT_SCALES))
        self._scale = WEIGHT_SCALES.index(1.0)
        self._since = 0
        self._owed = 0.0

    @property
    def weight(self) -> float:
        return WEIGHT_SCALES[self._scale] * self.core.power_model().weight

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._set_scale(WEIGHT_SCALES.index(1.0))  # the cells observe the λ in force
        obs, info = super().reset(seed=seed, options=options)
        self._since, self._owed, self._shadow = 0, 0.0, None
        self.agents = list(self.possible_agents)
        return {NETWORK: network_row(self.core, self._scale), **self._cells_seen(obs)}, info

    def step(self, action_dict: dict[str, int]):
        if NETWORK in action_dict:
            if self.network_reward == "difference":
                self._shadow = self._neutral_copy()
            self._set_scale(int(action_dict[NETWORK]))
        if self.fixed is not None and not any(a.startswith("cell_") for a in action_dict):
            # the cells held fixed act on what they observe (a cell rule gives its own states)
            action_dict = {**action_dict, **self._held_actions()}
        terminated, truncated, info = self._advance(action_dict)
        rewards = {}
        if self.fixed is None:
            rewards = dict(zip(self.cells, self._cell_rewards(self.weight).tolist()))
        obs = self._cells_seen(self._observe())
        self._owed += self.core.step_objective()
        if self._shadow is not None:  # the same step at the layout's λ
            # the class's step: the env's own may be wrapped (mobrl.core.envfailures.guard),
            # and a wrapper copied with the env still calls the original
            HierarchicalEnv.step(self._shadow, {})
            self._owed -= self._shadow.core.step_objective()
        self._since += 1
        if self._since >= self.period or terminated or truncated:
            obs = {NETWORK: network_row(self.core, self._scale), **obs}
            rewards[NETWORK] = self._owed
            self._since, self._owed, self._shadow = 0, 0.0, None
        return (obs, rewards, *_dones(obs, terminated, truncated), {"__common__": info})

    def _held_actions(self) -> dict[str, int]:
        """The held cells' states: their zoo policy's argmax on what they observe."""
        from mobrl.core.zoo_store import actions

        agents = list(self._cell_obs)
        chosen = actions(self.fixed, np.stack([self._cell_obs[a] for a in agents]))
        return {a: int(c) for a, c in zip(agents, chosen)}

    def _neutral_copy(self) -> HierarchicalEnv:
        """A copy of the env as it is now (its UEs' moves and arrivals to come included),
        with the cells at the layout's λ and no reward of its own."""
        import copy

        self._shadow = None  # not copied into the copy
        shadow = copy.deepcopy(self)
        shadow.network_reward = "objective"
        shadow._set_scale(self.neutral_action())
        return shadow

    def _cells_seen(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The cells' observations as the agents get them: none when the cells are held
        fixed (their policy reads them at the next step)."""
        self._cell_obs = obs
        return {} if self.fixed is not None else obs

    def _set_scale(self, scale: int) -> None:
        """The network agent's decision in force, also drawn on rendered frames."""
        self._scale = scale
        self.core.frame_note = f"network agent: λ × {WEIGHT_SCALES[scale]:g}"

    def neutral_action(self) -> int:
        """The network agent's action that leaves the cells at the layout's λ (what a cell
        rule plays for it)."""
        return WEIGHT_SCALES.index(1.0)
