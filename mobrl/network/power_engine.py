"""The fast engine's stations that sleep and UEs whose demand is finite, where a layout has a
`power:` or `traffic:` section (docs/energy.md); a layout without them never builds any of
this, and its episodes are the same to the bit.

- **States.** Every station is active or in one of the layout's sleep states (`power.sleep`).
  A controller sets them before a step (`set_cell_states`): a station sent to sleep leaves
  the air at once, so it serves nobody and interferes with nobody (its received powers are 0
  everywhere, its links drop), and a station told to wake serves again after its state's
  transition time, rounded up to whole steps (`power.model`'s table: 0 for micro sleep).
  While waking it draws its sleep state's power; the wake-up's extra energy is counted when
  it starts.
- **Demand.** Each present UE asks for its demand's rate (`mobrl.traffic`), in the engine's
  rate unit: Mbit/s under the thermal-noise channels, mobile-env's own unit under its model
  (its utility reads it as Mbit/s: 0.01 to 100). A station gives
  each of its links the share of its resources the link's demand needs at the link's rate
  with all of them, the smallest needs first, and splits what is left equally among the
  links that need more (max-min fair time shares: resource fair when every UE wants more
  than it can get, as under full buffer). A UE linked to k stations asks each for 1/k of its
  demand. A station's load is the share of its resources in use: under full buffer 1 while
  it serves anyone.
- **Power.** A station's power in a step is the model's at its state and load
  (`mobrl.energy`); the network's energy in a step is the stations' power times the step's
  duration plus the wake-ups started in it.
- **The day.** With a `traffic.profile` a UE is present at a step when its own uniform draw,
  made at the episode's start, lies below the profile at the step's hour of the day.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from mobrl.network.power_arrays import (
    CellPower,
    EnergyTally,
    Traffic,
    links_of,
    objective_service,
    water_fill,
)

#: the traffic RNG's stream, apart from mobile-env's draws and the radio model's
_STREAM = 38864


class CellView(NamedTuple):
    """What a controller of the stations' states reads of the network after a step
    (`PowerSteps.cell_view`): per station its state index, steps left waking, last load and
    power (the model's unit) and the rate of one bit/s/Hz over its band (the engine's rate
    unit); per UE (column) whether it is present, its last rate, its strongest station were
    every station awake (`best_stations`, -1: none) and the full-resource rate of that link
    (0: none), and its demand (inf: full buffer); the hour and the profile's level."""

    state: np.ndarray
    waking: np.ndarray
    load: np.ndarray
    power: np.ndarray
    bandwidth: np.ndarray
    present: np.ndarray
    rate: np.ndarray
    best: np.ndarray
    best_rate: np.ndarray
    demand: np.ndarray
    hour: float
    level: float


