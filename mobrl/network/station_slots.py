"""The station slots of `env.obs=topk` and its variants (`topk_gain`, `topk_impact`,
`topk_intent`; the observations are described in mobrl.envs.observations): the (BS, UE) state
they read (`station_arrays`), each UE's k slots (`topk_slots`), the observation rows
(`topk_rows`), each slot's toggle gains (`slot_gains`, `intent_gains`), and slot actions as
station actions and back (`topk_station_actions`, `stations_of`, `slots_of`), on the dense
arrays of either engine or the fast engine's sparse pairs (mobrl.network.pair_topk).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.protocols import StationArrays, implements
from mobrl.network import neighbours, pair_topk
from mobrl.network.service import (
    LinkState,
    column_changes,
    link_arrays,
    link_state,
    links_after,
    toggle,
    toggle_gains,
    toggle_gains_at,
)

#: per-slot and own features of `env.obs=topk`, in observation order
TOPK_SLOT_FEATURES = ("linked", "snr", "reachable", "load", "bcast")
TOPK_OWN_FEATURES = ("utility", "links")


def topk_size(k: int) -> int:
    return len(TOPK_SLOT_FEATURES) * k + len(TOPK_OWN_FEATURES)


def station_arrays(env: Any) -> dict[str, Any]:
    """The (BS, UE) state `topk` reads, stations and UEs in id order: SNR, links, range, each
    station's UE count and mean utility, each UE's utility (NaN: not active) and the idle value.
    mobrl's fast engine has them as arrays; a stock core is read through its objects."""
    if implements(env, StationArrays):
        return env.topk_state()
    stations = [env.stations[b] for b in sorted(env.stations)]
    ues = [env.users[u] for u in sorted(env.users)]
    bs_util = env.station_utilities()
    return {
        **link_arrays(env),
        "counts": np.array([len(env.connections.get(bs, ())) for bs in stations], dtype=float),
        "bs_util": np.array([bs_util[bs] for bs in stations], dtype=float),
        "util": np.array([env.utilities.get(ue, np.nan) for ue in ues], dtype=float),
        "idle": env.utility.scale(env.utility.lower),
    }


def topk_order(snr: np.ndarray, linked: np.ndarray, k: int) -> np.ndarray:
    """(k, UE) station index per slot (-1: no station): linked stations first, then the rest,
    each by SNR from strongest (ties: lower station id)."""
    n_bs, n_ue = snr.shape
    ues = np.arange(n_ue)[None, :]  # a[rows, ues] is take_along_axis(a, rows, axis=0), faster
    by_snr = np.argsort(-snr, axis=0, kind="stable")
    unlinked = ~linked[by_snr, ues]
    order = by_snr[np.argsort(unlinked, axis=0, kind="stable")[:k], ues]
    if n_bs < k:
        order = np.concatenate([order, np.full((k - n_bs, n_ue), -1)], axis=0)
    return order


def topk_rows(state: dict[str, Any], columns: np.ndarray, k: int) -> np.ndarray:
    """`topk` observation rows (float32) of the UEs at `columns` of the state's arrays."""
    if isinstance(state, neighbours.SparseState):  # the fast engine's sparse path
        per_slot = pair_topk.topk_features(state, columns, k)
        valid, n_linked = per_slot["valid"], per_slot["n_linked"]
    else:
        snr, reach = state["snr"][:, columns], state["reach"][:, columns]
        linked = state["conn"][:, columns] & reach
        order = topk_order(snr, linked, k)
        valid = order >= 0
        slot = np.where(valid, order, 0)
        ues = np.arange(len(columns))[None, :]
        take = lambda a: a[slot, ues]  # noqa: E731  (take_along_axis(a, slot, axis=0))
        counts = state["counts"][:, None] * reach
        best = snr.max(axis=0, initial=0.0)
        per_slot = {
            "linked": take(linked),
            "snr": take(snr / np.where(best > 0, best, 1.0)),
            "reachable": take(reach),
            "load": take(counts / (counts + 1.0)),
            "bcast": take(np.where(reach, state["bs_util"][:, None], state["idle"])),
        }
        n_linked = linked.sum(axis=0)
    n = len(columns)
    out = np.zeros((n, topk_size(k)), dtype=np.float32)
    block = out[:, : len(TOPK_SLOT_FEATURES) * k].reshape(n, k, len(TOPK_SLOT_FEATURES))
    for f, name in enumerate(TOPK_SLOT_FEATURES):
        block[:, :, f] = np.where(valid, per_slot[name], 0.0).T
    util = state["util"][columns]
    out[:, -2] = np.where(np.isnan(util), state["idle"], util)
    out[:, -1] = np.minimum(n_linked / k, 1.0)
    return out


def slot_gains(
    env: Any,
    state: dict[str, Any],
    columns: np.ndarray,
    k: int,
    split: bool = False,
    links: LinkState | None = None,
) -> np.ndarray:
    """(len(columns), k) `gain` of `topk_gain` (`state`: the env's `station_arrays`): the team's
    summed utility change if the UE at each of `columns` toggled its slot's station alone (0:
    an empty slot, a station out of range or an inactive UE). `split` (`topk_impact`): (.., 2k),
    the UE's own utility change per slot, then the other UEs' summed change per slot. `links`:
    the env's `link_state`, if the caller has it already."""
    if isinstance(state, neighbours.SparseState):
        return pair_topk.slot_gains(state, columns, k, split)
    links = link_state(env) if links is None else links
    order = topk_slots(state, k)[:, columns]
    valid = order >= 0
    if links.radio is None:
        gains = toggle_gains(links, links.conn, split)
    else:  # under a radio model: only the toggles of the slots
        where = np.zeros(links.conn.shape, dtype=bool)
        slot, col = np.nonzero(valid)
        where[order[slot, col], np.asarray(columns)[col]] = True
        gains = toggle_gains_at(links, links.conn, where, split)
    picked = np.where(valid, order, 0), np.asarray(columns)[None, :]
    parts = gains if split else (gains,)
    out = [np.where(valid & np.isfinite(g[picked]), g[picked], 0.0).T for g in parts]
    return np.concatenate(out, axis=1).astype(np.float32)


