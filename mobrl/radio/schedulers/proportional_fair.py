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
updated together. Where the descent creeps, every POLISH_EVERY sweeps each connected group of
UEs still moving is solved exactly on its current support (a linear system: equal rate per
price on the links a UE bids on, bids summing to 1), kept where that is the optimum. A
network's sweeps depend on its own links alone (a UE moves again when a bid at one of its
stations moved), so a link set's shares are the same alone or in a batch.
"""

from __future__ import annotations

import numpy as np

#: a network's descent stops when no bid moves by more than this (or after MAX_SWEEPS, a
#: guard: the exact solves settle slow networks long before)
TOLERANCE = 1e-10
MAX_SWEEPS = 2000


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
            multi = _alone(b, u, rate, bid, multi, n_bs)
        if multi.size:
            bid = _descend(b, u, rate, bid, multi, n_bs)
        price = np.bincount(b, weights=bid, minlength=n_bs)
        return np.where(carries, bid / np.where(price[b] > 0, price[b], 1.0), 0.0)


def _alone(
    b: np.ndarray, u: np.ndarray, rate: np.ndarray, bid: np.ndarray, multi: np.ndarray, n_bs: int
) -> np.ndarray:
    """Settle the UEs among `multi`'s whose stations serve no other UE with several links:
    the other bids at their stations are fixed (one link, a bid of 1), so the UE's best
    response, one water-filling, is the optimum (the descent's first sweep, which its second
    confirms). Returns the links of the UEs still coupled."""
    mb, mu = b[multi], u[multi]
    sharing = np.bincount(mb, minlength=n_bs)[mb] > 1  # (multi has one link per station, UE)
    coupled = np.zeros(int(mu.max()) + 1, dtype=bool)
    coupled[mu[sharing]] = True
    alone = ~coupled[mu]
    if alone.any():
        sel = multi[alone]
        price = np.bincount(b, weights=bid, minlength=n_bs)
        group = np.cumsum(np.r_[True, u[sel][1:] != u[sel][:-1]]) - 1  # sorted by UE
        bid[sel] = _water_fill(rate[sel], price[b[sel]] - bid[sel], group)
    return multi[~alone]


def _colours(b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A colour per link of `b`, `u` (the links of UEs with several links, sorted by UE) such
    that two UEs sharing a station never have the same colour: in round c, every UE not yet
    coloured that is the first such UE at each of its stations takes colour c."""
    ue, first = np.unique(u, return_inverse=True)
    colour = np.full(len(ue), -1, dtype=np.int64)
    n_st = int(b.max()) + 1
    left = np.ones(len(b), dtype=bool)
    c = 0
    while left.any():
        lowest = np.full(n_st, len(ue))
        np.minimum.at(lowest, b[left], first[left])
        # a UE is picked unless a station of its has a lower UE still uncoloured
        blocked = np.zeros(len(ue), dtype=bool)
        blocked[first[left & (lowest[b] != first)]] = True
        pick = (colour < 0) & ~blocked
        colour[pick] = c
        left &= colour[first] < 0
        c += 1
    return colour[first]


def _descend(
    b: np.ndarray, u: np.ndarray, rate: np.ndarray, bid: np.ndarray, multi: np.ndarray, n_bs: int
) -> np.ndarray:
    """The bids of the links `multi` (the carrying links of UEs with several) at the
    optimum: block coordinate descent, colour by colour, over the UEs that may still move (a
    UE moves again whenever a bid at one of its stations moved); every POLISH_EVERY sweeps the
    connected groups of UEs still moving are solved exactly on their current support
    (`_polish`). A network's sweeps and arithmetic depend on its own links alone, so its
    shares are the same alone or in a batch."""
    mb, mu, mr = b[multi], u[multi], rate[multi]
    group = np.cumsum(np.r_[True, mu[1:] != mu[:-1]]) - 1  # multi is sorted by UE
    x = bid[multi].copy()
    price = np.bincount(b, weights=bid, minlength=n_bs)
    sub = np.arange(len(multi))
    colour = _colours(mb, mu)
    for sweep in range(1, MAX_SWEEPS + 1):
        before = x.copy()
        if sweep == 1:  # every UE's best response to the starting bids, all at once
            new = _water_fill(mr, price[mb] - x, group)
            price += np.bincount(mb, weights=new - x, minlength=n_bs)
            x = new
        elif len(sub) <= _SCALAR_LINKS:  # a few coupled UEs left: plain floats are faster
            _sweep_scalar(mb[sub].tolist(), group[sub].tolist(), mr[sub].tolist(),
                          colour.tolist(), sub.tolist(), x, price)  # fmt: skip
        else:
            for c in range(int(colour.max()) + 1):
                sel = sub[colour == c]
                old = x[sel]
                new = _water_fill(mr[sel], price[mb[sel]] - old, group[sel])
                price += np.bincount(mb[sel], weights=new - old, minlength=n_bs)
                x[sel] = new
        moving = _moving(mb, group, np.abs(x - before) > TOLERANCE, n_bs)
        if moving.any() and sweep % POLISH_EVERY == 0:
            moving &= ~_polish(mb, group, mr, x, price, moving, n_bs)
        if not moving.any():
            break
        if not np.array_equal(moving, np.isin(np.arange(len(multi)), sub)):
            sub = np.flatnonzero(moving)
            colour = _colours(mb[sub], mu[sub])
    bid[multi] = x
    return bid


