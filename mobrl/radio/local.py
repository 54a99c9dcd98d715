"""Rates after one UE's links change, computed only where the change can move them.

Under `sum_rates` a link's SINR depends on which stations transmit and nothing else, so when a
UE's links change and every station keeps transmitting or staying silent, every link keeps its
SINR and its rate with all of its station's resources. What moves is the scheduler's shares,
and a scheduler splits a station's resources among that station's links only: the rates that
can change are those of the UEs joined to the moving UE's old or new stations through chains
of shared stations (the connected components of the graph of stations and UEs joined by the
links up). Every scheduler in mobrl.radio.schedulers computes a component's shares from that
component's links alone, so those components, scored on their own, get the rates the whole
network gives them; the other UEs' rates are unchanged.

A change that switches a station on or off under `interference=active` (a UE joining an idle
station, or leaving a station it alone uses) changes every SINR: it is rescored on every link,
each link's interference being the sum before the change plus or minus the switched station's
power (equal to the whole network's sum to rounding), still without the dense (station, UE)
arrays. Under non-coherent joint transmission a UE's own links set its SINR: those changes are
left to the whole network's arithmetic (`scored` is False for them). On `city_interference`
(100 stations, 1,000 UEs) a change costs 43-675x less than scoring its whole link set
(`scripts/bench.py local`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from mobrl.radio.links import RadioService, _interference_sets, carried_rate, transmitting

if TYPE_CHECKING:
    from mobrl.radio.schedulers import Scheduler


@dataclass
class LocalRates:
    """The rates after each candidate change that `scored` marks: for entry j, UE `ue[j]` of
    candidate `cand[j]` gets rate `rate[j]` (every UE whose rate may change, the moving UE
    among them; every other UE keeps its rate under the base links)."""

    scored: np.ndarray
    cand: np.ndarray
    ue: np.ndarray
    rate: np.ndarray


def full_rates(service: RadioService, conn: np.ndarray) -> np.ndarray:
    """(station, UE) rate of every pair with all of its station's resources while the
    stations transmitting under `conn` transmit (0 where the SINR is not above the UE's
    threshold): the operations `mobrl.radio.links.link_rates` applies to each link."""
    rx = service.rx
    noise = np.broadcast_to(service.noise, conn.shape)
    on = transmitting(service.model, conn)
    others = None
    if on is not None:
        others = _interference_sets(rx, on[None])[0][None, :] - np.where(on[:, None], rx, 0.0)
    return carried_rate(service.model, rx, noise, others, service.thr, service.bw)


def keeps_powers(
    service: RadioService, conn: np.ndarray, ues: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """Whether each candidate (UE ues[i]'s links become cols[i], (n, station)) leaves every
    link's SINR as under `conn`: the same stations transmit, and the UE's own links do not
    set its SINR (no non-coherent joint transmission)."""
    model = service.model
    if model.joint_transmission != "sum_rates":
        return np.zeros(len(ues), dtype=bool)
    if model.interference != "active":
        return np.ones(len(ues), dtype=bool)
    count = conn.sum(axis=1)
    after = count[None, :] - conn[:, ues].T + cols
    return ~((after > 0) != (count > 0)[None, :]).any(axis=1)


def local_rates(
    service: RadioService, conn: np.ndarray, ues: np.ndarray, cols: np.ndarray
) -> LocalRates:
    """Each candidate's rates where they change: UE ues[i]'s links become cols[i] (n, station)
    with every other UE's as in `conn`. A change that keeps the stations' powers is scored on
    its components; one that switches a station on or off on every link, with the SINRs of
    its own transmitting stations (a UE without links keeps its rate, 0). The candidates are
    scored as networks of disjoint copies, `CHUNK_CANDIDATES` (on components) or about
    `CHUNK_LINKS` links (on every link) at a time."""
    ues = np.asarray(ues, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    if service.model.joint_transmission != "sum_rates":  # a UE's own links set its SINR
        return LocalRates(np.zeros(len(ues), dtype=bool), empty, empty, np.zeros(0))
    same = keeps_powers(service, conn, ues, cols)
    lu, lb = np.nonzero(conn.T)  # sorted by UE, then station
    sched = service.model.sched()
    base = _Base(service, conn, lu, lb, ues, cols, _starts(lu, conn.shape[1]), sched)
    parts = [_no_rates()]
    local = np.flatnonzero(same)
    if local.size:
        comps = _components(base)
        for start in range(0, len(local), CHUNK_CANDIDATES):
            parts.append(_on_components(base, comps, local[start : start + CHUNK_CANDIDATES]))
    spread = np.flatnonzero(~same)
    size = max(1, CHUNK_LINKS // max(len(lu), 1))
    for start in range(0, len(spread), size):
        parts.append(_on_every_link(base, spread[start : start + size]))
    cand, ue, rate = (np.concatenate(p) for p in zip(*parts))
    return LocalRates(np.ones(len(ues), dtype=bool), cand, ue, rate)


#: candidates scored together on their components, and links at most when every link of
#: many candidates is rescored: batches that stay in the processor's caches (a scheduler's
#: arithmetic on one copy does not depend on the others: the same numbers in any batch)
CHUNK_CANDIDATES = 128
CHUNK_LINKS = 200_000


@dataclass
class _Base:
    """The links every candidate starts from (`lu`, `lb`: each link's UE and station, sorted
    by UE, then station) and the candidates (UE ues[i]'s links become cols[i])."""

    service: RadioService
    conn: np.ndarray
    lu: np.ndarray
    lb: np.ndarray
    ues: np.ndarray
    cols: np.ndarray
    #: where each UE's links start in (lu, lb), and the end
    ue_start: np.ndarray
    sched: Scheduler

    def new_links(self, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The candidates' new stations, by candidate (CSR: starts, stations)."""
        n_i, n_b = np.nonzero(self.cols[cand])
        return _starts(n_i, len(cand)), n_b


Parts = tuple[np.ndarray, np.ndarray, np.ndarray]


def _no_rates() -> Parts:
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)


class _Components(NamedTuple):
    """The connected components of the graph of stations and UEs joined by the base's links,
    and what scoring on them reads."""

    #: each station's and each UE's component
    st_comp: np.ndarray
    ue_comp: np.ndarray
    #: per component its UEs in order (CSR: starts, UEs) and its number of links
    comp_start: np.ndarray
    comp_ues: np.ndarray
    comp_links: np.ndarray
    #: each (station, UE) pair's rate with all of its station's resources (the stations keep
    #: their powers on this path)
    full: np.ndarray


def _components(base: _Base) -> _Components:
    """The base's `_Components`."""
    from mobrl.radio._union_find import label_components

    lu, lb = base.lu, base.lb
    n_bs, n_ue = base.conn.shape
    n_comp, label = label_components(lb, lu, n_bs, n_ue)
    st_comp, ue_comp = label[:n_bs], label[n_bs:]  # int64 already
    return _Components(
        st_comp,
        ue_comp,
        _starts(ue_comp, n_comp),
        np.argsort(ue_comp, kind="stable"),
        np.bincount(st_comp[lb], minlength=n_comp),
        np.ascontiguousarray(full_rates(base.service, base.conn)),
    )


def _on_components(base: _Base, comps: _Components, cand: np.ndarray) -> Parts:
    """The candidates `cand` (their stations keep their powers) scored on the components
    `comps` of the stations they join or leave and of their UE (assembled by
    `mobrl.radio._components.assemble`)."""
    from mobrl.radio._components import assemble

    new_start, new_b = base.new_links(cand)
    gb, gu, rate, a_cand, a_ue = assemble(
        base.ues[cand], new_start, new_b, base.ue_start, base.lb, comps.st_comp, comps.ue_comp,
        comps.comp_start, comps.comp_ues, comps.comp_links, comps.full, base.conn.shape[0],
    )  # fmt: skip
    return _shared(base, cand, gb, gu, rate, a_cand, a_ue)


def _shared(base: _Base, cand: np.ndarray, gb, gu, rate, a_cand, a_ue) -> Parts:
    """(candidate, UE, rate) of each numbered UE, its copy's links shared by the scheduler."""
    n_bs = base.conn.shape[0]
    share = base.sched.shares(gb, gu, rate, len(cand) * n_bs, len(a_ue))
    after = np.bincount(gu, weights=share * rate, minlength=len(a_ue))
    return cand[a_cand], a_ue, after


def _starts(rows: np.ndarray, n: int) -> np.ndarray:
    """Where each of rows 0 .. n - 1 starts once the entries are grouped by `rows` (sorted,
    or ordered by a stable argsort), and the end (CSR)."""
    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])