#: rounds of `topk_intent`'s gains: alone, then twice given the others' intents
INTENT_ROUNDS = 3
#: gains up to this are no gain (rounding)
GAIN_EPS = 1e-9


def intended_links(links: LinkState, order: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The links after every active UE's intent: the toggle of its slot of highest `gains`
    (UE, k) where that is positive (`order`: `topk_slots`)."""
    ues = np.arange(order.shape[1])
    best = gains.argmax(axis=1)
    station = order[best, ues]
    return links_after(links, np.where(gains[ues, best] > GAIN_EPS, station + 1, 0))


def gains_given(
    links: LinkState, order: np.ndarray, intended: np.ndarray, columns: np.ndarray, k: int
) -> np.ndarray:
    """(len(columns), k): the team's summed utility change if the UE at each of `columns`
    toggled its slot's station from its own links, every other UE's links as in `intended`
    (0: an empty slot, a station out of range or an inactive UE)."""
    n, width = len(columns), k + 1
    col = np.repeat(columns, width)
    cols = links.conn[:, col].T.copy()  # the UE's own links: from its own state
    slots = order[:, columns].T  # (n, k)
    valid = (slots >= 0) & links.active[columns, None]
    i, s = np.nonzero(valid)
    toggle(cols, links.reach[:, col].T, i * width + 1 + s, slots[i, s])
    value = column_changes(links, intended, col, cols).reshape(n, width)
    return np.where(valid, value[:, 1:] - value[:, :1], 0.0)


def intent_gains(env: Any, state: dict[str, Any], columns: np.ndarray, k: int) -> np.ndarray:
    """(len(columns), INTENT_ROUNDS * k) `topk_intent`'s gains: round 1 `slot_gains`, each
    later round `gains_given` the intents of the round before (of every UE)."""
    links = link_state(env)
    order = topk_slots(state, k)
    every = np.arange(order.shape[1])
    gains = slot_gains(env, state, every, k, links=links).astype(float)
    rounds = [gains]
    for _ in range(INTENT_ROUNDS - 1):
        gains = gains_given(links, order, intended_links(links, order, gains), every, k)
        rounds.append(gains)
    return np.concatenate([g[np.asarray(columns)] for g in rounds], axis=1).astype(np.float32)


def topk_gain_rows(env: Any, columns: np.ndarray, k: int, split: bool = False) -> np.ndarray:
    """`topk_gain` (`split`: `topk_impact`) observation rows (float32) of the UEs at `columns`
    of `env`'s arrays."""
    state = station_arrays(env)
    return np.concatenate(
        [topk_rows(state, columns, k), slot_gains(env, state, columns, k, split)], axis=1
    )


def topk_slots(state: dict[str, Any], k: int) -> np.ndarray:
    """(k, UE) station index in each UE's slots (-1: none), for every UE of the state."""
    if isinstance(state, neighbours.SparseState):
        return pair_topk.topk_slots(state, k)
    return topk_order(state["snr"], state["conn"] & state["reach"], k)


def topk_station_actions(state: dict[str, Any], act: np.ndarray, k: int) -> np.ndarray:
    """Slot actions of every UE (UE order; 0 keeps the links) as mobile-env's station actions
    (0 keeps, b + 1 toggles station b), by the order the UEs observed."""
    act = np.asarray(act, dtype=np.int64)
    if ((act < 0) | (act > k)).any():
        raise KeyError(int(act[(act < 0) | (act > k)][0]))
    return stations_of(topk_slots(state, k), act)


def stations_of(order: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Slot actions (0 keeps, j toggles slot j) of the UEs of `order`'s columns ((k, UE)
    `topk_slots`) as station actions (0 keeps, b + 1 toggles station b; 0 for an empty slot)."""
    act = np.asarray(act, dtype=np.int64)
    picked = order[np.maximum(act - 1, 0), np.arange(len(act))]
    return np.where((act > 0) & (picked >= 0), picked + 1, 0)


def slots_of(order: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Station actions (0 keeps, b + 1 toggles station b) of the UEs of `order`'s columns as
    slot actions: the slot that holds the station, 0 where no slot does (or keeping)."""
    act = np.asarray(actions, dtype=np.int64)
    match = (order == (act - 1)[None, :]) & (act > 0)[None, :]
    return np.where(match.any(axis=0), match.argmax(axis=0) + 1, 0)


def slot_mask(order: np.ndarray, stations: int) -> np.ndarray:
    """(BS, UE) the stations in each UE's slots (`order`: (k, UE) `topk_slots`)."""
    mask = np.zeros((stations, order.shape[1]), dtype=bool)
    slot, ue = np.nonzero(order >= 0)
    mask[order[slot, ue], ue] = True
    return mask


def ue_columns(env: Any) -> dict[int, int]:
    """UE id -> its column in `station_arrays` (UEs in id order)."""
    if implements(env, StationArrays):
        return env.ue_columns()
    return {u: i for i, u in enumerate(sorted(env.users))}