def _moving(mb: np.ndarray, group: np.ndarray, moved: np.ndarray, n_bs: int) -> np.ndarray:
    """The links of every UE with a link at a station where a bid moved: their best bids may
    have changed (whether or not they moved themselves)."""
    busy = np.zeros(n_bs, dtype=bool)
    busy[mb[moved]] = True
    ues = np.zeros(group[-1] + 1, dtype=bool)
    np.logical_or.at(ues, group, busy[mb])
    return ues[group]


#: sweeps between exact solves of the UEs still moving
POLISH_EVERY = 3


def _polish(
    mb: np.ndarray,
    group: np.ndarray,
    mr: np.ndarray,
    x: np.ndarray,
    price: np.ndarray,
    moving: np.ndarray,
    n_bs: int,
) -> np.ndarray:
    """Solve each connected group of moving UEs (linked through shared stations) exactly on
    its current support: on the links it bids on, rate / price is the same (its rate per
    unit of budget, 1 / mu), its bids sum to 1, and a station's price is the others' bids on
    it plus these. Kept where the solution is an optimum (no negative bid, no unused link with
    a better rate per price); returns the links settled so."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    links = np.flatnonzero(moving)
    done = np.zeros(len(x), dtype=bool)
    ues = np.unique(group[links])
    # components of the graph of these UEs and their stations
    n_ue = len(ues)
    ue_of = np.searchsorted(ues, group[links])
    graph = coo_matrix((np.ones(len(links)), (ue_of, n_ue + mb[links])), shape=(n_ue + n_bs,) * 2)
    _, label = connected_components(graph, directed=False)
    comp = label[ue_of]
    # each component's links in their order, components in the order of their labels
    order = np.argsort(comp, kind="stable")
    bounds = np.flatnonzero(np.r_[True, comp[order][1:] != comp[order][:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        ls = links[order[a:b]]
        solved = _solve_support(mb[ls], group[ls], mr[ls], x[ls], price)
        if solved is not None:
            # the bids' change summed per station, then added (a batch of many networks has
            # many stations: only this component's are touched)
            stations, at = np.unique(mb[ls], return_inverse=True)
            price[stations] += np.bincount(at, weights=solved - x[ls])
            x[ls] = solved
            done[ls] = True
    return done


def _solve_support(
    st: np.ndarray, grp: np.ndarray, r: np.ndarray, x: np.ndarray, price: np.ndarray
) -> np.ndarray | None:
    """The bids of one connected group's links at the optimum, by an active-set search from
    the links with a positive bid now: solve for that support, then drop a link whose bid
    came out negative or add the unused link with the best rate per price over its UE's,
    until the solution is an optimum (None if none is found in a few tries)."""
    stations, s_idx = np.unique(st, return_inverse=True)
    _, g_idx = np.unique(grp, return_inverse=True)
    others = price[stations] - np.bincount(s_idx, weights=x, minlength=len(stations))
    active = _forest(x, s_idx, g_idx)
    for _ in range(_ACTIVE_SET_TRIES):
        solved = _solve_on(active, s_idx, g_idx, r, others)
        if solved is None:
            return None
        bids, mu, p = solved
        scale = max(1.0, float(np.abs(p).max()))
        if bids.min() < -1e-12:
            active[int(np.argmin(bids))] = False
            continue
        if (mu <= 0).any() or (p <= 0).any():
            return None
        # no unused link may give its UE more per unit of budget than the links in use
        excess = np.where(active, -np.inf, r * mu[g_idx] - p[s_idx])
        if excess.max() > 1e-12 * scale:
            active[int(np.argmax(excess))] = True
            continue
        return np.maximum(bids, 0.0)
    return None


def _forest(x: np.ndarray, s_idx: np.ndarray, g_idx: np.ndarray) -> np.ndarray:
    """The links with a positive bid, largest first, without those that would close a cycle
    of UEs and stations: an optimum's links in use form a forest except at exact ties (two
    UEs bidding on the same two stations need equal rate ratios), and on a cycle the system
    of `_solve_on` is singular."""
    n_g = int(g_idx.max()) + 1
    parent = list(range(n_g + int(s_idx.max()) + 1))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    keep = np.zeros(len(x), dtype=bool)
    for k in np.argsort(-x, kind="stable").tolist():
        if x[k] <= 0.0:
            break
        a, b = root(int(g_idx[k])), root(n_g + int(s_idx[k]))
        if a != b:
            parent[a] = b
            keep[k] = True
    return keep


#: active-set corrections tried per exact solve
_ACTIVE_SET_TRIES = 12


def _solve_on(
    active: np.ndarray, s_idx: np.ndarray, g_idx: np.ndarray, r: np.ndarray, others: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(bids, mu, prices) with the bids on the `active` links: on each, r mu_g equals its
    station's price (the others' bids there plus these); each UE's bids sum to 1."""
    act = np.flatnonzero(active)
    n_a, n_g = len(act), int(g_idx.max()) + 1
    if np.bincount(g_idx[act], minlength=n_g).min() == 0:
        return None  # a UE with no link in use: no budget spent, not an optimum
    # rows: each link in use (r mu_g - the bids on its station), then each UE (its bids);
    # columns: the bids of the links in use, then each UE's mu
    st, grp = s_idx[act], g_idx[act]
    rhs = np.concatenate([others[st], np.ones(n_g)])
    if n_a + n_g <= _DENSE_UNKNOWNS:
        m = np.zeros((n_a + n_g, n_a + n_g))
        m[:n_a, :n_a] = -(st[:, None] == st[None, :]).astype(float)
        m[np.arange(n_a), n_a + grp] = r[act]
        m[n_a + grp, np.arange(n_a)] = 1.0
        try:
            sol = np.linalg.solve(m, rhs)
        except np.linalg.LinAlgError:
            return None
        # a nearly singular system (a cycle of links at a tie) solves to noise: refused
        if not np.isfinite(sol).all() or np.abs(m @ sol - rhs).max() > 1e-9 * (
            1.0 + np.abs(rhs).max()
        ):
            return None
    else:
        sol = _sparse_solve(st, grp, r[act], rhs, n_a, n_g)
        if sol is None:
            return None
    bids = np.zeros(len(active))
    bids[act] = sol[:n_a]
    p = others + np.bincount(s_idx, weights=bids, minlength=len(others))
    return bids, sol[n_a:], p


