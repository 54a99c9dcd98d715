"""The team's utility of (BS, UE) link sets: what a step's service depends on (`LinkState`),
each UE's scaled utility for a set of links, the step's rule for the UEs' station actions
(`toggle`, `links_after`), each UE's marginal contribution to the team's utility, and the change
of the team's utility when UEs' links change (`column_changes`).

mobile-env serves a UE at every station it links to with the resource-fair share
`bw * log2(1 + snr) / n_b` (n_b: the station's links) and scores the summed rate with its
bounded log utility, scaled to [-1, 1] (-1: no rate, i.e. unconnected). Its central reward is
the mean of that over the active UEs. mobrl.network.service reads a `LinkState` from either
engine and searches link sets with these functions, which never change the env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mobrl.radio.links import RadioService


@dataclass
class LinkState:
    """What a step's service depends on: `cap` (BS, UE) rate of each link with all of a
    station's resources (0 out of range), `reach`, `conn` (the links up, all in range),
    `active` (UE mask) and mobile-env's utility model."""

    cap: np.ndarray
    reach: np.ndarray
    conn: np.ndarray
    active: np.ndarray
    lower: float
    upper: float
    coeffs: tuple[float, float, float]
    #: a radio model whose rates are not `cap` over a station's links (interference, another
    #: scheduler, joint transmission: mobrl.radio.links); None: mobile-env's arithmetic
    radio: RadioService | None = None

    def __post_init__(self) -> None:
        self._log_base = float(np.log(self.coeffs[2]))

    def utility(self, rate: np.ndarray) -> np.ndarray:
        """mobile-env's BoundedLogUtility of summed rates, scaled to [-1, 1] (0 rate: -1)."""
        return scaled_utility(rate, self.lower, self.upper, self.coeffs, self._log_base)

    def rates(self, conn: np.ndarray) -> np.ndarray:
        """Each UE's summed rate under the links `conn` (the last axes are (BS, UE))."""
        if self.radio is not None:
            return self.radio.rates(conn)
        counts = conn.sum(axis=-1, keepdims=True)
        return (conn * self.cap / np.maximum(counts, 1)).sum(axis=-2)

    def ue_utilities(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Each UE's scaled utility under `conn` (default: the links up); NaN where inactive."""
        util = self.utility(self.rates(self.conn if conn is None else conn))
        return np.where(self.active, util, np.nan)

    def utility_sum(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Summed scaled utility over the active UEs under `conn` (default: the links up)."""
        util = self.utility(self.rates(self.conn if conn is None else conn))
        return (util * self.active).sum(axis=-1)

    def team_utility(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Mean scaled utility over the active UEs (mobile-env's central reward)."""
        return self.utility_sum(conn) / max(int(self.active.sum()), 1)


def scaled_utility(
    rate: np.ndarray, lower: float, upper: float, coeffs: tuple[float, ...], log_base: float
) -> np.ndarray:
    """mobile-env's BoundedLogUtility (`lower`, `upper`, `coeffs`; `log_base` = log of its
    third coefficient) of summed rates, scaled to [-1, 1] (0 rate: -1), with the engine's
    operations."""
    w1, w2, _ = coeffs
    positive = rate > 0.0
    raw = np.minimum(
        np.maximum(w1 * np.log(w2 + np.where(positive, rate, 1.0)) / log_base, lower),
        upper,
    )
    raw = np.where(positive, raw, lower)
    return 2 * (raw - lower) / (upper - lower) - 1


def toggle(conn: np.ndarray, reach: np.ndarray, *where: np.ndarray) -> None:
    """The step's rule for UEs' station actions, in place: the links of `conn` at `where`
    (index arrays: (station, UE), or a sparse pair index) toggled, a join only where `reach`
    is (the step drops links out of range)."""
    conn[where] = ~conn[where] & reach[where]


def links_after(state: LinkState, actions: np.ndarray) -> np.ndarray:
    """The links after every active UE's station action (UE order; 0: keep, b + 1: toggle
    station b), as the step applies them."""
    conn = state.conn.copy()
    act = np.asarray(actions, dtype=np.int64)
    ues = np.flatnonzero((act > 0) & state.active)
    toggle(conn, state.reach, act[ues] - 1, ues)
    return conn


def marginal_utilities(state: LinkState) -> np.ndarray:
    """Each active UE's contribution to the team's summed utility: the sum with its links minus
    the sum had it no links (then its own utility is -1 and its stations' other UEs get larger
    shares). A UE changing its own links changes the team's sum by exactly the change of this
    value (a difference reward with the empty link set as the counterfactual). 0 for inactive.

    Only UEs sharing a station gain when one leaves, so the work grows with the pairs of UEs
    linked to a common station, not with UEs squared (a 100-station / 1,000-UE layout: about
    ten thousand pairs instead of a (BS, UE, UE) array); small layouts keep the dense arrays,
    which are faster there and give the same numbers (tested)."""
    if state.radio is not None:
        return _marginal_coupled(state)
    conn = state.conn
    counts = conn.sum(axis=1)
    rate = state.rates(conn)
    util = state.utility(rate)
    dense = conn.shape[0] * conn.shape[1] ** 2 <= DENSE_MARGINAL
    others = (_others_dense if dense else _others_pairs)(state, counts, rate, util)
    return np.where(state.active, util + 1.0 - others, 0.0)


#: layouts up to this many (BS, UE, UE) entries compute `marginal_utilities` densely
DENSE_MARGINAL = 200_000
#: link sets scored at once under a coupled radio model hold at most this many (BS, UE)
#: entries together (memory, not numbers: the chunks give the same values)
COUPLED_CHUNK = 2_000_000


def utility_sums(state: LinkState, sets: np.ndarray) -> np.ndarray:
    """`utility_sum` of each of the link sets `sets` (n, BS, UE), scored in chunks."""
    size = max(1, COUPLED_CHUNK // max(1, sets.shape[1] * sets.shape[2]))
    if len(sets) <= size:
        return state.utility_sum(sets)
    return np.concatenate(
        [state.utility_sum(sets[i : i + size]) for i in range(0, len(sets), size)]
    )


def column_changes(
    state: LinkState, base: np.ndarray, ues: np.ndarray, cols: np.ndarray, split: bool = False
) -> Any:
    """The change of the team's summed utility when UE ues[i]'s links become cols[i] (n, BS),
    every other UE's as in `base`, for each i (`split`: also the moving UE's own change).
    Under a radio model the rates are recomputed only where a change can move them
    (mobrl.radio.local; under non-coherent joint transmission each link set scored whole)."""
    ues = np.asarray(ues, dtype=np.int64)
    n = len(ues)
    total, own = np.zeros(n), np.zeros(n)
    if not n:
        return (total, own) if split else total
    rate = state.rates(base)
    util = state.utility(rate) * state.active
    whole = np.ones(n, dtype=bool)
    if state.radio is not None:
        from mobrl.radio.local import local_rates

        found = local_rates(state.radio, base, ues, cols)
        whole = ~found.scored
        change = state.utility(found.rate) * state.active[found.ue] - util[found.ue]
        total += np.bincount(found.cand, weights=change, minlength=n)
        mine = found.ue == ues[found.cand]
        own[found.cand[mine]] = change[mine]
    rest = np.flatnonzero(whole)
    size = max(1, COUPLED_CHUNK // max(1, base.size))
    for start in range(0, rest.size, size):  # the other sets scored whole, in chunks
        idx = rest[start : start + size]
        sets = np.repeat(base[None], idx.size, axis=0)
        sets[np.arange(idx.size), :, ues[idx]] = cols[idx]
        after = state.utility(state.rates(sets)) * state.active
        total[idx] = after.sum(axis=1) - util.sum()
        own[idx] = after[np.arange(idx.size), ues[idx]] - util[ues[idx]]
    return (total, own) if split else total


def _marginal_coupled(state: LinkState) -> np.ndarray:
    """`marginal_utilities` under a radio model where a UE's links change others' rates
    (interference, shares beyond a station): the team's sum with the UE's links minus the sum
    without them (`column_changes` to no links)."""
    conn = state.conn
    ues = np.flatnonzero(state.active & conn.any(axis=0))
    out = np.zeros(conn.shape[1])
    if ues.size:
        out[ues] = -column_changes(state, conn, ues, np.zeros((ues.size, conn.shape[0]), bool))
    # an active UE without links contributes nothing: its utility is -1 either way
    return np.where(state.active, out, 0.0)


def _others_dense(
    state: LinkState, counts: np.ndarray, rate: np.ndarray, util: np.ndarray
) -> np.ndarray:
    """Per UE i, the change of the other UEs' summed utility had i no links: (BS, UE, UE)."""
    conn, cap = state.conn, state.cap
    # extra rate UE j gets at station b when one of b's other UEs leaves it
    extra = np.where(
        counts[:, None] >= 2,
        conn * cap * (1.0 / np.maximum(counts - 1, 1) - 1.0 / np.maximum(counts, 1))[:, None],
        0.0,
    )
    # gain[i, j]: UE j's extra rate when UE i drops all its links (elementwise sum, no BLAS)
    gain = (conn[:, :, None] * extra[:, None, :]).sum(axis=0)
    np.fill_diagonal(gain, 0.0)
    return ((state.utility(rate[None, :] + gain) - util[None, :]) * state.active).sum(axis=1)


def _others_pairs(
    state: LinkState, counts: np.ndarray, rate: np.ndarray, util: np.ndarray
) -> np.ndarray:
    """`_others_dense` from the pairs of UEs linked to a common station only."""
    conn, cap = state.conn, state.cap
    ues = conn.shape[1]
    bs, ue = np.nonzero(conn)  # the links, grouped by station (row-major order)
    n = counts[bs]
    # extra rate a link's UE gets at its station when one of the station's other UEs leaves it
    extra = np.where(n >= 2, cap[bs, ue] * (1.0 / np.maximum(n - 1, 1) - 1.0 / n), 0.0)
    # every ordered pair of distinct links at one station: (leaving link p, gaining link q)
    first = np.searchsorted(bs, bs)
    p = np.repeat(np.arange(len(bs)), n)
    q = first[p] + np.arange(len(p)) - np.repeat(np.cumsum(n) - n, n)
    distinct = p != q
    p, q = p[distinct], q[distinct]
    # gain[i, j]: UE j's extra rate when UE i drops all its links (summed over shared stations)
    pairs, where = np.unique(ue[p] * ues + ue[q], return_inverse=True)
    gain = np.bincount(where, extra[q], minlength=len(pairs))
    i, j = pairs // ues, pairs % ues
    change = (state.utility(rate[j] + gain) - util[j]) * state.active[j]
    return np.bincount(i, change, minlength=ues)
