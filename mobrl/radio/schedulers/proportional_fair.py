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
    with several), colour by colour, until no bid moves. A UE stops once neither it nor a UE
    at one of its stations moved in the last sweep, so a network's sweeps and arithmetic
    depend on its own links alone (the same shares alone or in a batch)."""
    mb, mu, mr = b[multi], u[multi], rate[multi]
    group = np.cumsum(np.r_[True, mu[1:] != mu[:-1]]) - 1  # multi is sorted by UE
    x = bid[multi].copy()
    price = np.bincount(b, weights=bid, minlength=n_bs)
    sub = np.arange(len(multi))
    colour = _colours(mb, mu)
    for _ in range(MAX_SWEEPS):
        before = x[sub]
        if len(sub) <= _SCALAR_LINKS:  # a few coupled UEs left: plain floats are faster
            _sweep_scalar(mb[sub].tolist(), group[sub].tolist(), mr[sub].tolist(),
                          colour.tolist(), sub.tolist(), x, price)  # fmt: skip
        else:
            for c in range(int(colour.max()) + 1):
                sel = sub[colour == c]
                old = x[sel]
                new = _water_fill(mr[sel], price[mb[sel]] - old, group[sel])
                price += np.bincount(mb[sel], weights=new - old, minlength=n_bs)
                x[sel] = new
        moved = np.abs(x[sub] - before) > TOLERANCE
        if not moved.any():
            break
        # a UE keeps moving while it or a UE at one of its stations still moves
        busy = np.zeros(n_bs, dtype=bool)
        busy[mb[sub][moved]] = True
        g_busy = np.zeros(group[-1] + 1, dtype=bool)
        np.logical_or.at(g_busy, group[sub], busy[mb[sub]])
        keep = g_busy[group[sub]]
        if not keep.all():
            sub = sub[keep]
            colour = _colours(mb[sub], mu[sub])
    bid[multi] = x
    return bid


#: below this many moving links the sweeps run on Python floats (the same operations)
_SCALAR_LINKS = 48


def _water_fill(rate: np.ndarray, others: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group (one UE's links, contiguous), the bids x = max(0, rate * t - others) summing
    to 1: links by ascending level others / rate, t = (1 + sum others) / sum rate over the
    first k links for the largest k whose own level t reaches. Sums run within each group
    from its first link, so a group's bids do not depend on the other groups."""
    first = np.r_[True, group[1:] != group[:-1]]
    row = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    col = np.arange(len(group)) - starts[row]
    shape = (len(starts), int(col.max()) + 1)
    level = np.full(shape, np.inf)
    level[row, col] = others / rate
    order = np.argsort(level, axis=1, kind="stable")
    pick = (np.arange(shape[0])[:, None], order)
    r = np.zeros(shape)
    q = np.zeros(shape)
    r[row, col], q[row, col] = rate, others
    r, q, lv = r[pick], q[pick], level[pick]
    t = (1.0 + np.cumsum(q, axis=1)) / np.cumsum(r, axis=1)
    valid = t >= lv
    last = np.where(valid, np.arange(shape[1])[None, :], 0).max(axis=1)
    t_row = t[np.arange(shape[0]), last]
    return np.maximum(0.0, rate * t_row[row] - others)


def _water_fill_one(rates: list[float], others: list[float]) -> list[float]:
    """`_water_fill` of one group on Python floats, with the same operations and order."""
    levels = [q / r for q, r in zip(others, rates)]
    order = sorted(range(len(rates)), key=lambda i: (levels[i], i))
    cum_r = cum_q = 0.0
    t_last = 0.0
    for k, i in enumerate(order):
        cum_r = rates[i] if k == 0 else cum_r + rates[i]
        cum_q = others[i] if k == 0 else cum_q + others[i]
        t = (1.0 + cum_q) / cum_r
        if k == 0 or t >= levels[i]:
            t_last = t if (t >= levels[i] or k == 0) else t_last
    return [max(0.0, r * t_last - q) for r, q in zip(rates, others)]


def _sweep_scalar(
    stations: list[int],
    groups: list[int],
    rates: list[float],
    colours: list[int],
    links: list[int],
    x: np.ndarray,
    price: np.ndarray,
) -> None:
    """One sweep of the descent over a few links on Python floats, with the numpy sweep's
    operations and order: colour by colour, each UE's water-filling from the current prices
    (UEs of one colour share no station, so that is the colour's starting prices)."""
    by_group: dict[int, list[int]] = {}
    for k, g in enumerate(groups):
        by_group.setdefault(g, []).append(k)
    for g in sorted(by_group, key=lambda g: (colours[by_group[g][0]], g)):
        ks = by_group[g]
        old = [float(x[links[k]]) for k in ks]
        new = _water_fill_one(
            [rates[k] for k in ks], [float(price[stations[k]]) - o for k, o in zip(ks, old)]
        )
        for k, o, n in zip(ks, old, new):
            price[stations[k]] += n - o
            x[links[k]] = n


SCHEDULER = ProportionalFair()
