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
price on the links a UE bids on, bids summing to 1), kept where that is the optimum; the
groups' systems of one shape are solved as one stack, each still its own LAPACK call. A
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
    a better rate per price); returns the links settled so. The groups share no station, so
    they are solved together (`_Supports`), each with its own arithmetic alone."""
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
    ls = links[order]
    solved, ok = _Supports(mb[ls], group[ls], mr[ls], x[ls], price, comp[order]).solve()
    if ok.any():
        # the bids' change summed per station (each station is one component's), then added
        kept = ls[ok]
        stations, at = np.unique(mb[kept], return_inverse=True)
        price[stations] += np.bincount(at, weights=solved[ok] - x[kept])
        x[kept] = solved[ok]
        done[kept] = True
    return done


#: up to this many links with a positive bid, the forest is walked without looking for cycles
_WALK_LINKS = 64
#: active-set corrections tried per exact solve
_ACTIVE_SET_TRIES = 12
#: systems up to this many unknowns are solved dense (faster at this size than sparse)
_DENSE_UNKNOWNS = 96


class _Supports:
    """The bids at the optimum of many connected groups of links at once (links component by
    component, `comp` their component), by an active-set search per group from the links
    with a positive bid now: solve for that support, then drop a link whose bid came out
    negative or add the unused link with the best rate per price over its UE's, until the
    solution is an optimum (a group fails if none is found in _ACTIVE_SET_TRIES tries).

    On the links in use, r mu_g equals the station's price (the others' bids there plus
    these) and each UE's bids sum to 1: a linear system per group, solved by LAPACK one
    system at a time (numpy's stacked solve), so a group's numbers are the same whichever
    groups it is solved with."""

    def __init__(
        self,
        st: np.ndarray,
        grp: np.ndarray,
        r: np.ndarray,
        x: np.ndarray,
        price: np.ndarray,
        comp: np.ndarray,
    ) -> None:
        self.r, self.comp = r, comp
        self.n_comp = int(comp[-1]) + 1
        self.bounds = np.searchsorted(comp, np.arange(self.n_comp + 1))
        # per component its stations and UEs, each sorted, numbered one after the other
        n_st, n_grp = int(st.max()) + 1, int(grp.max()) + 1
        s_key, self.s = np.unique(comp * n_st + st, return_inverse=True)
        g_key, self.g = np.unique(comp * n_grp + grp, return_inverse=True)
        self.s_comp, self.g_comp = s_key // n_st, g_key // n_grp
        s_first = np.searchsorted(self.s_comp, np.arange(self.n_comp))
        #: each component's UEs: g_bounds[c]:g_bounds[c + 1]
        self.g_bounds = np.searchsorted(self.g_comp, np.arange(self.n_comp + 1))
        self.s_loc, self.g_loc = self.s - s_first[comp], self.g - self.g_bounds[comp]
        self.others = price[s_key % n_st] - np.bincount(self.s, weights=x, minlength=len(s_key))
        self.active = self._forest(x)

    def _forest(self, x: np.ndarray) -> np.ndarray:
        """The links with a positive bid, largest first within each group, without those that
        would close a cycle of UEs and stations: an optimum's links in use form a forest
        except at exact ties (two UEs bidding on the same two stations need equal rate
        ratios), and on a cycle the system is singular."""
        n_g = len(self.g_comp)
        parent = list(range(n_g + len(self.s_comp)))

        def root(k: int) -> int:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        keep = x > 0.0
        # where the links with a positive bid hold no cycle (each of their connected parts
        # has one edge fewer than nodes) they are the forest: only the others are walked
        cyclic = self._cyclic(keep) if keep.sum() > _WALK_LINKS else np.ones(self.n_comp, bool)
        g, s = self.g.tolist(), (self.s + n_g).tolist()
        walk = cyclic[self.comp] & keep
        keep &= ~walk
        order = np.lexsort((-x, self.comp))  # largest bid first; ties in link order
        for k in order[walk[order]].tolist():
            a, b = root(g[k]), root(s[k])
            if a != b:
                parent[a] = b
                keep[k] = True
        return keep

    def _cyclic(self, used: np.ndarray) -> np.ndarray:
        """Per component, whether its links `used` close a cycle of UEs and stations."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        n_g, n_s = len(self.g_comp), len(self.s_comp)
        a, b = self.g[used], n_g + self.s[used]
        graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n_g + n_s,) * 2)
        _, part = connected_components(graph, directed=False)
        edges = np.bincount(part[a], minlength=part.max() + 1)
        touched = np.zeros(part.max() + 1, dtype=bool)
        touched[part[a]] = True
        nodes = np.bincount(part[touched[part]], minlength=part.max() + 1)
        cycle = edges > nodes - 1
        out = np.zeros(self.n_comp, dtype=bool)
        out[self.comp[used][cycle[part[a]]]] = True
        return out

    def solve(self) -> tuple[np.ndarray, np.ndarray]:
        """(bids, solved): the optimum's bids of every link, and which links' groups found
        it."""
        n = len(self.r)
        bids = np.zeros(n)
        state = np.zeros(self.n_comp, dtype=np.int8)  # 0: searching, 1: solved, -1: failed
        for _ in range(_ACTIVE_SET_TRIES):
            pending = np.flatnonzero(state == 0)
            if not pending.size:
                break
            self._try(pending, state, bids)
        solved = state[self.comp] == 1
        return np.where(solved, np.maximum(bids, 0.0), 0.0), solved

    def _try(self, pending: np.ndarray, state: np.ndarray, out: np.ndarray) -> None:
        """One try of every component in `pending`: solve on its support, then accept it,
        fail it, or move its support by one link."""
        in_try = np.zeros(self.n_comp, dtype=bool)
        in_try[pending] = True
        link = in_try[self.comp]
        solved = self._systems(in_try, state)  # (bids per link, mu per UE, ok per component)
        if solved is None:
            return
        bids, mu, ok = solved
        live = link & ok[self.comp]
        p = self.others + np.bincount(self.s, weights=np.where(live, bids, 0.0),
                                      minlength=len(self.others))  # fmt: skip
        # a negative bid: drop the most negative link (the first of equals) and try again
        low = _first_per(np.where(live, bids, np.inf), self.comp, self.bounds, lowest=True)
        drop = ok & in_try & (bids[low] < -1e-12)
        self.active[low[drop]] = False
        ok &= ~drop
        # no price or budget rate may be <= 0 (not an optimum)
        bad = np.zeros(self.n_comp, dtype=bool)
        np.logical_or.at(bad, self.g_comp, mu <= 0)
        np.logical_or.at(bad, self.s_comp, p <= 0)
        state[ok & in_try & bad] = -1
        ok &= ~bad
        # no unused link may give its UE more per unit of budget than the links in use
        scale = np.ones(self.n_comp)
        np.maximum.at(scale, self.s_comp, np.abs(p))
        excess = np.where(self.active | ~live, -np.inf, self.r * mu[self.g] - p[self.s])
        high = _first_per(excess, self.comp, self.bounds, lowest=False)
        add = ok & in_try & (excess[high] > 1e-12 * scale)
        self.active[high[add]] = True
        done = ok & in_try & ~add
        state[done] = 1
        take = done[self.comp]
        out[take] = bids[take]

    def _systems(
        self, in_try: np.ndarray, state: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every trying component's system on its support: (bids per link, 0 off the
        support; mu per UE; whether it solved). A component with a UE without a link in use,
        or a singular system, fails (`state` -1)."""
        act = self.active & in_try[self.comp]
        n_a = np.bincount(self.comp[act], minlength=self.n_comp)
        n_g = np.diff(self.g_bounds)
        used = np.bincount(self.g[act], minlength=len(self.g_comp))
        empty = np.zeros(self.n_comp, dtype=bool)
        np.logical_or.at(empty, self.g_comp, used == 0)
        failed = in_try & empty
        state[failed] = -1
        todo = np.flatnonzero(in_try & ~failed)
        if not todo.size:
            return None
        bids = np.zeros(len(self.r))
        mu = np.zeros(len(self.g_comp))
        ok = np.zeros(self.n_comp, dtype=bool)
        links = np.flatnonzero(act & ~failed[self.comp])  # component by component, in order
        size = n_a + n_g
        sparse = todo[size[todo] > _DENSE_UNKNOWNS]
        dense = todo[size[todo] <= _DENSE_UNKNOWNS]
        rows = np.searchsorted(self.comp[links], np.arange(self.n_comp + 1))
        for c in sparse.tolist():
            ls = links[rows[c] : rows[c + 1]]
            rhs = np.concatenate([self.others[self.s[ls]], np.ones(n_g[c])])
            sol = _sparse_solve(self.s_loc[ls], self.g_loc[ls], self.r[ls], rhs, len(ls), n_g[c])
            if sol is None:
                state[c] = -1
                continue
            bids[ls] = sol[: len(ls)]
            mu[self.g_bounds[c] : self.g_bounds[c + 1]] = sol[len(ls) :]
            ok[c] = True
        if dense.size:
            # systems of one shape (links in use, UEs) stacked
            shape_key = n_a[dense] * (_DENSE_UNKNOWNS + 1) + n_g[dense]
            for key in np.unique(shape_key).tolist():
                cs = dense[shape_key == key]
                self._dense(cs, int(n_a[cs[0]]), int(n_g[cs[0]]), links, rows,
                            bids, mu, ok, state)  # fmt: skip
        return bids, mu, ok

    def _dense(
        self,
        cs: np.ndarray,
        n_a: int,
        n_g: int,
        links: np.ndarray,
        rows: np.ndarray,
        bids: np.ndarray,
        mu: np.ndarray,
        ok: np.ndarray,
        state: np.ndarray,
    ) -> None:
        """The systems of components `cs`, each with n_a links in use and n_g UEs: rows each
        link in use (r mu_g - the bids on its station), then each UE (its bids); columns the
        bids of the links in use, then each UE's mu."""
        m, n = len(cs), n_a + n_g
        ls = links[rows[cs][:, None] + np.arange(n_a)[None, :]]  # (m, n_a)
        st, grp = self.s_loc[ls], self.g_loc[ls]
        mat = np.zeros((m, n, n))
        mat[:, :n_a, :n_a] = -(st[:, :, None] == st[:, None, :]).astype(float)
        item, i = np.repeat(np.arange(m), n_a), np.tile(np.arange(n_a), m)
        mat[item, i, n_a + grp.ravel()] = self.r[ls].ravel()
        mat[item, n_a + grp.ravel(), i] = 1.0
        rhs = np.concatenate([self.others[self.s[ls]], np.ones((m, n_g))], axis=1)
        sol = _stacked_solve(mat, rhs)
        # a nearly singular system (a cycle of links at a tie) solves to noise: refused
        resid = np.abs((mat @ sol[:, :, None])[:, :, 0] - rhs).max(axis=1)
        good = np.isfinite(sol).all(axis=1) & ~(resid > 1e-9 * (1.0 + np.abs(rhs).max(axis=1)))
        state[cs[~good]] = -1
        ok[cs[good]] = True
        bids[ls[good]] = sol[good, :n_a]
        g_of = self.g_bounds[cs[good]][:, None] + np.arange(n_g)[None, :]
        mu[g_of] = sol[good, n_a:]