class PowerSteps:
    """Mixin of `FastEngine`: station states as decisions, finite demand and the energy of
    each step, where the layout asks for them."""

    _cells: CellPower | None = None
    _traffic: Traffic | None = None
    _off: np.ndarray | None = None
    _presence: np.ndarray | None = None
    #: True: each step also splits its objective among the stations (`cell_objectives`;
    #: set by the cell agents' env, mobrl.envs.cells)
    credit_cells = False
    #: what a controller above the cells decided, drawn on rendered frames (set by the
    #: network agent's env, mobrl.envs.hierarchy; None: nothing)
    frame_note: str | None = None

    def _setup_power(self, extra: dict[str, Any]) -> None:
        if "power" not in extra and "traffic" not in extra:
            return
        self._step_seconds = float(extra.get("step_seconds", 1.0))
        n_bs = len(self._bs_list)
        if "power" in extra:
            self._cells = CellPower(extra["power"], self._step_seconds, n_bs)
        if "traffic" in extra:
            self._traffic = Traffic(extra["traffic"])
        seed = int(getattr(self, "seed", 0) or 0)
        self._traffic_rng = np.random.default_rng([seed, _STREAM])
        self._cell = np.zeros(n_bs, dtype=np.int64)
        self._wake = np.zeros(n_bs, dtype=np.int64)
        self._off = np.zeros(n_bs, dtype=bool)
        self._load = np.zeros(n_bs)
        self._station_power = np.zeros(n_bs)

    def _reset_power(self) -> None:
        """At reset, after the radio's: every station active, the episode's hour and which
        UEs are present when, the demand's start."""
        if self._off is None:
            return
        n_ue = len(self._ue_list)
        rng = self._traffic_rng
        t = self._traffic
        self._start_hour = float(rng.uniform(0.0, 24.0)) if t is None or t.hour is None else t.hour
        self._presence = None
        if t is not None and t.hourly is not None:
            self._presence = rng.uniform(0.0, 1.0, n_ue)
        self._demand_state = None if t is None else t.demand.start(t.params, n_ue, rng)
        self._demand = np.full(n_ue, np.inf)
        self._cell[:] = 0
        self._wake[:] = 0
        self._off[:] = False
        self._load[:] = 0.0
        self._tally = EnergyTally(len(self._cells.states) if self._cells else 1)
        self._wake_energy_now = 0.0
        self._wake_energy_cells = np.zeros(len(self._bs_list))
        self._objective_now = 0.0
        self._cell_objective = np.zeros(len(self._bs_list))
        self._cell_parts = (np.zeros(len(self._bs_list)), np.zeros(len(self._bs_list)))

    # --- what controllers read and set -------------------------------------------------------

    @property
    def hour(self) -> float:
        """The hour of the day (0 to 24) at the current step."""
        return (self._start_hour + self.time * self._step_seconds / 3600.0) % 24.0

    def load_level(self) -> float:
        """The traffic profile's level at the current hour (its peak 1; 1 without a profile):
        the share of the layout's UEs present then, on average."""
        t = self._traffic
        if t is None or t.hourly is None:
            return 1.0
        from mobrl.traffic import at_hour

        return float(at_hour(t.hourly, self.hour))

    def power_model(self) -> CellPower | None:
        """The layout's power model on arrays (None: the layout has no `power:` section)."""
        return self._cells

    def cell_states(self) -> tuple[np.ndarray, np.ndarray]:
        """Each station's state index (0 active, else its sleep state in `power_model().states`)
        and the steps left until a waking station serves (0: not waking)."""
        return self._cell.copy(), self._wake.copy()

    def cell_powers(self) -> np.ndarray:
        """Each station's power in the last step (the power model's unit)."""
        return self._station_power.copy()

    def cell_loads(self) -> np.ndarray:
        """Each station's load in the last step (the share of its resources in use)."""
        return self._load.copy()

    def set_cell_states(self, states: Any) -> None:
        """The state every station is to be in (station order; indices or names of
        `power_model().states`), before the next step: a station sent to sleep leaves the air
        now, one told to wake starts waking and serves once its transition is over."""
        cells = self._cells
        if cells is None:
            raise ValueError("this layout has no power: section; its stations cannot sleep")
        target = np.array([cells.index(s) for s in np.asarray(states).ravel().tolist()])
        if target.shape != self._cell.shape:
            raise ValueError(f"give one state per station ({self._cell.size}), not {target.size}")
        asleep = self._cell > 0
        wake = asleep & (target == 0) & (self._wake == 0)
        steps = cells.wake_steps[self._cell[wake]]
        self._wake_energy_now += float(cells.wake_energy[self._cell[wake]].sum())
        self._wake_energy_cells[wake] += cells.wake_energy[self._cell[wake]]
        now = np.flatnonzero(wake)
        self._wake[now] = steps
        self._cell[now[steps == 0]] = 0
        self._wake[now[steps == 0]] = 0
        sleep = target > 0
        self._cell[sleep] = target[sleep]
        self._wake[sleep] = 0  # a wake-up called off (its energy is spent)
        self._follow_states()

    def _follow_states(self) -> None:
        off = self._cell > 0
        if np.array_equal(off, self._off):
            return
        self._off = off
        self._views = {}
        self._compute_snr()  # the stations on the air now
        self._bs_stats = self._station_utilities()

    def cell_view(self) -> CellView:
        """The network as a controller of the stations' states reads it now (`CellView`)."""
        state, waking = self.cell_states()
        best = self.best_stations()
        cols = np.flatnonzero(best >= 0)
        best_rate = np.zeros(best.shape)
        best_rate[cols] = self.full_capacity()[best[cols], cols]
        bandwidth = (self._radio.bw if self._radio is not None else self._bw)[:, 0]
        return CellView(
            state, waking, self.cell_loads(), self.cell_powers(), bandwidth,
            self._active_mask.copy(), self._macro.copy(), best, best_rate, self.ue_demands(),
            self.hour, self.load_level(),
        )  # fmt: skip

    def station_positions(self) -> np.ndarray:
        """(station, 2) positions x, y in metres."""
        return np.array([[float(b.x), float(b.y)] for b in self._bs_list])

    def best_stations(self) -> np.ndarray:
        """Each UE's (column's) station of the strongest signal among those it could link to
        were every station awake (-1: none): where it would link (`idle_off`'s wake-up)."""
        signal, reach = self.full_signal()
        best = np.argmax(np.where(reach, signal, -np.inf), axis=0)
        return np.where(reach.any(axis=0), best, -1)

    def full_signal(self) -> tuple[np.ndarray, np.ndarray]:
        """(BS, UE) signal (received power; mobile-env's model: SNR) of every station, asleep
        or not, and where it is above the UE's threshold without interference."""
        if self._radio is not None:
            r = self._radio
            rx = self._rx_all
            return rx, rx / r.noise > r.thr
        snr = self._snr_all if self._grid is None else self._sparse_all()
        return snr, snr > self._thr

    def full_capacity(self) -> np.ndarray:
        """(BS, UE) rate of every link a UE could hold were every station awake, with all of
        the station's resources and no interference (0 out of range): what a rule weighs a
        UE's demand against."""
        signal, reach = self.full_signal()
        if self._radio is not None:
            r = self._radio
            return np.where(reach, r.bw * np.log2(1.0 + signal / r.noise), 0.0)
        return np.where(reach, self._bw * np.log2(1.0 + signal), 0.0)

    def ue_demands(self) -> np.ndarray:
        """Each UE's demand in the last step, in the engine's rate unit (`full_capacity`'s;
        inf: full buffer; 0: not present)."""
        t = self._traffic
        if t is None or not t.finite:
            return np.where(self._active_mask, np.inf, 0.0)
        return self._demand.copy()

    def _sparse_all(self) -> np.ndarray:
        p = self._pairs
        out = np.zeros(self._t1.shape)
        out[p.b, p.u] = p.snr_all
        return out

    # --- the step ---------------------------------------------------------------------------

    def _mask_off(self, values: np.ndarray) -> np.ndarray:
        """`values` (BS, UE) with the rows of stations off the air set to 0."""
        off = self._off
        if off is None or not off.any():
            return values
        return np.where(off[:, None], 0.0, values)

    def _present(self, t: float) -> np.ndarray | None:
        """Which UEs the profile has present at time `t` (None: all)."""
        if self._presence is None:
            return None
        from mobrl.traffic import at_hour

        hour = self._start_hour + t * self._step_seconds / 3600.0
        return self._presence < at_hour(self._traffic.hourly, hour)

    def _served_macro(self) -> np.ndarray:
        """Each UE's summed rate in the step under the UEs' demands (full buffer: as the
        scheduler shares); sets each station's load."""
        t = self._traffic
        if t is not None and t.finite:
            active = self._active_mask
            demand, arrived = t.demand.offered(
                t.params, self._demand_state, self._step_seconds, active, self._traffic_rng
            )
            self._demand = np.where(active, demand, 0.0)
            self._arrived = float(arrived[active].sum())
        if self._grid is not None:  # the sparse path's links (mobrl.network.neighbours)
            b, u, rates, _ = self._sparse_rates()
            keep = self._reach[b, u] & (rates > 0.0)
            b, u, rates = b[keep], u[keep], rates[keep]
        else:
            b, u, rates = links_of(self._rates())
        caps = getattr(self, "_caps_now", None) if self._radio is not None else None
        served, self._load = self.link_demand(b, u, rates, caps=caps)
        # in station order per UE, as the engine adds a UE's links
        return np.bincount(u, weights=served, minlength=len(self._ue_list))

    def link_demand(
        self,
        b: np.ndarray,
        u: np.ndarray,
        rates: np.ndarray,
        demand: Any = None,
        caps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rates of the links (b, u) that carry data (their full-buffer `rates`) under the
        UEs' demands (`demand`, default the step's; full buffer: `rates`), and each station's
        load. `caps` (station, UE): each link's rate with all its station's resources, which a
        radio model that is not mobile-env's arithmetic gives with the rates (`link_rates`)."""
        n_bs = len(self._bs_list)
        t = self._traffic
        if t is None or not t.finite:
            return rates, (np.bincount(b, minlength=n_bs) > 0).astype(float)
        if not b.size:
            return rates, np.zeros(n_bs)
        demand = self._demand if demand is None else demand
        if self._radio is not None and not self._radio.model.separable:
            cap = caps[b, u]
        else:  # resource fair: a link's rate is its full rate over its station's links
            cap = rates * np.bincount(b, minlength=n_bs)[b]
        per_ue = np.bincount(u, minlength=len(self._ue_list))
        share, load = water_fill(b, cap, demand[u] / per_ue[u], n_bs)
        return share * cap, load

    def _count_energy(self, macro: np.ndarray) -> None:
        """Add the step's power, energy, states and bits to the episode's tally."""
        tally = self._tally
        seconds = self._step_seconds
        t = self._traffic
        active = self._active_mask
        tally.steps += 1
        tally.bits += float(macro[active].sum()) * seconds
        if t is not None and t.finite:
            got = np.minimum(macro, self._demand)
            tally.offered += self._arrived
            tally.served += float(got[active].sum()) * seconds
            t.demand.served(t.params, self._demand_state, got, seconds)
        cells = self._cells
        if cells is None:
            return
        self._station_power = cells.power(self._cell, np.where(self._cell > 0, 0.0, self._load))
        total = float(self._station_power.sum())
        tally.power += total
        service = objective_service(self._util[self._sel], macro[self._sel])
        # the energy's part: the stations' power and the wake-ups started, over the step
        self._objective_now = cells.objective(service, total + self._wake_energy_now / seconds)
        tally.objective += self._objective_now
        if self.credit_cells:
            self._cell_objective = self._split_objective(macro)
        tally.energy += total * seconds + self._wake_energy_now
        self._wake_energy_now = 0.0
        self._wake_energy_cells[:] = 0.0
        tally.state_steps += np.bincount(self._cell, minlength=len(cells.states))

    def _split_objective(self, macro: np.ndarray) -> np.ndarray:
        """The step's objective as a sum over stations: each station's power part (its power
        and the wake-up it started), and the service part of the present UEs whose strongest
        station it is were every station awake (`best_stations`: the UEs its state decides
        for); the part of UEs no station reaches is shared equally."""
        cells = self._cells
        n_bs = len(self._bs_list)
        util, rate = self._util[self._sel], macro[self._sel]
        parts = np.zeros(n_bs)
        if util.size:
            value = (util - (rate <= 0.0)) / util.size  # objective_service, UE by UE
            best = self.best_stations()[self._sel]
            reached = best >= 0
            parts += np.bincount(best[reached], weights=value[reached], minlength=n_bs)
            parts += value[~reached].sum() / n_bs
        energy = self._station_power + self._wake_energy_cells / self._step_seconds
        self._cell_parts = (parts, energy / cells.reference())
        return parts - cells.weight * self._cell_parts[1]

    def step_objective(self) -> float:
        """The last step's objective (`CellPower.objective`)."""
        return self._objective_now

    def cell_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """The two parts of `cell_objectives`, per station: the service part, and the power
        part before its weight λ (power over stations × full-load active power), so that a
        station's share at another weight w is service − w · power."""
        service, power = self._cell_parts
        return service.copy(), power.copy()

    def cell_objectives(self) -> np.ndarray:
        """The last step's objective split among the stations (station order; they sum to
        `step_objective`), where `credit_cells` asks for it."""
        return self._cell_objective.copy()

    def _advance_wakes(self) -> None:
        """At a step's end: waking stations a step nearer; those done serve from the next."""
        if self._off is None or not self._wake.any():
            return
        waking = self._wake > 0
        self._wake[waking] -= 1
        self._cell[waking & (self._wake == 0)] = 0
        self._off = self._cell > 0  # `_compute_snr` follows, at the step's end

    def energy_summary(self) -> dict[str, float]:
        """The episode so far, by metric key (mobrl.core.metrics): power, energy, per-state
        shares, energy per bit, demand served ({} without a power or traffic section)."""
        from mobrl.core import metrics as keys

        if self._off is None or not self._tally.steps:
            return {}
        tally = self._tally
        out: dict[str, float] = {}
        if self._traffic is not None and self._traffic.finite:
            out[keys.NET_DEMAND_SERVED] = tally.served / tally.offered if tally.offered else 1.0
        cells = self._cells
        if cells is not None:
            station_steps = tally.state_steps.sum()
            out[keys.NET_POWER] = tally.power / tally.steps
            out[keys.NET_ENERGY] = tally.energy
            out[keys.NET_ENERGY_PER_BIT] = tally.energy / tally.bits if tally.bits else math.nan
            out[keys.NET_ASLEEP] = float(tally.state_steps[1:].sum() / station_steps)
            out[keys.NET_OBJECTIVE] = tally.objective / tally.steps
            for i, state in enumerate(cells.states):
                out[keys.state_share(state)] = float(tally.state_steps[i] / station_steps)
        return out
