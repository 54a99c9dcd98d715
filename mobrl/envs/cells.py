"""`env=cells`: one agent per station, deciding each step whether it stays active or sleeps,
with RLlib's multi-agent API (dict observations, rewards and dones per agent, `__all__`).

Each step every cell agent gives its next state (an index of the layout's `power.sleep`
states, 0 active), the stations are set to them (`set_cell_states`: a sleeping station is off
the air, a waking one serves once its transition is over), the UEs then link by
`env.ue_policy` (`greedy` by default: each to its strongest station on the air, as the field's
cell rules assume; mobrl.network.association), and the network steps.

A cell's sleep is a request: under `env.guard=coverage` (the default) the network grants it
only if every UE the cell serves or would serve has another station on the air
(`mobrl.network.offload`, requests weighed from the least loaded cell; whether those stations
have the resources is the cells' to learn), and wakes a sleeping cell one of whose UEs has no
station on the air; `env.guard=capacity` also asks that the stations taking its UEs keep
their needs within their resources. The cell rules' states are taken as they are, as in env=ma.

What a cell observes (`CellObservation`) does not depend on the layout's size: its own state
and the UEs it is responsible for, its `env.neighbours` nearest stations in fixed slots, and
the time of day, so one shared policy plays on any layout with the same sleep states. Its
reward is its share of the step's objective (`PowerSteps.cell_objectives`: its power and the
service of the UEs whose strongest station it is), mixed with the network's objective by
`env.team_reward`; the sum over cells is the network's objective times the cell count either
way (docs/energy.md).
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from mobrl.network.association import ASSOCIATIONS


def cell_agent(station: int) -> str:
    """The agent id of station `station` (its index in station order)."""
    return f"cell_{station}"


def cell_index(agent: str) -> int:
    return int(agent.removeprefix("cell_"))


#: per cell: active, sleep depth, waking, load, power share, UEs responsible for (per the
#: layout's mean per cell), their unserved share, the load they would bring, their mean
#: spectral efficiency (bit/s/Hz / 8)
OWN = 9
#: per neighbour slot: present, asleep, waking, load, the load its UEs would bring, its UEs
NEIGHBOUR = 6
#: the time of day (sin, cos), the profile's level at the hour, the energy weight over its
#: default
CONTEXT = 4
#: the load a cell's UEs would bring is read up to this many times its resources
LOAD_CAP = 4.0


def observation_size(neighbours: int) -> int:
    return OWN + NEIGHBOUR * neighbours + CONTEXT


class CellObservation:
    """Every cell's observation row from the engine's arrays, with its `k` nearest stations
    (by distance between sites; ties by station order) in fixed slots."""

    def __init__(self, core: Any, k: int) -> None:
        xy = core.station_positions()
        n_bs = len(xy)
        dist = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
        np.fill_diagonal(dist, np.inf)
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        self.slots = np.full((n_bs, k), -1, dtype=np.int64)
        self.slots[:, : order.shape[1]] = order[:, : min(k, n_bs - 1)]
        self.per_cell = max(len(core.users) / n_bs, 1e-9)

    def rows(self, core: Any, weight: float | None = None) -> np.ndarray:
        """Every cell's row; `weight`: the λ the cells trade energy at (None: the layout's)."""
        from mobrl import energy

        cells = core.power_model()
        weight = cells.weight if weight is None else weight
        v = core.cell_view()
        n_bs = len(v.state)
        mine = np.flatnonzero(v.present & (v.best >= 0))
        at_best = v.best[mine]
        count = np.bincount(at_best, minlength=n_bs).astype(float)
        unserved = np.bincount(at_best, weights=v.rate[mine] <= 0.0, minlength=n_bs)
        cap = v.best_rate[mine]
        need = np.where(
            cap > 0, np.minimum(v.demand[mine] / np.where(cap > 0, cap, 1.0), LOAD_CAP), 0.0
        )
        brings = np.minimum(np.bincount(at_best, weights=need, minlength=n_bs), LOAD_CAP)
        se = np.bincount(at_best, weights=cap / v.bandwidth[at_best], minlength=n_bs)
        served = np.maximum(count, 1.0)
        own = np.stack(
            [
                (v.state == 0).astype(float),
                v.state / max(len(cells.states) - 1, 1),  # the sleep's depth
                (v.waking > 0).astype(float),
                v.load,
                v.power / float(cells.full[0]),
                count / self.per_cell,
                np.where(count > 0, unserved / served, 0.0),
                brings,
                np.where(count > 0, se / served, 0.0) / 8.0,
            ],
            axis=1,
        )
        present = self.slots >= 0
        at = np.maximum(self.slots, 0)
        neighbour = np.stack(
            [
                present.astype(float),
                (v.state[at] > 0) & present,
                (v.waking[at] > 0) & present,
                v.load[at] * present,
                brings[at] * present,
                count[at] / self.per_cell * present,
            ],
            axis=2,
        ).reshape(n_bs, -1)
        angle = 2.0 * math.pi * v.hour / 24.0
        context = np.array([math.sin(angle), math.cos(angle), v.level, weight / energy.WEIGHT])
        out = np.concatenate([own, neighbour, np.broadcast_to(context, (n_bs, CONTEXT))], axis=1)
        return out.astype(np.float32)


class CellsEnv(gym.Env):
    """One agent per station of a fast-engine core whose layout has a `power:` section (the
    env of `env=cells`); evaluation and rendering use it as it is, RLlib gets
    `mobrl.envs.rllib_env.MobileCellsEnv`."""

    def __init__(
        self,
        core: Any,
        team_reward: float = 0.5,
        neighbours: int = 6,
        guard: str = "coverage",
        ue_policy: str = "greedy",
    ):
        super().__init__()
        if getattr(core, "power_model", lambda: None)() is None:
            raise ValueError("env=cells needs a layout with a power: section")
        self.core = core
        core.credit_cells = True
        self.team_reward = float(team_reward)
        self.neighbours = int(neighbours)
        self.guard = guard
        #: the load the stations taking a sleeping cell's UEs may reach (`capacity`: all of
        #: their resources; `coverage`: unlimited)
        self.high = 1.0 if guard == "capacity" else math.inf
        #: how the UEs pick their stations (`env.ue_policy`, mobrl.network.association)
        self.ues = ASSOCIATIONS[ue_policy]()
        self._as_given = False
        n_bs = len(core.stations)
        self.possible_agents = [cell_agent(b) for b in range(n_bs)]
        self.agents = list(self.possible_agents)
        states = len(core.power_model().states)
        size = observation_size(self.neighbours)
        obs_space = gym.spaces.Box(-1.0, np.inf, shape=(size,), dtype=np.float32)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(states) for a in self.possible_agents}
        self.max_episode_steps = core.EP_MAX_TIME
        self.render_mode = core.render_mode
        self._view: CellObservation | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.core.blind = True  # the UEs' own observations are not read
        self.core.reset(seed=seed, options=options)
        self.ues.reset()
        self._view = CellObservation(self.core, self.neighbours)
        self.agents = list(self.possible_agents)
        return self._observe(), {}

    @property
    def cells(self) -> list[str]:
        """The cell agents, in station order."""
        return [cell_agent(b) for b in range(len(self.core.stations))]

    @property
    def weight(self) -> float:
        """The λ the cells trade energy at now (the layout's; the network agent's choice
        under env=hierarchical)."""
        return self.core.power_model().weight

    def _observe(self) -> dict[str, np.ndarray]:
        rows = self._view.rows(self.core, self.weight)
        return dict(zip(self.cells, rows))

    def keep_states(self) -> np.ndarray:
        """Every station's state as it is now, a waking one as active (the actions that
        change nothing)."""
        state, waking = self.core.cell_states()
        return np.where(waking > 0, 0, state)

    def take_as_given(self) -> None:
        """The next step's states are set as they are, without the guard: a cell rule's,
        which carry their own conditions."""
        self._as_given = True

    def granted(self, states: np.ndarray) -> np.ndarray:
        """`states` (every station's next state) as the guard grants them: a station asked
        to leave the air stays active unless each of its UEs has another station on the air
        (`Offload.leave` from the least loaded, with no load limit; `capacity`: up to the
        stations' full resources), a sleeping one wakes if
        one of its UEs has no station on the air."""
        from mobrl.network.offload import Offload

        offload = Offload(self.core)
        out = states.copy()
        for b in offload.by_load():
            if states[b] > 0 and offload.awake[b] and not offload.leave(b, self.high):
                out[b] = 0
        for b in np.flatnonzero(~offload.awake & (states > 0)).tolist():
            if offload.stranded(b):
                out[b] = 0
        return out

    def step(self, action_dict: dict[str, int]):
        terminated, truncated, info = self._advance(action_dict)
        obs = self._observe()
        rewards = dict(zip(self.cells, self._cell_rewards(self.weight).tolist()))
        return (obs, rewards, *_dones(obs, terminated, truncated), {"__common__": info})

    def _advance(self, action_dict: dict[str, int]) -> tuple[bool, bool, dict]:
        """The cells' states set (`action_dict`'s cell agents; the others keep theirs), the
        UEs linked by `env.ue_policy`, one step of the network."""
        core = self.core
        states = self.keep_states()
        for agent, act in action_dict.items():
            if agent.startswith("cell_"):
                states[cell_index(agent)] = int(act)
        if self.guard != "none" and not self._as_given:
            states = self.granted(states)
        self._as_given = False
        core.set_cell_states(states)
        moves = self.ues.moves(core)
        ues = sorted(core.users)
        active = core._active_mask
        actions = {u: int(m) for u, m, on in zip(ues, moves.tolist(), active.tolist()) if on}
        _, _, terminated, truncated, info = core.step(actions)
        return bool(terminated), bool(truncated), info

    def _cell_rewards(self, weight: float) -> np.ndarray:
        """The cells' rewards of the last step with energy weighed at `weight`: each one's
        share of the objective, counted N times, mixed with the network's by `team_reward`."""
        service, power = self.core.cell_parts()
        shares = service - weight * power
        team = float(shares.sum())
        return (1.0 - self.team_reward) * shares * len(shares) + self.team_reward * team

    def render(self):
        return self.core.render()

    def close(self):
        self.core.close()


def _dones(obs: dict[str, Any], terminated: bool, truncated: bool) -> tuple[dict, dict]:
    """RLlib's terminated and truncated dicts for the agents observing `obs`."""
    terms = {a: False for a in obs}
    terms["__all__"] = terminated
    truncs = {a: truncated for a in obs}
    truncs["__all__"] = truncated
    return terms, truncs
