"""The field's rules for cells that sleep (docs/energy.md), on layouts with a `power:`
section. Each sets every station's state before the step, then UEs link by `greedy` (each to
its strongest station on the air), so a cell rule and the UEs' association compose:

- `all_on`: every station always active (today's network; what any UE policy plays alone).
- `idle_off`: a station that no present UE would link to sleeps, in its deepest state that
  wakes within a step; it wakes as soon as a UE would link to it, i.e. is the strongest
  station of a UE were every station awake.
- `threshold`: O-RAN's cell on/off rule as ns-O-RAN's energy-saving xApp plays it (see
  `ThresholdPolicy`).

`CELL+UE` composes a cell rule with another UE rule (`idle_off+a3`, `threshold+greedy_rsrp`):
`ComposedPolicy`.

Sleep decisions read the engine's arrays (`mobrl.network.power_engine`): the signal of every
station at each UE, asleep or not, the last step's loads and the UEs' demands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.evaluation.baselines.base import Baseline, active_mask
from mobrl.evaluation.baselines.classic import GreedyPolicy


class CellRule(GreedyPolicy):
    """A rule for the stations' states (`cell_states`), with UEs linking by `greedy`."""

    name = "cell_rule"
    #: a sleeping station must be able to wake within this many steps
    wake_within = 1
    #: whether the rule weighs energy against service by the objective's λ (the reference
    #: and `energy_greedy`); then `weight` is the λ it plans with (None: the layout's
    #: `power.weight`; a smaller one makes it more cautious, `run.imitate.weight`)
    weighs = False
    weight: float | None = None
    #: with `weighs`: the price it plans with of a UE's service lost against every station
    #: on (0: none; `mobrl.network.power_predict.StepPredictor`, `run.imitate.floor`)
    floor: float = 0.0

    @classmethod
    def check_plays(cls, env_config: dict[str, Any], flag: str = "--baselines") -> None:
        layout = env_config.get("layout")
        if isinstance(layout, dict) and "power" not in layout:
            raise UserError(
                f"{flag} {cls.name}: layout '{env_config.get('scenario')}' has no power: "
                "section, so its stations cannot sleep. Add one (docs/energy.md), or use a "
                "layout that has it (uma19_energy)."
            )

    def act(self, observation: Any, env: Any = None) -> Any:
        cells = _cells_env(env)
        if cells is not None:  # env=cells: the rule's states are the cell agents' actions
            from mobrl.envs.cells import cell_index

            states = self.cell_states(cells.core)
            if states is None:
                states = cells.keep_states()
            cells.take_as_given()  # a rule's states carry their own conditions
            # every cell's state (under env=hierarchical the cells may be held fixed and
            # observe nothing; the rule's states replace their policy's); the network agent,
            # when it acts, leaves the cells' λ as it is
            out = {a: int(states[cell_index(a)]) for a in cells.cells}
            if "network" in observation:
                out["network"] = cells.neutral_action()
            return out
        set_states(self, env, self.name)
        return super().act(observation, env)  # greedy, on the stations on the air now

    def cell_states(self, core: Any) -> np.ndarray | None:
        """Every station's next state index (None: keep them)."""
        raise NotImplementedError

    def sleep_state(self, core: Any) -> int:
        """The state a station is sent to sleep in: the deepest that wakes within
        `wake_within` steps, else the lightest."""
        return core.power_model().deepest_within(self.wake_within) or 1


def _cells_env(env: Any) -> Any:
    """The cell agents' env (env=cells, mobrl.envs.cells) behind `env`, or None."""
    from mobrl.envs.cells import CellsEnv
    from mobrl.envs.wrappers import find_env

    return None if env is None else find_env(env, lambda node: isinstance(node, CellsEnv))