def _stacked_solve(mat: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Each system of the stack `mat` (m, n, n) with right side `rhs` (m, n) solved, NaN for a
    singular one. numpy refuses a whole stack for one singular system; then those are found by
    their LU factorisation's exactly zero pivot (`slogdet`'s sign 0, where LAPACK's solve
    stops too) and the others solved. Each system is one LAPACK call, whatever the stack."""
    try:
        return np.linalg.solve(mat, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        pass
    sign, _ = np.linalg.slogdet(mat)
    sol = np.full(rhs.shape, np.nan)
    good = np.flatnonzero(sign != 0)
    try:
        sol[good] = np.linalg.solve(mat[good], rhs[good][:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # not expected (the same factorisation): one at a time
        for k in good.tolist():
            try:
                sol[k] = np.linalg.solve(mat[k : k + 1], rhs[k : k + 1, :, None])[0, :, 0]
            except np.linalg.LinAlgError:
                pass
    return sol


def _first_per(
    values: np.ndarray, comp: np.ndarray, bounds: np.ndarray, lowest: bool
) -> np.ndarray:
    """Per component (its links `bounds[c]:bounds[c + 1]`, in order), the index of its first
    lowest (`lowest`) or highest value."""
    order = np.lexsort((values if lowest else -values, comp))  # stable: equals in link order
    return order[bounds[:-1]]


def _sparse_solve(
    st: np.ndarray, grp: np.ndarray, r: np.ndarray, rhs: np.ndarray, n_a: int, n_g: int
) -> np.ndarray | None:
    """A large group's system, sparse (None where it is singular)."""
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