#: systems up to this many unknowns are solved dense (faster at this size than sparse)
_DENSE_UNKNOWNS = 96


def _sparse_solve(
    st: np.ndarray, grp: np.ndarray, r: np.ndarray, rhs: np.ndarray, n_a: int, n_g: int
) -> np.ndarray | None:
    """`_solve_on`'s system of a large group, sparse (None where it is singular)."""
    import warnings

    from scipy.sparse import csc_matrix
    from scipy.sparse.linalg import MatrixRankWarning, spsolve

    i, j = np.nonzero(st[:, None] == st[None, :])
    rows = np.concatenate([i, np.arange(n_a), n_a + grp])
    cols = np.concatenate([j, n_a + grp, np.arange(n_a)])
    vals = np.concatenate([-np.ones(len(i)), r, np.ones(n_a)])
    m = csc_matrix((vals, (rows, cols)), shape=(n_a + n_g, n_a + n_g))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MatrixRankWarning)
        try:
            sol = spsolve(m, rhs)
        except (MatrixRankWarning, RuntimeError):
            return None
    return sol if np.isfinite(sol).all() else None


#: below this many moving links the sweeps run on Python floats (the same operations)
_SCALAR_LINKS = 48


def _water_fill(rate: np.ndarray, others: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group (one UE's links, contiguous), the bids x = max(0, rate * t - others) summing
    to 1 (see `_water_fill_any`); groups of two links in closed form, with the same operations
    and so the same bits."""
    first = np.r_[True, group[1:] != group[:-1]]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.r_[starts, len(group)])
    if (sizes == 2).all():
        return _water_fill_pairs(rate, others)
    if not (sizes == 2).any():
        return _water_fill_any(rate, others, group)
    pair = np.repeat(sizes == 2, sizes)
    out = np.empty(len(rate))
    out[pair] = _water_fill_pairs(rate[pair], others[pair])
    out[~pair] = _water_fill_any(rate[~pair], others[~pair], group[~pair])
    return out


def _water_fill_pairs(rate: np.ndarray, others: np.ndarray) -> np.ndarray:
    """`_water_fill_any` of consecutive pairs of links, without sorting: the lower level's
    link alone, t = (1 + q) / r, unless both links' t = (1 + (q1 + q2)) / (r1 + r2) reaches
    the other's level."""
    r1, r2, q1, q2 = rate[0::2], rate[1::2], others[0::2], others[1::2]
    l1, l2 = q1 / r1, q2 / r2
    first_low = l1 <= l2  # the stable order: ties keep the first link first
    t_one = np.where(first_low, (1.0 + q1) / r1, (1.0 + q2) / r2)
    t_two = (1.0 + (q1 + q2)) / (r1 + r2)
    t = np.where(t_two >= np.where(first_low, l2, l1), t_two, t_one)
    return np.maximum(0.0, rate * np.repeat(t, 2) - others)


def _water_fill_any(rate: np.ndarray, others: np.ndarray, group: np.ndarray) -> np.ndarray:
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
