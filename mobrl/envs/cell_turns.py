"""Cells deciding in turns within a step (`env=cells env.decide=in_turns`).

Cells that decide at once cannot see what their neighbours decide in the same step: two
neighbours that each sleep because the other is on leave their UEs to the guard, and which of
them should sleep is a joint decision. Nor can a cell tell from its own summary what its
sleeping would cost: where its UEs would go, what they would get there under interference.
With `env.decide=in_turns` a step is played in turns, as a network would let its cells commit
one neighbourhood after another:

- the cells are split into groups of which no two are each other's neighbours (in each
  other's `env.neighbours` slots), cells taken from the least loaded (the order in which the
  guard weighs requests), each in the first group it fits (`cell_groups`);
- one group acts per env step. Each of its cells observes its observation of the step (as
  under `at_once`, computed once at the step's start) with its neighbours' requests of the
  step so far in their slots' "asleep" entries, then one flag per slot (whether that
  neighbour has decided) and the predicted change of the network's objective over the next
  two steps were it to leave the air, the cells decided before it as they asked and the
  others on the air (`SleepPlan.gain`, the prediction `energy_oracle` searches with, on the
  signed log scale of UE turns); with `env.gain_floor` F > 0 the prediction also charges F
  times the service its UEs would lose against every station on the air, as the reference
  planning with a service floor (`run.imitate.floor`) scores it;
- after the last group the step is played with every cell's request, through the guard as
  at once, and the step's rewards arrive (a cell's reward reaches its next observation, as
  RLlib's multi-agent episodes carry rewards of agents that are not acting).

The gain is what a network's model of itself (a digital twin) answers to a cell's "what would
my sleeping change?"; a cell learns when to trust it and how it weighs against its own view.
The network's dynamics do not change, only what each cell knows when it decides. A policy that
reads no observation (the rules) plays the env at once (`in_turns` off, as for UE turns).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from mobrl.envs.cells import NEIGHBOUR, OWN, CellsEnv, _dones, cell_agent, observation_size

#: a turn's gain g is observed as sign(g) ln(1 + |g| / GAIN_SCALE): a cell's gain is often
#: 1e-4 of the objective, which a tanh network reads as 0 unless scaled
GAIN_SCALE = 1e-4


def turn_width(neighbours: int) -> int:
    """The columns a turn adds to a cell's observation: a flag per slot and the gain."""
    return neighbours + 1


def cell_groups(order: list[int], slots: np.ndarray) -> list[np.ndarray]:
    """The cells in `order` in groups of which no two share a slot either way (`slots`: each
    cell's neighbour slots, -1 empty), each cell in the first group it fits."""
    n = slots.shape[0]
    near = np.zeros((n, n), dtype=bool)
    rows, cols = np.nonzero(slots >= 0)
    near[rows, slots[rows, cols]] = True
    near |= near.T
    groups: list[list[int]] = []
    for b in order:
        for group in groups:
            if not near[b, group].any():
                group.append(b)
                break
        else:
            groups.append([b])
    return [np.array(g, dtype=int) for g in groups]


