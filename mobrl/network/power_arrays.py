"""A layout's power model and traffic as arrays, and the arithmetic the fast engine's energy
step shares with the reference's predictions (`mobrl.network.power_engine`,
`mobrl.network.power_predict`): each state's power at a load and its wake-up, the objective,
max-min fair shares of demand, and an episode's tally."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class CellPower:
    """A layout's power model on arrays: per state (0: active, then the layout's sleep states
    lightest first) its power at load 0 and at load 1, and waking from it: steps and extra
    energy (the model's unit x seconds)."""

    def __init__(self, section: dict[str, Any], step_seconds: float, n_bs: int) -> None:
        from mobrl import energy

        self.model = energy.model(section["model"])
        self.params = {k: section[k] for k in self.model.defaults}
        self.states: tuple[str, ...] = (energy.ACTIVE, *section["sleep"])
        self.unit = self.model.unit
        low = self.model.powers(self.params, np.zeros(1))
        high = self.model.powers(self.params, np.ones(1))
        self.idle = np.array([float(low[s][0]) for s in self.states])
        self.full = np.array([float(high[s][0]) for s in self.states])
        wakes = [self.model.transition(s, self.params) for s in self.states]
        # a wake-up within a step's rounding (1e-9 s) does not cost a whole step more
        self.wake_steps = np.array([math.ceil(w.seconds / step_seconds - 1e-9) for w in wakes])
        self.wake_energy = np.array([w.energy for w in wakes])
        #: λ of the objective, and the power it is counted against: every station active and
        #: fully loaded
        self.weight = float(section.get("weight", energy.WEIGHT))
        self.n_bs = n_bs

    def reference(self) -> float:
        return self.n_bs * float(self.full[0])

    def objective(self, service: float, power: float, weight: float | None = None) -> float:
        """The step's objective: its service (`objective_service`) − λ · power / (stations ×
        full-load active power), λ the layout's or `weight`."""
        weight = self.weight if weight is None else weight
        return service - weight * power / self.reference()

    def index(self, state: Any) -> int:
        """The index of `state` (a name or an index) among `states`."""
        if isinstance(state, str):
            if state not in self.states:
                raise ValueError(
                    f"state '{state}' is not one of this layout's: {', '.join(self.states)}"
                )
            return self.states.index(state)
        value = int(state)
        if not 0 <= value < len(self.states):
            raise ValueError(f"state {value} is not one of 0..{len(self.states) - 1}")
        return value

    def deepest_within(self, steps: int) -> int:
        """The deepest sleep state that wakes within `steps` steps (0: none does)."""
        ok = [i for i in range(1, len(self.states)) if self.wake_steps[i] <= steps]
        return ok[-1] if ok else 0

    def power(self, state: np.ndarray, load: np.ndarray) -> np.ndarray:
        """Each station's power at its state index and load."""
        idle, full = self.idle[state], self.full[state]
        return idle + load * (full - idle)


def objective_service(util: np.ndarray, rate: np.ndarray) -> float:
    """The objective's service part of a step: the present UEs' mean scaled utility less the
    share of them that received nothing (so a UE left unserved counts −2: its utility and as
    much again); 0 with nobody present."""
    if not util.size:
        return 0.0
    return float(util.sum() / util.size) - np.count_nonzero(rate <= 0.0) / util.size


class Traffic:
    """A layout's traffic on arrays: the demand model and its parameters, the 24 hourly
    values of the profile (None: flat), the hour an episode starts at (None: drawn)."""

    def __init__(self, section: dict[str, Any]) -> None:
        from mobrl import traffic

        spec = dict(section["demand"])
        self.demand = traffic.demand_model(spec.pop("model"))
        self.params = spec
        hourly = traffic.hourly(section["profile"])
        self.hourly = None if bool((hourly == 1.0).all()) else hourly
        self.hour = section.get("hour")
        self.finite = not self.demand.full


def water_fill(
    b: np.ndarray, cap: np.ndarray, need: np.ndarray, n_bs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Max-min fair time shares of links (station `b`, rate `cap` with all of the station's
    resources, rate `need` wanted): each link's share and each station's summed share (its
    load). Links of a station get what they need, smallest needs first, until an equal split
    of what is left is less than the next need; from there each gets that split."""
    want = np.where(cap > 0.0, np.minimum(need / np.where(cap > 0.0, cap, 1.0), 1.0), 0.0)
    order = np.lexsort((want, b))
    sb, sw = b[order], want[order]
    counts = np.bincount(sb, minlength=n_bs)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(sb.size) - starts[sb]  # rank of each link within its station
    ahead = np.cumsum(sw) - sw  # needs of the links before each, over all stations
    before = ahead - ahead[starts[sb]]  # ... within its station
    left = counts[sb] - pos
    level = (1.0 - before) / left  # an equal split of what the smaller needs left
    short = sw > level  # from the first such link on, the rest share equally
    first_short = np.full(n_bs, sb.size)
    np.minimum.at(first_short, sb[short], pos[short])
    fs = first_short[sb]
    beyond = fs <= pos
    cut = np.where(beyond, level[starts[sb] + np.where(beyond, fs, 0)], np.inf)
    share = np.empty_like(want)
    share[order] = np.minimum(sw, cut)
    load = np.bincount(b, weights=share, minlength=n_bs)
    return share, load


def links_of(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (station, UE) links of a (BS, UE) rate matrix that carry data, sorted by UE then
    station, and their rates."""
    u, b = np.nonzero(rates.T)
    return b, u, rates[b, u]


class EnergyTally:
    """One episode's sums: energy, station-steps per state, power-steps, bits offered and
    served, and the steps counted."""

    def __init__(self, n_states: int) -> None:
        self.steps = 0
        self.energy = 0.0
        self.power = 0.0
        self.state_steps = np.zeros(n_states)
        self.offered = 0.0
        self.served = 0.0
        self.bits = 0.0
        self.objective = 0.0