def set_states(rule: CellRule, env: Any, name: str) -> None:
    """`rule`'s states for every station, set in `env`'s engine before its step (one line
    naming the baseline `name` if the layout has no power model)."""
    from mobrl.envs.wrappers import find_core

    core = find_core(env)
    if core is None or getattr(core, "power_model", lambda: None)() is None:
        raise UserError(f"baseline '{name}' needs a layout with a power: section.")
    states = rule.cell_states(core)
    if states is not None:
        core.set_cell_states(states)


class AllOnPolicy(CellRule):
    """Every station always active: the network as it runs without energy saving."""

    name = "all_on"

    def cell_states(self, core: Any) -> np.ndarray | None:
        return None


def wanted(core: Any) -> np.ndarray:
    """Which stations some present UE would link to (its strongest were all awake)."""
    best = core.best_stations()
    out = np.zeros(len(core.stations), dtype=bool)
    take = active_mask(core) & (best >= 0)
    out[best[take]] = True
    return out


class IdleOffPolicy(CellRule):
    """A station that no UE would link to sleeps; it wakes when one would."""

    name = "idle_off"

    def cell_states(self, core: Any) -> np.ndarray | None:
        return np.where(wanted(core), 0, self.sleep_state(core))


class ThresholdPolicy(CellRule):
    """O-RAN's cell on/off rule (ns-O-RAN's energy-saving xApp, on each cell's PRB use):

    - a cell whose load has stayed below `low` for `hold` steps sleeps, if every UE it serves
      or would serve has another station on the air and those stations, with the UEs' needs
      added, stay at or below `high` (cells are taken from the least loaded; a cell that
      takes UEs does not sleep in the same step);
    - a sleeping cell wakes when a neighbour, the station its UEs would go to instead, passes
      `high`, or when one of its UEs would have no station on the air at all.

    A UE's need at another station is its demand over that link's rate with all of the
    station's resources (the SNR without interference; a full-buffer UE needs all of it)."""

    name = "threshold"
    low = 0.3
    high = 0.8
    hold = 3

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.below: np.ndarray | None = None

    def cell_states(self, core: Any) -> np.ndarray | None:
        from mobrl.network.offload import Offload

        state, _ = core.cell_states()
        offload = Offload(core)
        load = offload.load
        if self.below is None or self.below.size != load.size:
            self.below = np.zeros(load.size, dtype=np.int64)
        self.below = np.where(offload.awake & (load < self.low), self.below + 1, 0)
        target = state.copy()
        for b in offload.by_load():
            if self.below[b] >= self.hold and offload.leave(b, self.high):
                target[b] = self.sleep_state(core)
        # wake: a neighbour over `high`, or a UE with nowhere else to go
        for b in np.flatnonzero(~offload.awake).tolist():
            moves = offload.moves_from(b)
            if (moves < 0).any() or (load[moves[moves >= 0]] > self.high).any():
                target[b] = 0
        return target


class ComposedPolicy(Baseline):
    """A cell rule with another UE rule (`CELL+UE`, e.g. `threshold+a3`): the cell rule sets
    the stations' states before each step, then the UE rule decides the UEs' links on the
    stations on the air (the cell rules alone: greedy)."""

    def __init__(self, cell: CellRule, ue: Baseline, name: str) -> None:
        self.cell, self.ue, self.name = cell, ue, name
        self.reads_observation = getattr(ue, "reads_observation", True)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.cell.reset(seed)
        self.ue.reset(seed)

    def act(self, observation: Any, env: Any = None) -> Any:
        set_states(self.cell, env, self.name)
        return self.ue.act(observation, env)


class CellsAlonePolicy(Baseline):
    """Under env=hierarchical with the cells held at a zoo policy (`env.cell_policy`): the
    network agent leaves the cells' λ at the layout's, so the cells play as they do alone
    (env=cells): what a network agent is measured against to show what it adds."""

    name = "cells_alone"
    reads_observation = False

    def act(self, observation: Any, env: Any = None) -> Any:
        cells = _cells_env(env)
        return {a: cells.neutral_action() for a in observation if a == "network"}


RULES = (AllOnPolicy, IdleOffPolicy, ThresholdPolicy, CellsAlonePolicy)
