"""What a step would give under another set of stations on the air: the service and the
power the fast engine would compute for the next step, with the UEs linking by `greedy`,
for a planner that chooses which cells sleep (`energy_oracle`). The same operations as the
engine's step (`mobrl.network.power_engine`), on its arrays, without changing the env: the SNR
or SINR with the chosen stations' received powers and the others' at 0, greedy's moves on
them, the links' rates, the demands' shares and loads, the utilities and the power model."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network.power_arrays import links_of, objective_service
from mobrl.network.service import greedy_moves, scaled_utility, toggle
from mobrl.radio.links import link_rates, reach_sinr


class StepPredictor:
    """Predicts the next step of `core` (a fast engine with a power model) for a set of
    stations on the air; `value(on)` is the step's objective, service − λ·energy, with the
    layout's λ (`power.weight`) or `weight`.

    `floor` > 0 also charges the service each UE would lose against every station on the air:
    `floor` × the present UEs' mean of max(0, u_all − u), u a UE's predicted utility and u_all
    its utility with every station on (the same step, from the same links). A planner that
    scores with it keeps each UE's service of a full network unless a sleep pays `floor`
    times over for what it takes (docs/energy.md, "A service floor")."""

    def __init__(self, core: Any, weight: float | None = None, floor: float = 0.0) -> None:
        self.core = core
        self.cells = core.power_model()
        self.weight = weight  # None: the layout's λ
        self.floor = float(floor)
        self.active = core._active_mask
        self.conn = core._conn
        self.state = core._cell.copy()
        radio = core._radio
        self.radio = radio
        if radio is not None:
            self.signal = core._rx_all
        elif core._grid is not None:
            self.signal = core._dense_snr()  # the sparse path's numbers, every pair
        else:
            self.signal = core._snr_all
        traffic = core._traffic
        self.demand = None
        if traffic is not None and traffic.finite:
            self.demand = np.where(
                self.active,
                traffic.demand.expected(traffic.params, core._demand_state, core._step_seconds),
                0.0,
            )
        util = core.utility
        self.lower, self.upper = float(util.lower), float(util.upper)
        self.coeffs = tuple(float(c) for c in util.coeffs)
        self.log_base = float(np.log(self.coeffs[2]))
        self.seconds = core._step_seconds
        self.cache: dict[bytes, float] = {}
        #: each present UE's utility with every station on the air (with a floor)
        self.full = None
        if self.floor > 0:
            self.full = self._predict(np.ones(len(core.stations), dtype=bool), self.conn)[0]

    def value(self, on: np.ndarray, sleep_state: int) -> float:
        """The objective of the next step with the stations `on` on the air (the others asleep:
        those asleep now in their state, the others in `sleep_state`)."""
        key = np.packbits(on).tobytes()
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._value(on, sleep_state, self.conn)[0]
        return found

    def two_steps(self, now: np.ndarray, then: np.ndarray, sleep_state: int) -> float:
        """The objective of the next two steps, the stations `now` on the air in the first and
        `then` in the second, UEs staying where they are: the second step starts from the
        links greedy left after the first (a UE that moved takes a step more to drop its old
        link)."""
        key = np.packbits(now).tobytes() + np.packbits(then).tobytes()
        found = self.cache.get(key)
        if found is None:
            first, conn = self._value(now, sleep_state, self.conn)
            found = self.cache[key] = first + self._value(then, sleep_state, conn)[0]
        return found

    def _value(
        self, on: np.ndarray, sleep_state: int, conn: np.ndarray
    ) -> tuple[float, np.ndarray]:
        util, served, load, new = self._predict(on, conn)
        service = objective_service(util, served)
        if self.full is not None and util.size:
            service -= self.floor * float(np.maximum(self.full - util, 0.0).sum()) / util.size
        state = np.where(on, 0, np.where(self.state > 0, self.state, sleep_state))
        power = float(self.cells.power(state, np.where(on, load, 0.0)).sum())
        # a wake-up's extra energy, spread over the step it starts in
        waking = on & (self.state > 0)
        power += float(self.cells.wake_energy[self.state[waking]].sum()) / self.seconds
        return self.cells.objective(service, power, self.weight), new

    def _predict(
        self, on: np.ndarray, conn: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The present UEs' utilities and rates served, the stations' loads and the links
        greedy leaves, the stations `on` on the air, from the links `conn`."""
        core = self.core
        signal = np.where(on[:, None], self.signal, 0.0)
        if self.radio is not None:
            r = self.radio
            sinr = reach_sinr(r.model, signal, r.noise, conn)
            reach = sinr > r.thr
        else:
            sinr = signal
            reach = sinr > core._thr
        new = conn & reach
        act = greedy_moves(sinr, reach, new)
        chosen = np.flatnonzero(self.active & (act != 0))
        if chosen.size:
            toggle(new, reach, act[chosen] - 1, chosen)
        caps = None
        if self.radio is not None:
            r = self.radio
            caps = np.empty(new.shape)
            rates = link_rates(r.model, signal, r.noise, r.bw, r.thr, new, caps)
        else:
            counts = new.sum(axis=1, keepdims=True)
            full = core._bw * np.log2(1 + sinr) / np.maximum(counts, 1)
            rates = np.where(new & reach, full, 0.0)
        b, u, link = links_of(rates)
        link, load = core.link_demand(b, u, link, self.demand, caps)
        served = np.bincount(u, weights=link, minlength=new.shape[1])[self.active]
        util = scaled_utility(served, self.lower, self.upper, self.coeffs, self.log_base)
        return util, served, load, new


class SleepPlan:
    """The stations' sets on the air as a planner of the next two steps scores them (`score`),
    and the states that put a set on the air (`states`): a station told to wake is still
    waking in the first step; the others leave the air in their sleep state if asleep, else
    in `sleep_state`. `energy_oracle` and `energy_greedy` search with it; cells deciding in
    turns observe its `gain`. `weight`: the λ it scores with (None: the layout's); `floor`:
    the price of a UE's service lost against every station on (`StepPredictor`)."""

    def __init__(
        self, core: Any, sleep_state: int, weight: float | None = None, floor: float = 0.0
    ) -> None:
        cells = core.power_model()
        self.state, _ = core.cell_states()
        self.asleep = self.state > 0
        #: told to wake, still off the air in the first step
        self.slow = self.asleep & (cells.wake_steps[self.state] > 0)
        self.sleep = int(sleep_state)
        self.predict = StepPredictor(core, weight, floor)

    def score(self, on: np.ndarray) -> float:
        """The predicted objective of the next two steps with the stations `on` on the air."""
        return self.predict.two_steps(on & ~self.slow, on, self.sleep)

    def states(self, on: np.ndarray) -> np.ndarray:
        """Every station's state that puts `on` on the air."""
        return np.where(on, 0, np.where(self.asleep, self.state, self.sleep))

    def gain(self, on: np.ndarray, b: int) -> float:
        """What station `b` leaving the air would change of `score`, the others as in `on`."""
        off, stay = on.copy(), on.copy()
        off[b], stay[b] = False, True
        return self.score(off) - self.score(stay)
