"""Union-find in compiled code (numba; imported at the first call so that `import mobrl.radio`
stays light): the connected parts of a graph of stations and UEs, for the scheduler's groups
and for the components `mobrl.radio.local` scores candidate changes on."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def root(parent: np.ndarray, k: int) -> int:
    """Node k's root in the union-find forest `parent` (paths halved on the way)."""
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


@njit(cache=True)
def label_components(lb, lu, n_bs, n_ue):
    """(n_comp, label): the connected components of the graph of `n_bs` stations and `n_ue`
    UEs joined by the links (lb[q], lu[q]), its nodes numbered stations first, then UEs
    (n_bs + u). The labels are those scipy's `connected_components` gives the undirected
    graph: components in the order of their lowest node, at about 1/100 of its cost on a
    network of tens of stations (no sparse matrix is built)."""
    n = n_bs + n_ue
    parent = np.arange(n)
    for q in range(len(lb)):
        a = root(parent, lb[q])
        c = root(parent, n_bs + lu[q])
        if a != c:
            parent[max(a, c)] = min(a, c)
    label = np.full(n, -1, np.int64)
    n_comp = 0
    for v in range(n):
        r = root(parent, v)
        if label[r] < 0:
            label[r] = n_comp
            n_comp += 1
        label[v] = label[r]
    return n_comp, label