def _on_every_link(base: _Base, cand: np.ndarray) -> Parts:
    """The candidates `cand` (each switches a station on or off) scored on every link, each
    link's SINR under the stations transmitting after the change (assembled by
    `mobrl.radio._components.assemble_all`)."""
    from mobrl.radio._components import assemble_all

    conn = base.conn
    n_bs = conn.shape[0]
    mover, new = base.ues[cand], base.cols[cand]
    new_start, new_b = base.new_links(cand)
    li, lbs, lus, gu, a_cand, a_ue = assemble_all(mover, new_start, new_b, base.ue_start, base.lb)
    # who transmits after each change: a station with at least one link
    on = (conn.sum(axis=1)[None, :] - conn[:, mover].T + new) > 0
    rate = _link_full_rates(base.service, conn.any(axis=1), on, li, lbs, lus)
    return _shared(base, cand, li * n_bs + lbs, gu, rate, a_cand, a_ue)


def _link_full_rates(
    service: RadioService,
    before: np.ndarray,
    on: np.ndarray,
    li: np.ndarray,
    lbs: np.ndarray,
    lus: np.ndarray,
) -> np.ndarray:
    """Each link's rate with all of its station's resources, the stations on[li] (one row
    per candidate) transmitting: `full_rates`' operations on the links alone. A link's
    interference is the sum under the stations transmitting `before` any change, plus or
    minus the power of each station a candidate switches (equal to the whole network's sum
    to rounding, about 1e-16 of it)."""
    rx = service.rx
    noise = np.broadcast_to(service.noise, rx.shape)
    total = _interference_sets(rx, before[None])[0][lus]
    f_i, f_b = np.nonzero(on != before[None, :])  # each candidate's switched stations
    sign = np.where(on[f_i, f_b], 1.0, -1.0)
    first = np.searchsorted(f_i, li)
    for k in range(int(np.bincount(f_i).max()) if f_i.size else 0):
        at = np.minimum(first + k, len(f_i) - 1)
        mine = (first + k < len(f_i)) & (f_i[at] == li)
        total = total + np.where(mine, sign[at] * rx[f_b[at], lus], 0.0)
    signal = rx[lbs, lus]
    others = total - np.where(on[li, lbs], signal, 0.0)
    return carried_rate(
        service.model, signal, noise[lbs, lus], others, service.thr[0, lus], service.bw[lbs, 0]
    )
