"""Proportional fair: the shares that maximise the sum over UEs of log(rate), each UE's rate
summed over its links (Kelly's proportional fairness, Kelly 1997).

A proportional-fair scheduler serves, at each slot, the UE with the highest ratio of its
instantaneous rate to its average throughput. Without fast fading, with a UE's throughput
counted over all its stations, these per-station decisions converge to the allocation that
maximises sum log(rate_u) subject to each station's shares summing to one (Kushner &
Whiting 2004; Stolyar 2005). With one link per UE that is equal time shares, the same as
resource-fair; a UE linked to several stations gets less from each, which leaves more for
UEs with one station.

That allocation is the equilibrium of a Fisher market with equal budgets (Eisenberg & Gale
1959): each UE spends a budget of 1 on its links, a station's shares are the bids on it over
their sum (its price), and at the optimum each UE spends only on the links with the highest
rate per price. It minimises the convex Shmyrev (2009) objective
sum_b p_b log p_b - sum_links x log rate over the bids x (p_b: the bids on b). A UE with one
link bids 1 on it; the bids of UEs with several links are found by block coordinate descent:
one UE's best bids, the others' held, are a water-filling (x_b = max(0, rate_b t - q_b) with
q_b the others' bids on b and t such that they sum to 1), and UEs that share no station are
updated together. Each network (a link set of a batch) stops when no bid moves by more than
TOLERANCE, so a set's shares do not depend on what else is computed with it.
"""

from __future__ import annotations

import numpy as np

#: a network's descent stops when no bid moves by more than this, or after MAX_SWEEPS
TOLERANCE = 1e-10
MAX_SWEEPS = 200


class ProportionalFair:
    name = "proportional_fair"
    source = "Kelly (1997): shares maximising sum log(rate) (Eisenberg-Gale equilibrium)"

    def shares(
        self, b: np.ndarray, u: np.ndarray, rate: np.ndarray, n_bs: int, n_ue: int
    ) -> np.ndarray:
        carries = rate > 0.0
        links = np.bincount(u[carries], minlength=n_ue)
        bid = np.where(carries, 1.0 / np.maximum(links[u], 1), 0.0)
        multi = np.flatnonzero(carries & (links[u] > 1))
        if multi.size:
            bid = _descend(b, u, rate, bid, multi, n_bs)
        price = np.bincount(b, weights=bid, minlength=n_bs)
        return np.where(carries, bid / np.where(price[b] > 0, price[b], 1.0), 0.0)


def _colours(b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A colour per link of `b`, `u` (the links of UEs with several links) such that two UEs
    sharing a station never have the same colour: greedy in UE order."""
    colour_of: dict[int, int] = {}
    used: dict[int, set[int]] = {}
    ues = u.tolist()
    stations = b.tolist()
    start = 0
    while start < len(ues):
        end = start
        while end < len(ues) and ues[end] == ues[start]:
            end += 1
        taken = set().union(*(used.get(s, set()) for s in stations[start:end]))
        c = 0
        while c in taken:
            c += 1
        colour_of[ues[start]] = c
        for s in stations[start:end]:
            used.setdefault(s, set()).add(c)
        start = end
    return np.array([colour_of[x] for x in ues], dtype=np.int64)


def _descend(
    b: np.ndarray, u: np.ndarray, rate: np.ndarray, bid: np.ndarray, multi: np.ndarray, n_bs: int
) -> np.ndarray:
    """Block coordinate descent on the bids of the links `multi` (the carrying links of UEs
    with several), colour by colour, until no bid moves (per network: stations are grouped
    into networks by the caller's numbering only through which UEs link them)."""
    mb, mu, mr = b[multi], u[multi], rate[multi]
    colour = _colours(mb, mu)
    # links of each UE sorted together: groups of one UE (multi is sorted by UE already)
    group_start = np.r_[True, mu[1:] != mu[:-1]]
    group = np.cumsum(group_start) - 1
    # networks: connected components would be exact; stations suffice to stop a UE group's
    # sweeps once its own bids and its stations' prices settle (see `moving`)
    moving = np.ones(group[-1] + 1, dtype=bool)
    x = bid[multi].copy()
    for _ in range(MAX_SWEEPS):
        before = x.copy()
        for c in range(int(colour.max()) + 1):
            sel = np.flatnonzero((colour == c) & moving[group])
            if not sel.size:
                continue
            bid[multi] = x
            price = np.bincount(b, weights=bid, minlength=n_bs)
            others = price[mb[sel]] - x[sel]
            x[sel] = _water_fill(mr[sel], others, group[sel])
        change = np.zeros(len(moving))
        np.maximum.at(change, group, np.abs(x - before))
        # a UE keeps moving while it or a UE at one of its stations still moves
        station_moves = np.zeros(n_bs, dtype=bool)
        station_moves[mb[change[group] > TOLERANCE]] = True
        still = np.zeros(len(moving), dtype=bool)
        np.logical_or.at(still, group, station_moves[mb])
        moving &= still
        if not moving.any():
            break
    bid[multi] = x
    return bid


def _water_fill(rate: np.ndarray, others: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group (one UE's links), the bids x = max(0, rate * t - others) summing to 1."""
    level = others / rate  # the t above which a link gets a bid
    order = np.lexsort((level, group))
    g, r, q, lv = group[order], rate[order], others[order], level[order]
    first = np.r_[True, g[1:] != g[:-1]]
    starts = np.flatnonzero(first)
    idx = np.arange(len(g))
    begin = starts[np.cumsum(first) - 1]
    cum_r = np.cumsum(r)
    cum_q = np.cumsum(q)
    base_r = np.where(begin > 0, cum_r[begin - 1], 0.0)
    base_q = np.where(begin > 0, cum_q[begin - 1], 0.0)
    # with the first k links of the group bidding: t = (1 + sum q) / sum r
    t = (1.0 + (cum_q - base_q)) / (cum_r - base_r)
    valid = t >= lv  # the k-th link's own level is reached
    # the largest valid k of each group (valid is a prefix: levels ascend, t moves between)
    last = np.zeros(len(starts), dtype=np.int64)
    np.maximum.at(last, np.cumsum(first) - 1, np.where(valid, idx, 0))
    t_group = t[last]
    out = np.empty(len(g))
    out[order] = np.maximum(0.0, r * t_group[np.cumsum(first) - 1] - q)
    return out


SCHEDULER = ProportionalFair()