class CellTurnsEnv(CellsEnv):
    """`CellsEnv` with a step played in turns (see the module): each env step one group of
    cells observes and acts; the network steps after the last group. `mid_step` tells whether
    the last env step only recorded a turn. With `in_turns` off (set before `reset`) it is
    `CellsEnv` itself, observations without the turn's columns."""

    def __init__(self, core: Any, gain_floor: float = 0.0, **settings: Any) -> None:
        super().__init__(core, **settings)
        #: the price the observed gain puts on a UE's lost service (`env.gain_floor`)
        self.gain_floor = float(gain_floor)
        k = self.neighbours
        size = observation_size(k) + turn_width(k)
        low = np.full(size, -1.0, dtype=np.float32)
        low[-1] = -np.inf  # the gain
        space = gym.spaces.Box(low, np.full(size, np.inf, dtype=np.float32), dtype=np.float32)
        self.observation_spaces = {a: space for a in self.possible_agents}
        #: False: every cell decides at once (a policy that reads no observation plays so)
        self.in_turns = True
        #: whether the last `step` recorded a turn without stepping the network
        self.mid_step = False
        #: the step's groups, the one acting now, each cell's request and whether it decided
        self.groups: list[np.ndarray] = []
        self.turn = 0
        self.requests = np.zeros(0, dtype=np.int64)
        self.decided = np.zeros(0, dtype=bool)
        self._rows = np.zeros((0, size), dtype=np.float32)
        self._plan: Any = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        self.mid_step = False
        return (self._begin() if self.in_turns else obs), info

    @property
    def group(self) -> np.ndarray:
        """The stations acting in this turn."""
        return self.groups[self.turn]

    def _begin(self) -> dict[str, np.ndarray]:
        """Start a step's turns: the rows at the step's start, the groups, the first turn."""
        from mobrl.network.offload import Offload
        from mobrl.network.power_predict import SleepPlan

        self._rows = self._view.rows(self.core, self.weight)
        self.groups = cell_groups(Offload(self.core).by_load(), self._view.slots)
        self.turn = 0
        self.requests = self.keep_states()
        self.decided = np.zeros(len(self._rows), dtype=bool)
        sleep = self.core.power_model().deepest_within(1) or 1
        self._plan = SleepPlan(self.core, sleep, floor=self.gain_floor)
        return self._observe_turn()

    def _observe_turn(self) -> dict[str, np.ndarray]:
        group = self.group
        slots = self._view.slots[group]
        at = np.maximum(slots, 0)
        told = self.decided[at] & (slots >= 0)
        rows = self._rows[group].copy()
        asleep = OWN + NEIGHBOUR * np.arange(slots.shape[1]) + 1
        rows[:, asleep] = np.where(told, self.requests[at] > 0, rows[:, asleep])
        on = ~self.decided | (self.requests == 0)
        gains = np.array([self._plan.gain(on, b) for b in group.tolist()])
        scaled = np.sign(gains) * np.log1p(np.abs(gains) / GAIN_SCALE)
        out = np.concatenate([rows, told, scaled[:, None]], axis=1).astype(np.float32)
        return dict(zip((cell_agent(b) for b in group.tolist()), out))

    def step(self, action_dict: dict[str, int]):
        if not self.in_turns:
            return super().step(action_dict)
        for b in self.group.tolist():
            agent = cell_agent(b)
            if agent in action_dict:
                self.requests[b] = int(action_dict[agent])
            self.decided[b] = True
        if self.turn + 1 < len(self.groups):
            self.turn += 1
            self.mid_step = True
            obs = self._observe_turn()
            flags = {a: False for a in obs}
            return obs, {}, {**flags, "__all__": False}, {**flags, "__all__": False}, {}
        self.mid_step = False
        requests = {cell_agent(b): int(s) for b, s in enumerate(self.requests.tolist())}
        terminated, truncated, info = self._advance(requests)
        rewards = dict(zip(self.cells, self._cell_rewards(self.weight).tolist()))
        if terminated or truncated:  # every cell's last observation, in the turn's width
            rows = self._view.rows(self.core, self.weight)
            pad = np.zeros((len(rows), turn_width(self.neighbours)), dtype=np.float32)
            obs = dict(zip(self.cells, np.concatenate([rows, pad], axis=1)))
            return (obs, rewards, *_dones(obs, terminated, truncated), {"__common__": info})
        obs = self._begin()
        return (obs, rewards, *_dones(obs, False, False), {"__common__": info})


def cell_turns_env(env: Any) -> CellTurnsEnv | None:
    """The `CellTurnsEnv` behind `env` (wrappers), or None."""
    from mobrl.envs.wrappers import find_env

    return find_env(env, lambda node: isinstance(node, CellTurnsEnv))
