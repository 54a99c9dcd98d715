"""The networks `mobrl.radio.local` scores candidate changes on, assembled in compiled code
(numba; imported at the first call so that `import mobrl.radio` stays light).

Each candidate (UE `mover[i]` whose links become the stations `new_b[new_start[i]:
new_start[i + 1]]`) is scored on the connected components it touches (those of its UE, of
its old stations and of its new ones): every UE of those components, and their links with
the mover's replaced, as one copy of a network of disjoint copies; a candidate that switches
a station on or off, on every link (`assemble_all`). Copy i's stations are numbered
i * n_bs + station and its UEs in one running count over the copies; within a copy the links
come by UE, then station, as the engine hands a whole network to the scheduler, so the
scheduler gets each network's links in the same order and gives the same shares to the bit.
The work grows with the links written, not with the candidates times the network (no sort of
the whole batch).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _listed(c, i, mark, out, k):
    """Component c listed in `out` for candidate i (once: `mark[c] == i` after); the new
    count."""
    if mark[c] == i:
        return k
    mark[c] = i
    out[k] = c
    return k + 1


@njit(cache=True)
def _touched(i, mover, ue_start, lb, new_start, new_b, st_comp, ue_comp, mark, out):
    """The components candidate i touches (its UE's, its old and new stations'), written to
    `out`; returns how many."""
    m = mover[i]
    k = _listed(ue_comp[m], i, mark, out, 0)
    for q in range(ue_start[m], ue_start[m + 1]):
        k = _listed(st_comp[lb[q]], i, mark, out, k)
    for q in range(new_start[i], new_start[i + 1]):
        k = _listed(st_comp[new_b[q]], i, mark, out, k)
    return k


@njit(cache=True)
def assemble(mover, new_start, new_b, ue_start, lb, st_comp, ue_comp, comp_start, comp_ues,
             comp_links, full, n_bs):  # fmt: skip
    """(gb, gu, rate, a_cand, a_ue): each link of every copy (its station i * n_bs + b, its
    UE's number in the batch, its rate with all of its station's resources, `full[b, u]`),
    and for each numbered UE its candidate i and UE index."""
    n = len(mover)
    n_comp = len(comp_start) - 1
    mark = np.full(n_comp, -1, np.int64)
    comps = np.empty(n_comp, np.int64)
    n_links = 0
    n_ues = 0
    for i in range(n):
        k = _touched(i, mover, ue_start, lb, new_start, new_b, st_comp, ue_comp, mark, comps)
        for j in range(k):
            c = comps[j]
            n_links += comp_links[c]
            n_ues += comp_start[c + 1] - comp_start[c]
        m = mover[i]
        n_links += (new_start[i + 1] - new_start[i]) - (ue_start[m + 1] - ue_start[m])
    gb = np.empty(n_links, np.int64)
    gu = np.empty(n_links, np.int64)
    rate = np.empty(n_links)
    a_cand = np.empty(n_ues, np.int64)
    a_ue = np.empty(n_ues, np.int64)
    mark[:] = -1
    at = 0  # links written
    a = 0  # UEs numbered
    for i in range(n):
        k = _touched(i, mover, ue_start, lb, new_start, new_b, st_comp, ue_comp, mark, comps)
        first = a
        for j in range(k):
            c = comps[j]
            for q in range(comp_start[c], comp_start[c + 1]):
                a_ue[a] = comp_ues[q]
                a += 1
        if k > 1:  # each component's UEs come in order; several are merged
            a_ue[first:a] = np.sort(a_ue[first:a])
        m = mover[i]
        for v in range(first, a):
            u = a_ue[v]
            a_cand[v] = i
            if u == m:
                for q in range(new_start[i], new_start[i + 1]):
                    b = new_b[q]
                    gb[at], gu[at], rate[at] = i * n_bs + b, v, full[b, u]
                    at += 1
            else:
                for q in range(ue_start[u], ue_start[u + 1]):
                    b = lb[q]
                    gb[at], gu[at], rate[at] = i * n_bs + b, v, full[b, u]
                    at += 1
    return gb, gu, rate, a_cand, a_ue


@njit(cache=True)
def assemble_all(mover, new_start, new_b, ue_start, lb):
    """The copies for candidates scored on every link (each switches a station on or off):
    every UE with links and the moving UE, with every link, the mover's replaced, in the
    same order as `assemble`'s. Returns (li, lbs, lus, gu, a_cand, a_ue): each link's
    candidate, station, UE and its UE's number in the batch, and for each numbered UE its
    candidate and UE index."""
    n = len(mover)
    n_ue = len(ue_start) - 1
    n_base = ue_start[n_ue]
    n_linked = 0
    for u in range(n_ue):
        if ue_start[u + 1] > ue_start[u]:
            n_linked += 1
    linked = np.empty(n_linked + 1, np.int64)  # the UEs with links, in order, then a guard
    k = 0
    for u in range(n_ue):
        if ue_start[u + 1] > ue_start[u]:
            linked[k] = u
            k += 1
    linked[n_linked] = n_ue
    n_links = 0
    n_ues = 0
    for i in range(n):
        m = mover[i]
        own = ue_start[m + 1] - ue_start[m]
        n_links += n_base - own + new_start[i + 1] - new_start[i]
        n_ues += n_linked + (1 if own == 0 else 0)
    li = np.empty(n_links, np.int64)
    lbs = np.empty(n_links, np.int64)
    lus = np.empty(n_links, np.int64)
    gu = np.empty(n_links, np.int64)
    a_cand = np.empty(n_ues, np.int64)
    a_ue = np.empty(n_ues, np.int64)
    at = 0
    a = 0
    for i in range(n):
        m = mover[i]
        inserted = False
        k = 0
        while k < n_linked or not inserted:
            # the next UE in order: the mover (once) or the next UE with links
            if not inserted and m <= linked[k]:
                u = m
                inserted = True
                if linked[k] == m:
                    k += 1
            else:
                u = linked[k]
                k += 1
            a_cand[a], a_ue[a] = i, u
            if u == m:
                for q in range(new_start[i], new_start[i + 1]):
                    li[at], lbs[at], lus[at], gu[at] = i, new_b[q], u, a
                    at += 1
            else:
                for q in range(ue_start[u], ue_start[u + 1]):
                    li[at], lbs[at], lus[at], gu[at] = i, lb[q], u, a
                    at += 1
            a += 1
    return li, lbs, lus, gu, a_cand, a_ue
