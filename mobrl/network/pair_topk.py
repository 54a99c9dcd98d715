"""`env.obs=topk`/`topk_gain` and greedy's actions on the sparse path's pairs
(mobrl.network.neighbours): each UE's k strongest stations, their per-slot values and
single-toggle gains, and greedy's station actions, from the step's (station, UE) pairs with the
same numbers and the same order of ties as the dense (BS, UE) arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network.neighbours import Grid, Pairs, SparseState


def topk_pairs(state: SparseState, k: int) -> np.ndarray:
    """(k, UE) pair index of each UE's slots (-1: none): linked stations first, then the
    rest, each by SNR from strongest (ties: lower station id), as `topk_order`."""
    engine = state.engine
    if engine._grid.need < k:  # a grid made for fewer slots: remake it, same positions
        engine._grid = Grid(engine, k)
        engine._sparse_snr()
    p: Pairs = engine._pairs
    cached = p.slots.get(k)
    if cached is not None:
        return cached
    linked = state["conn"][p.b, p.u] & p.reach
    n_ue = len(p.start) - 1
    # each UE's pairs as a row (padding last), sorted row by row
    pos = np.arange(len(p.u)) - p.start[p.u]
    width = max(int(pos.max(initial=0)) + 1, k)
    rows = np.full((n_ue, width), -1)
    rows[p.u, pos] = np.arange(len(p.u))
    pad = rows < 0
    at = np.maximum(rows, 0)
    rank = np.where(pad, 2, ~linked[at])  # linked first, then the rest, padding last
    sorted_rows = np.take_along_axis(rows, np.lexsort((-p.snr[at], rank), axis=-1), axis=-1)
    order = np.ascontiguousarray(sorted_rows[:, :k].T)  # stable: ties keep station order
    p.slots[k] = order
    return order


def topk_slots(state: SparseState, k: int) -> np.ndarray:
    """(k, UE) station of each slot (-1: none), from the pairs."""
    order = topk_pairs(state, k)
    return np.where(order >= 0, state.engine._pairs.b[np.maximum(order, 0)], -1)


def topk_features(state: SparseState, columns: np.ndarray, k: int) -> dict[str, Any]:
    """The per-slot values `topk_rows` reads, for the UEs at `columns`, from the pairs."""
    order = topk_pairs(state, k)[:, columns]  # first: it may remake the pairs
    p: Pairs = state.engine._pairs
    valid = order >= 0
    at = np.maximum(order, 0)
    b = p.b[at]
    # each UE's best SNR over all stations: its strongest pair (always a candidate)
    best = np.maximum.reduceat(p.snr, p.start[:-1])[columns] if len(p.snr) else 0.0
    reach = p.reach[at]
    counts = state["counts"][b] * reach
    linked = state["conn"][p.b, p.u] & p.reach
    n_linked = np.bincount(p.u[linked], minlength=len(p.start) - 1)[columns]
    return {
        "valid": valid,
        "linked": linked[at],
        "snr": p.snr[at] / np.where(best > 0, best, 1.0),
        "reachable": reach,
        "load": counts / (counts + 1.0),
        "bcast": np.where(reach, state["bs_util"][b], state["idle"]),
        "n_linked": n_linked,
    }


def greedy_actions(engine: Any) -> np.ndarray:
    """`greedy`'s station action of every UE (UE order) from the pairs: toggle the strongest
    station in range if not linked to it, else release the lowest other linked one."""
    p: Pairs = engine._pairs
    n_ue = len(p.start) - 1
    r = np.flatnonzero(p.reach)
    if not r.size:
        return np.zeros(n_ue, dtype=np.int64)
    ur, snr = p.u[r], p.snr[r]
    head = np.flatnonzero(np.diff(ur, prepend=-1))  # each UE's first pair in range
    best = np.repeat(np.maximum.reduceat(snr, head), np.diff(np.append(head, len(r))))
    ues, best_pair = _firsts(ur, snr == best, r)
    linked = engine._conn[p.b[r], ur]
    other = linked.copy()
    other[np.searchsorted(r, best_pair)] = False
    o_ues, o_pair = _firsts(ur, other, r)
    release = np.zeros(n_ue, dtype=np.int64)
    release[o_ues] = p.b[o_pair] + 1
    act = np.zeros(n_ue, dtype=np.int64)
    act[ues] = np.where(engine._conn[p.b[best_pair], ues], release[ues], p.b[best_pair] + 1)
    return act


def _firsts(u: np.ndarray, mask: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The UEs with a pair where `mask` (`u`: sorted), and `index` of the first such pair."""
    m = np.flatnonzero(mask)
    first = m[np.diff(u[m], prepend=-1) != 0]
    return u[first], index[first]


def slot_gains(state: SparseState, columns: np.ndarray, k: int, split: bool = False) -> np.ndarray:
    """`topk_gain`'s (len(columns), k) gains from the pairs: `service.toggle_gains` at each
    slot's pair (0: an empty slot, out of range or an inactive UE); `split`: (.., 2k), own
    changes then the others' (`topk_impact`)."""
    from mobrl.network.service import LinkState

    engine = state.engine
    order = topk_pairs(state, k)[:, columns]  # first: it may remake the pairs
    p: Pairs = engine._pairs
    n_bs, n_ue = engine._t1.shape
    util_model = engine.utility
    model = LinkState(
        cap=p.snr[:0], reach=p.reach[:0], conn=p.reach[:0], active=p.reach[:0],
        lower=float(util_model.lower), upper=float(util_model.upper),
        coeffs=tuple(float(c) for c in util_model.coeffs),
    )  # fmt: skip
    cap = engine._bw[p.b, 0] * np.log2(1 + p.snr)
    linked = engine._conn[p.b, p.u] & p.reach
    lb, lu, lcap = p.b[linked], p.u[linked], cap[linked]
    counts = np.bincount(lb, minlength=n_bs).astype(float)
    rate = np.bincount(lu, weights=lcap / np.maximum(counts[lb], 1), minlength=n_ue)
    util = model.utility(rate)

    def changes(b: np.ndarray, u: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
        """Utility changes of toggles (see `toggle_gains`): (0) b's other UEs when u joins,
        (1) u joining, (2) b's other UEs when u leaves, (3) u leaving."""
        n = counts[b]
        without = rate[u] - c / np.maximum(n, 1)
        added = c / (n + 1)
        rates = np.stack(
            (without + added, rate[u] + added, without + c / np.maximum(n - 1, 1), without)
        )
        return model.utility(rates) - util[u]

    ch = changes(lb, lu, lcap)
    others_add = np.bincount(lb, weights=ch[0], minlength=n_bs)
    others_rem = np.bincount(lb, weights=ch[2], minlength=n_bs)
    valid = order >= 0
    q = np.maximum(order, 0).ravel()
    b, u = p.b[q], p.u[q]
    cq = changes(b, u, cap[q])
    own = np.where(linked[q], cq[3], cq[1])
    others = np.where(linked[q], others_rem[b] - cq[2], others_add[b])
    ok = valid.ravel() & p.reach[q] & engine._active_mask[u]
    parts = (own, others) if split else (own + others,)
    out = [np.where(ok, x, 0.0).reshape(order.shape).T for x in parts]
    return np.concatenate(out, axis=1).astype(np.float32)
