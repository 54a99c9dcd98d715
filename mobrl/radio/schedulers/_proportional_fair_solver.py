"""The solver of `mobrl.radio.schedulers.proportional_fair` (see its notes on the model),
compiled with numba.

A UE with one link bids 1 on it. The UEs with several links fall into groups joined through
shared stations (the connected parts of the graph of those UEs and their stations), and each
group is solved on its own:

1. Block coordinate descent, UE after UE in index order: one UE's best bids, the others'
   held, are a water-filling (x_b = max(0, rate_b t - q_b) with q_b the others' bids on b and
   t such that they sum to 1). A group of one UE is solved by its first water-filling.
2. Every POLISH_EVERY sweeps, and once the bids stop moving (by TOLERANCE), the group is
   solved exactly on its links with a positive bid: there rate * mu_u equals the station's
   price (1 / mu_u: the UE's rate per unit of budget) and each UE's bids sum to 1. Those links
   form a forest of UEs and stations (an optimum's do, except at exact ties; a link that would
   close a cycle is left out, the smallest bid first), and on a tree the system is solved in
   one pass: every price and mu is a multiple of the root UE's mu, fixed by the budgets
   summing to the prices, then the bids from the leaves in. An active-set search moves the
   support (drop the most negative bid, or add the unused link with the best rate per price
   over its UE's) until the solution is the optimum (Kelly's conditions to 1e-12), within
   ACTIVE_SET_TRIES tries; otherwise the descent goes on.

A group's arithmetic depends on its own links alone, in their order, so a network's shares
are the same to the bit alone or in a batch of disjoint copies (the references' batches).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mobrl.radio._union_find import root as _root

#: a group's descent stops when no bid moves by more than this (or after MAX_SWEEPS, a guard:
#: the exact solves settle slow groups long before)
TOLERANCE = 1e-10
MAX_SWEEPS = 2000
#: sweeps between exact solves
POLISH_EVERY = 3
#: moves of the support tried per exact solve
ACTIVE_SET_TRIES = 12
#: a bid below -this is negative; an unused link better by more than this (times the group's
#: largest price) would be used: the exact solve is then not the optimum
KKT_EPS = 1e-12


@njit(cache=True)
def solve(b, u, rate, n_bs, n_ue):
    """`ProportionalFair.shares`: one link bids 1, the groups of UEs with several links are
    solved one by one (`_solve_group`), then each link's share is its bid over its station's
    price."""
    n = len(b)
    links = np.zeros(n_ue, np.int64)
    for i in range(n):
        if rate[i] > 0.0:
            links[u[i]] += 1
    bid = np.zeros(n)
    fixed = np.zeros(n_bs)  # the bids of UEs with one link, per station
    # the carrying links of each UE with several, in link order (CSR by UE)
    start = np.zeros(n_ue + 1, np.int64)
    for i in range(n):
        if rate[i] > 0.0:
            if links[u[i]] == 1:
                bid[i] = 1.0
                fixed[b[i]] += 1.0
            else:
                bid[i] = 1.0 / links[u[i]]
                start[u[i] + 1] += 1
    for g in range(n_ue):
        start[g + 1] += start[g]
    own = np.empty(start[n_ue], np.int64)
    fill = start[:-1].copy()
    for i in range(n):
        if rate[i] > 0.0 and links[u[i]] > 1:
            own[fill[u[i]]] = i
            fill[u[i]] += 1
    # groups: UEs with several links joined through shared stations (UE g: node g, station s:
    # node n_ue + s)
    parent = np.arange(n_ue + n_bs)
    for i in own:
        a, c = _root(parent, u[i]), _root(parent, n_ue + b[i])
        if a != c:
            parent[max(a, c)] = min(a, c)
    group_of = np.full(n_ue + n_bs, -1, np.int64)
    n_groups = 0
    g_count = np.zeros(n_ue, np.int64)
    for g in range(n_ue):
        if links[g] > 1:
            r = _root(parent, g)
            if group_of[r] < 0:
                group_of[r] = n_groups
                n_groups += 1
            g_count[group_of[r]] += 1
    g_start = np.zeros(n_groups + 1, np.int64)
    for k in range(n_groups):
        g_start[k + 1] = g_start[k] + g_count[k]
    members = np.empty(g_start[n_groups], np.int64)
    g_fill = g_start[:-1].copy()
    for g in range(n_ue):
        if links[g] > 1:
            k = group_of[_root(parent, g)]
            members[g_fill[k]] = g
            g_fill[k] += 1
    st_local = np.full(n_bs, -1, np.int64)
    for k in range(n_groups):
        _solve_group(
            members[g_start[k] : g_start[k + 1]], start, own, b, rate, bid, fixed, st_local
        )
    # each station's price, summed in link order
    total = np.zeros(n_bs)
    for i in range(n):
        total[b[i]] += bid[i]
    share = np.zeros(n)
    for i in range(n):
        if rate[i] > 0.0 and total[b[i]] > 0.0:
            share[i] = bid[i] / total[b[i]]
    return share


@njit(cache=True)
def _solve_group(ues, start, own, b, rate, bid, fixed, st_local):
    """The bids of one group's links (its UEs `ues`, each with several links) at the optimum,
    written into `bid`; the group's stations are numbered locally in `st_local` (reset to -1
    after)."""
    n_g = len(ues)
    n_l = 0
    for g in ues:
        n_l += start[g + 1] - start[g]
    lk = np.empty(n_l, np.int64)  # each link's index in the call
    lg = np.empty(n_l, np.int64)  # its UE, 0 .. n_g - 1
    ls = np.empty(n_l, np.int64)  # its station, 0 .. n_s - 1 in order of first link
    u_start = np.empty(n_g + 1, np.int64)
    stations = np.empty(n_l, np.int64)
    n_s = 0
    p = 0
    for j in range(n_g):
        g = ues[j]
        u_start[j] = p
        for q in range(start[g], start[g + 1]):
            i = own[q]
            lk[p], lg[p] = i, j
            s = b[i]
            if st_local[s] < 0:
                st_local[s] = n_s
                stations[n_s] = s
                n_s += 1
            ls[p] = st_local[s]
            p += 1
    u_start[n_g] = n_l
    r = np.empty(n_l)
    x = np.empty(n_l)
    for p in range(n_l):
        r[p], x[p] = rate[lk[p]], bid[lk[p]]
    fx = np.empty(n_s)
    for s in range(n_s):
        fx[s] = fixed[stations[s]]
        st_local[stations[s]] = -1
    price = fx.copy()
    for p in range(n_l):
        price[ls[p]] += x[p]
    most = 0
    for j in range(n_g):
        most = max(most, u_start[j + 1] - u_start[j])
    q = np.empty(most)
    new = np.empty(most)
    order = np.empty(most, np.int64)
    level = np.empty(most)
    for sweep in range(1, MAX_SWEEPS + 1):
        change = 0.0
        for j in range(n_g):
            a, e = u_start[j], u_start[j + 1]
            for p in range(a, e):
                q[p - a] = price[ls[p]] - x[p]
            _water_fill(r[a:e], q, new, order, level)
            for p in range(a, e):
                d = new[p - a] - x[p]
                price[ls[p]] += d
                change = max(change, abs(d))
                x[p] = new[p - a]
        if n_g == 1:  # one UE: its best response to the others' fixed bids is the optimum
            break
        settled = change <= TOLERANCE
        if (settled or sweep % POLISH_EVERY == 0) and _exact(n_g, n_s, lg, ls, r, x, fx):
            break
        if settled:
            break
    for p in range(n_l):
        bid[lk[p]] = x[p]


@njit(cache=True)
def _water_fill(r, q, out, order, level):
    """One UE's bids x = max(0, r t - q) summing to 1 (r its links' rates, q the others' bids
    on their stations): links by ascending level q / r (ties in link order), t = (1 + sum q) /
    sum r over the first k links for the largest k whose own level t reaches."""
    k = len(r)
    for i in range(k):
        level[i] = q[i] / r[i]
        m = i
        while m > 0 and level[order[m - 1]] > level[i]:
            order[m] = order[m - 1]
            m -= 1
        order[m] = i
    cum_r = 0.0
    cum_q = 0.0
    t_last = 0.0
    for m in range(k):
        i = order[m]
        cum_r = r[i] if m == 0 else cum_r + r[i]
        cum_q = q[i] if m == 0 else cum_q + q[i]
        t = (1.0 + cum_q) / cum_r
        if m == 0 or t >= level[i]:
            t_last = t
    for i in range(k):
        out[i] = max(0.0, r[i] * t_last - q[i])


@njit(cache=True)
def _exact(n_g, n_s, lg, ls, r, x, fx):
    """Solve the group exactly from the support of the bids `x` (see the module's notes);
    where the optimum is found, `x` becomes it and True is returned."""
    n_l = len(x)
    nodes = n_g + n_s
    parent = np.arange(nodes)
    act = np.zeros(n_l, np.bool_)
    for p in np.argsort(-x, kind="mergesort"):  # largest bid first; ties in link order
        if x[p] <= 0.0:
            break
        a, c = _root(parent, lg[p]), _root(parent, n_g + ls[p])
        if a != c:
            parent[a] = c
            act[p] = True
    sol = np.zeros(n_l)
    mu = np.zeros(n_g)
    price = np.zeros(n_s)
    for _ in range(ACTIVE_SET_TRIES):
        if not _tree_solve(act, n_g, n_s, lg, ls, r, fx, sol, mu, price):
            return False
        worst, low = -1, -KKT_EPS
        for p in range(n_l):
            if act[p] and sol[p] < low:
                worst, low = p, sol[p]
        if worst >= 0:  # a negative bid: drop the most negative link
            act[worst] = False
            continue
        scale = 1.0
        for j in range(n_g):
            if mu[j] <= 0.0:
                return False
        for s in range(n_s):
            scale = max(scale, abs(price[s]))
        # no unused link may give its UE more per unit of budget than the links in use
        best, high = -1, KKT_EPS * scale
        for p in range(n_l):
            if not act[p]:
                excess = r[p] * mu[lg[p]] - price[ls[p]]
                if excess > high:
                    best, high = p, excess
        if best < 0:
            for p in range(n_l):
                x[p] = max(sol[p], 0.0) if act[p] else 0.0
            return True
        for k in range(nodes):
            parent[k] = k
        for p in range(n_l):
            if act[p]:
                parent[_root(parent, lg[p])] = _root(parent, n_g + ls[p])
        if _root(parent, lg[best]) == _root(parent, n_g + ls[best]):
            return False  # it would close a cycle
        act[best] = True
    return False


@njit(cache=True)
def _tree_solve(act, n_g, n_s, lg, ls, r, fx, sol, mu, price):
    """The bids `sol`, each UE's `mu` and each station's `price` with the links `act` (a
    forest) in use: on each tree, rate * mu = price on every link, each UE's bids sum to 1 and
    each station's price is its fixed bids plus these. False where a UE has no link in use."""
    nodes = n_g + n_s
    n_l = len(act)
    deg = np.zeros(nodes + 1, np.int64)
    for p in range(n_l):
        if act[p]:
            deg[lg[p] + 1] += 1
            deg[n_g + ls[p] + 1] += 1
    for k in range(nodes):
        deg[k + 1] += deg[k]
    adj = np.empty(deg[nodes], np.int64)
    fill = deg[:-1].copy()
    for p in range(n_l):
        if act[p]:
            adj[fill[lg[p]]] = p
            fill[lg[p]] += 1
            adj[fill[n_g + ls[p]]] = p
            fill[n_g + ls[p]] += 1
    seen = np.zeros(nodes, np.bool_)
    coef = np.zeros(nodes)
    up = np.full(nodes, -1, np.int64)  # the link to a node's parent in the tree
    acc = np.zeros(nodes)  # the bids of a node's links to its children
    queue = np.empty(nodes, np.int64)
    tail = 0
    for p in range(n_l):
        sol[p] = 0.0
    for root in range(n_g):
        if seen[root]:
            continue
        if deg[root + 1] == deg[root]:
            return False
        first = tail
        queue[tail] = root
        tail += 1
        seen[root] = True
        coef[root] = 1.0
        head = first
        n_ues = 0
        fixed = 0.0
        total = 0.0
        while head < tail:
            v = queue[head]
            head += 1
            if v < n_g:
                n_ues += 1
            else:
                fixed += fx[v - n_g]
                total += coef[v]
            for k in range(deg[v], deg[v + 1]):
                p = adj[k]
                w = n_g + ls[p] if v < n_g else lg[p]
                if seen[w]:
                    continue
                seen[w] = True
                up[w] = p
                coef[w] = r[p] * coef[v] if v < n_g else coef[v] / r[p]
                queue[tail] = w
                tail += 1
        m = (n_ues + fixed) / total
        for t in range(first, tail):
            v = queue[t]
            if v < n_g:
                mu[v] = coef[v] * m
            else:
                price[v - n_g] = coef[v] * m
        for t in range(tail - 1, first, -1):  # leaves in, the root's balance follows
            w = queue[t]
            p = up[w]
            if w < n_g:
                bid = 1.0 - acc[w]
                acc[n_g + ls[p]] += bid
            else:
                bid = price[w - n_g] - fx[w - n_g] - acc[w]
                acc[lg[p]] += bid
            sol[p] = bid
    for s in range(n_s):
        if not seen[n_g + s]:
            price[s] = fx[s]
    return True
