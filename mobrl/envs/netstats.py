"""Coordination-quality statistics of mobile-network episodes: per UE, across UEs, per network.

Pure numpy, no RLlib. One path from a step to an episode's measures: `step_arrays` reads the
last step of either engine as arrays, `EpisodeTracker` accumulates them, and `EpisodeRecorder`
does both for training callbacks, evaluation rollouts and the UE-slot sampler alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.core.protocols import EpisodeStats, MetricArrays, implements


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2) of non-negative values: 1 is perfectly
    fair, 1/n is one user getting everything. All zeros count as perfectly fair."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return math.nan
    if np.any(x < 0):
        raise ValueError("Jain's index needs non-negative values")
    squares = float(np.sum(x * x))
    if squares == 0.0:
        return 1.0
    return float(np.sum(x) ** 2 / (x.size * squares))


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (linear interpolation, numpy's default); NaN for no values."""
    x = np.asarray(list(values), dtype=float)
    return float(np.percentile(x, q)) if x.size else math.nan


def utility_to_unit(u: float) -> float:
    """Map a scaled utility in [-1, 1] to [0, 1] so Jain's index (non-negative inputs) applies."""
    return (u + 1.0) / 2.0


class EpisodeTracker:
    """Accumulates one episode from each step's arrays (`step_arrays`), UEs in `ue_ids`
    order; a UE counts only on the steps it is active."""

    def __init__(self, num_stations: int, ue_ids: Iterable[Any]):
        self.num_stations = num_stations
        self.ue_ids = list(ue_ids)
        n = len(self.ue_ids)
        self.steps = 0
        self._sums = {k: np.zeros(n) for k in ("steps", "utility", "rate", "snr_db", "snr_links",
                                                "connections", "connected", "changes")}  # fmt: skip
        self._serving = np.zeros((num_stations, n), dtype=bool)
        self._serving_pairs = (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
        self._serving_count = np.zeros(n, dtype=np.int64)
        self._utility_sum = 0.0
        self._connected_fraction_sum = 0.0
        self._connections_per_bs_sum = 0.0
        self._busy_bs_fraction_sum = 0.0

    def record(self, utility: np.ndarray, rate: np.ndarray, links: Any, snr_db: Any) -> None:
        """One step: each UE's scaled utility (NaN: not active), data rate, the (BS, UE) links
        serving it and every link's SNR (dB); or, as the fast engine's sparse path hands them
        over, `links` as (station, UE) index arrays (each UE's stations ascending) and
        `snr_db` each of those links' SNR (`_record_pairs`: the same sums over the links)."""
        active = ~np.isnan(utility)
        n = int(np.count_nonzero(active))
        if not n:
            return
        self.steps += 1
        if isinstance(links, tuple):
            self._record_pairs(utility, rate, active, n, *links, np.asarray(snr_db, float))
            return
        self._serving_pairs = None  # `_record_pairs` rebuilds them from `_serving`
        links = links & active[None, :]
        per_ue = links.sum(axis=0)
        sums = self._sums
        sums["snr_db"] += np.where(links, snr_db, 0.0).sum(axis=0)
        changed = (links ^ self._serving).sum(axis=0)
        sums["changes"] += np.where(active, changed, 0)
        self._serving[:, active] = links[:, active]
        busy = np.count_nonzero(links.any(axis=1))
        self._add(utility, rate, active, n, per_ue, int(per_ue.sum()), busy)

    def _record_pairs(self, utility, rate, active, n, b, u, snr) -> None:  # noqa: ANN001
        on = active[u]
        b, u, snr = b[on], u[on], snr[on]
        n_ue = len(self.ue_ids)
        per_ue = np.bincount(u, minlength=n_ue)
        sums = self._sums
        # in station order per UE, as the sum over the stations axis adds them
        sums["snr_db"] += np.bincount(u, weights=snr, minlength=n_ue)
        if self._serving_pairs is None:
            su, sb = np.nonzero(self._serving.T)
            self._serving_pairs, self._serving_count = (sb, su), self._serving.sum(axis=0)
        # links that changed: the UE's links and its previous ones, less twice those in both
        kept = np.bincount(u[self._serving[b, u]], minlength=n_ue)
        changed = per_ue + self._serving_count - 2 * kept
        sums["changes"] += np.where(active, changed, 0)
        sb, su = self._serving_pairs
        gone = active[su]
        self._serving[sb[gone], su[gone]] = False
        self._serving[b, u] = True
        self._serving_pairs = (np.concatenate([sb[~gone], b]), np.concatenate([su[~gone], u]))
        self._serving_count[active] = per_ue[active]
        busy = np.count_nonzero(np.bincount(b, minlength=self.num_stations))
        self._add(utility, rate, active, n, per_ue, len(b), busy)

    def _add(self, utility, rate, active, n, per_ue, links, busy) -> None:  # noqa: ANN001
        """What both kinds of input add alike."""
        sums = self._sums
        sums["steps"] += active
        sums["utility"] += np.where(active, utility, 0.0)
        sums["rate"] += np.where(active, rate, 0.0)
        sums["connections"] += per_ue
        sums["connected"] += per_ue > 0
        sums["snr_links"] += per_ue
        self._utility_sum += float(utility[active].sum()) / n
        self._connected_fraction_sum += int(np.count_nonzero(per_ue[active])) / n
        stations = max(self.num_stations, 1)
        self._connections_per_bs_sum += links / stations
        self._busy_bs_fraction_sum += int(busy) / stations

    def active_steps(self) -> dict[Any, int]:
        """How many steps each UE that was ever active was active."""
        steps = self._sums["steps"]
        return {self.ue_ids[i]: int(steps[i]) for i in np.flatnonzero(steps).tolist()}

    def per_ue(self) -> dict[Any, dict[str, float]]:
        """Episode means per UE (over the steps it was active)."""
        s = self._sums
        out = {}
        for i in np.flatnonzero(s["steps"]).tolist():
            steps = s["steps"][i]
            out[self.ue_ids[i]] = {
                keys.UE_UTILITY: s["utility"][i] / steps,
                keys.UE_RATE: s["rate"][i] / steps,
                keys.UE_SNR: s["snr_db"][i] / s["snr_links"][i] if s["snr_links"][i] else math.nan,
                keys.UE_CONNECTIONS: s["connections"][i] / steps,
                keys.UE_CONNECTED: s["connected"][i] / steps,
                keys.UE_CHANGES: float(s["changes"][i]),
            }
        return out

    def summary(self, per_ue: bool = True) -> dict[str, float]:
        """Every metric of the episode, keyed by the tag names of `mobrl.core.metrics`."""
        if not self.steps:
            return {}
        ues = self.per_ue()
        utilities = [v[keys.UE_UTILITY] for v in ues.values()]
        rates = [v[keys.UE_RATE] for v in ues.values()]
        out = {
            keys.UTILITY_MEAN: float(np.mean(utilities)),
            keys.UTILITY_MIN: float(np.min(utilities)),
            keys.UTILITY_P5: percentile(utilities, 5),
            keys.UTILITY_MAX: float(np.max(utilities)),
            keys.RATE_MEAN: float(np.mean(rates)),
            keys.JAIN_UTILITY: jain_index(utility_to_unit(u) for u in utilities),
            keys.JAIN_RATE: jain_index(rates),
            keys.NET_UTILITY: self._utility_sum / self.steps,
            keys.NET_CONNECTED: self._connected_fraction_sum / self.steps,
            keys.NET_CONNECTIONS_PER_BS: self._connections_per_bs_sum / self.steps,
            keys.NET_BS_BUSY: self._busy_bs_fraction_sum / self.steps,
            keys.HANDOVERS_MEAN: float(np.mean([v[keys.UE_CHANGES] for v in ues.values()])),
        }
        if per_ue:
            for ue, values in ues.items():
                for name, value in values.items():
                    out[keys.ue_tag(ue, name)] = value
        return out


def step_arrays(core: Any, ue_ids: list[Any]) -> tuple[np.ndarray, ...]:
    """The last step of a mobile-env core as `EpisodeTracker.record` takes it, UEs in
    `ue_ids` order (mobrl's fast engine hands its own arrays over, in that order already).

    Rates are in bit/s (mobile-env's bandwidth in Hz times log2(1 + SNR); its dashboard calls
    them MB/s); SNR is 10*log10 of mobile-env's SNR value (received power over noise as
    mobile-env computes them), measured at the UE positions at the end of the step. On the
    fast engine's sparse path (city scale) the links come as index pairs (`metric_pairs`)."""
    if implements(core, MetricArrays):
        pairs = getattr(core, "metric_pairs", None)
        found = pairs() if pairs is not None else None
        return found if found is not None else core.metric_arrays()
    from mobile_env.core.schedules import ResourceFair

    column = {ue: i for i, ue in enumerate(ue_ids)}
    shape = (core.NUM_STATIONS, len(ue_ids))
    utility, rate = np.full(len(ue_ids), np.nan), np.zeros(len(ue_ids))
    links, snr_db = np.zeros(shape, dtype=bool), np.zeros(shape)
    active = core.utilities or {}
    macro = getattr(core, "macro", {}) or {}
    for ue, value in active.items():
        utility[column[ue.ue_id]] = value
        rate[column[ue.ue_id]] = float(macro.get(ue, 0.0))
    # with resource-fair scheduling the step already holds every link's SNR implicitly:
    # rate = bw * log2(1 + snr) / n_links(bs); inverting it avoids recomputing path losses
    invert = type(core.scheduler) is ResourceFair
    for bs, ues in core.connections.items():
        for ue in ues:
            if ue not in active:
                continue
            link_rate = core.datarates.get((bs, ue)) if invert else None
            if link_rate:
                snr = math.expm1(link_rate * len(ues) * math.log(2.0) / bs.bw)
            else:
                snr = core.channel.snr(bs, ue)
            links[bs.bs_id, column[ue.ue_id]] = True
            snr_db[bs.bs_id, column[ue.ue_id]] = 10.0 * math.log10(max(snr, 1e-30))
    return utility, rate, links, snr_db


class EpisodeRecorder:
    """What mobrl measures of one episode of any env, fed one step at a time: mobile-env's
    per-UE, fairness and network statistics (`EpisodeTracker`) when a mobile-env core is
    behind `env`, and the env's own counts (`EpisodeStats`). Training callbacks and
    evaluation rollouts both record through it."""

    def __init__(self, env: Any, env_index: int = 0):
        from mobrl.envs.wrappers import find_core, find_env

        self.core = find_core(env, env_index)
        #: an env whose steps may be turns within one of the core's (`mid_step`)
        self.env = find_env(env, lambda node: hasattr(node, "mid_step"), env_index)
        self.tracker: EpisodeTracker | None = None
        self.counter = find_env(env, lambda node: implements(node, EpisodeStats), env_index)
        self.counts: dict[str, float] = {}
        # an env that also counts per agent (an env mobrl did not write: mobrl.envs.foreign)
        self.per_agent = getattr(self.counter, "agent_stats", None)
        self.agent_counts: dict[str, float] = {}
        # a layout with power: or traffic: (mobrl.network.power_engine): energy and demand
        self.energy_of = getattr(self.core, "energy_summary", None)
        self.energy: dict[str, float] = {}

    def __deepcopy__(self, memo: dict) -> EpisodeRecorder:
        """The recorder itself: it is a live handle on the env, not episode data. RLlib cuts an
        episode at the end of each sample and deep-copies its `custom_data` into the
        continuation; a copy would record a frozen copy of the env for the rest of the
        episode."""
        return self

    def step(self) -> None:
        """Record the step the env just made (counts are read now: when an episode ends, the
        env may already have begun the next one)."""
        if self.core is not None:
            if getattr(self.env, "mid_step", False):
                return  # a turn within a step (mobrl.envs.turns): the core has not stepped
            if self.tracker is None:  # the episode's UEs, known once its env was reset
                self.tracker = EpisodeTracker(self.core.NUM_STATIONS, sorted(self.core.users))
            self.tracker.record(*step_arrays(self.core, self.tracker.ue_ids))
            if self.energy_of is not None:
                self.energy = self.energy_of()
        if self.counter is not None:
            self.counts = self.counter.episode_stats()
            if self.per_agent is not None:
                self.agent_counts = self.per_agent()

    def summary(self, per_ue: bool = True) -> dict[str, float]:
        """The episode's measures by metric key (with `per_ue`, also each UE's)."""
        out = {key: float(value) for key, value in self.counts.items()}
        if per_ue:
            out.update((key, float(value)) for key, value in self.agent_counts.items())
        if self.tracker is not None:
            out.update(self.tracker.summary(per_ue=per_ue))
        out.update(self.energy)
        return out
