"""The references' search under a radio model where one UE's links change other UEs' rates
beyond its stations' shares (interference, proportional-fair shares, joint transmission):
every candidate scored on the radio model's own arithmetic (mobrl.radio.links), on the part
of the network its change can move (`mobrl.network.service.column_changes`), so a predicted step
utility is the env's.

`coupled_actions` is a coordinate ascent: each round scores every single UE's every other
choice with the rest fixed, then applies the improving changes together (best first, one per
UE) if that improves the step, else the better half of them, down to the single best change,
which always does. `coupled_lookahead` adds the next step: the first move of the best
two-step plan with this step's powers held, among the one-step best and the starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network.service import LinkState, column_changes, links_after, toggle

#: improvements smaller than this are rounding
EPS = 1e-12
#: rounds of the ascent at most (each applies at least one improving change)
MAX_ROUNDS = 60


def _options(allowed: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (UE, action) choice of the UEs that can move: keep (0) or toggle an allowed
    station (b + 1)."""
    st, ue = np.nonzero(allowed & active[None, :])
    movers = np.unique(ue)
    return np.concatenate([movers, ue]), np.concatenate([np.zeros_like(movers), st + 1])


def columns_after(state: LinkState, ues: np.ndarray, acts: np.ndarray) -> np.ndarray:
    """(n, BS) link column of UE ues[i] after its action acts[i] from the step's links."""
    cols = state.conn[:, ues].copy()
    on = np.flatnonzero(acts > 0)
    toggle(cols, state.reach[:, ues], acts[on] - 1, on)
    return cols.T


def coupled_actions(
    state: LinkState, allowed: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, float]:
    """The ascent from `start` (actions in UE order): its actions and summed utility."""
    opt_ue, opt_act = _options(allowed, state.active)
    acts = np.where(state.active, start, 0).astype(np.int64)
    conn = links_after(state, acts)
    value = float(state.utility_sum(conn))
    for _ in range(MAX_ROUNDS):
        other = np.flatnonzero(opt_act != acts[opt_ue])
        if not other.size:
            break
        ues, choice = opt_ue[other], opt_act[other]
        gains = column_changes(state, conn, ues, columns_after(state, ues, choice))
        # each UE's best improving change, best first
        order = np.lexsort((-gains, ues))
        first = order[np.r_[True, ues[order][1:] != ues[order][:-1]]]
        first = first[gains[first] > EPS]
        if not first.size:
            break
        first = first[np.argsort(-gains[first], kind="stable")]
        m = first.size
        while True:
            trial = acts.copy()
            trial[ues[first[:m]]] = choice[first[:m]]
            trial_conn = links_after(state, trial)
            trial_value = float(state.utility_sum(trial_conn))
            if trial_value > value + EPS or m == 1:
                break
            m //= 2
        if trial_value <= value + EPS:
            break
        acts, conn, value = trial, trial_conn, trial_value
    return acts, value


def coupled_best(state: LinkState, allowed: np.ndarray, starts: list[np.ndarray]) -> np.ndarray:
    """The best ascent from no change and from each of `starts` (each start once)."""
    best, best_value = None, -np.inf
    seen: list[np.ndarray] = []
    for start in [np.zeros(len(state.active), dtype=np.int64), *starts]:
        start = np.where(state.active, start, 0).astype(np.int64)
        if any(np.array_equal(start, s) for s in seen):
            continue
        seen.append(start)
        acts, value = coupled_actions(state, allowed, start)
        if value > best_value + EPS:
            best, best_value = acts, value
    return best


def coupled_lookahead(
    state: LinkState, allowed: np.ndarray, starts: list[np.ndarray]
) -> np.ndarray:
    """The first move of the best two-step plan (this step's powers held for the next): each
    candidate first move (the one-step best, each start) scored by its step's utility plus
    the next step's best from its links."""
    first = coupled_best(state, allowed, starts)
    best, best_value = first, -np.inf
    seen: list[np.ndarray] = []
    for a1 in [first, *(np.asarray(s, dtype=np.int64) for s in starts)]:
        a1 = np.where(state.active, a1, 0)
        if any(np.array_equal(a1, s) for s in seen):
            continue
        seen.append(a1)
        c1 = links_after(state, a1)
        nxt = _next_state(state, c1)
        _, v2 = coupled_actions(nxt, allowed, np.zeros_like(a1))
        value = float(state.utility_sum(c1)) + v2
        if value > best_value + EPS:
            best, best_value = a1, value
    return best


def _next_state(state: LinkState, conn: np.ndarray) -> LinkState:
    """The step after `conn`, with this step's powers: links still in range kept; who
    transmits follows the links (the reach with them is the radio model's)."""
    from dataclasses import replace

    reach = state.reach
    radio: Any = state.radio
    if radio is not None and radio.model.interference == "active":
        from mobrl.radio.links import reach_sinr

        sinr = reach_sinr(radio.model, radio.rx, radio.noise, conn)
        reach = (sinr > radio.thr) & state.active[None, :]
    return replace(state, conn=conn & reach, reach=reach)
