"""Service arithmetic on (BS, UE) arrays read from envs: the `LinkState` of either engine
(`link_state`), the `greedy` rule's station actions, the per-step link set that maximises the
mean UE utility (a start of the `oracle`'s search, mobrl.evaluation.oracle: the link set
itself may be more than one toggle per UE away), the actions that move towards a link set, and
the learning rewards of `env.reward`.

The utility of a link set itself (`LinkState`, the step's toggle rule, each UE's marginal
contribution, the change when UEs' links change) is mobrl.network.link_utility's; its names are
importable from here as well. All functions here take a `LinkState` or an env, and never
change the env.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from mobrl.core.protocols import LinkArrays, StationArrays, implements
from mobrl.network.link_utility import (  # noqa: F401 (imported from here by others)
    COUPLED_CHUNK,
    DENSE_MARGINAL,
    LinkState,
    column_changes,
    links_after,
    marginal_utilities,
    scaled_utility,
    toggle,
    utility_sums,
)

#: improvements smaller than this are rounding, not gains
_EPS = 1e-12
#: link sets up to this many candidate links are searched exhaustively, larger ones locally
EXHAUSTIVE_LINKS = 12


def link_arrays(env: Any, in_range: bool = False) -> dict[str, np.ndarray]:
    """The links part of `mobrl.envs.observations.station_arrays`: (BS, UE) `snr`, `conn`
    (links up) and `reach` (SNR above the UE's threshold), stations and UEs in id order.
    `in_range`: the caller reads SNRs only where `reach` holds, so on the fast engine's sparse
    path (city-scale layouts) `snr` may be 0 elsewhere instead of computed for every pair."""
    if implements(env, StationArrays):
        state = env.topk_state()
        # the sparse path builds "snr" only when it is read
        snr = state["snr_in_range" if in_range and "snr" not in state else "snr"]
        return {"snr": snr, "conn": state["conn"], "reach": state["reach"]}
    stations = [env.stations[b] for b in sorted(env.stations)]
    ues = [env.users[u] for u in sorted(env.users)]
    snr = np.array([[env.channel.snr(bs, ue) for ue in ues] for bs in stations], dtype=float)
    thr = np.array([ue.snr_threshold for ue in ues], dtype=float)[None, :]
    conn = np.array([[ue in env.connections.get(bs, ()) for ue in ues] for bs in stations])
    return {"snr": snr, "conn": conn.reshape(snr.shape), "reach": snr > thr}


def link_state(core: Any) -> LinkState:
    """The `LinkState` of a mobile-env core (fast engine or stock) as the next step sees it:
    links out of range are dropped first, as the step itself does."""
    if implements(core, LinkArrays):
        return core.link_state()
    state = link_arrays(core)
    snr, reach = np.asarray(state["snr"], dtype=float), np.asarray(state["reach"], dtype=bool)
    stations = [core.stations[b] for b in sorted(core.stations)]
    bw = np.array([bs.bw for bs in stations], dtype=float)[:, None]
    cap = np.where(reach, bw * np.log2(1 + snr), 0.0)
    ids = {ue.ue_id for ue in core.active}
    active = np.array([u in ids for u in sorted(core.users)], dtype=bool)
    utility = core.utility
    return LinkState(
        cap=cap,
        reach=reach & active[None, :],
        conn=np.asarray(state["conn"], dtype=bool) & reach,
        active=active,
        lower=float(utility.lower),
        upper=float(utility.upper),
        coeffs=tuple(float(c) for c in utility.coeffs),
    )


def first_station(mask: np.ndarray) -> np.ndarray:
    """Per UE (column), the station action (b + 1) of the lowest station b where `mask`, else
    0."""
    return np.where(mask.any(axis=0), np.argmax(mask, axis=0) + 1, 0)


def measured_links(env: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(BS, UE) SINRs (SNRs on mobile-env's model), reachable links and live links in range,
    stations and UEs in id order; the SINR may be 0 out of range (`link_arrays`' in_range)."""
    state = link_arrays(env, in_range=True)
    reach = np.asarray(state["reach"], dtype=bool)
    linked = np.asarray(state["conn"], dtype=bool) & reach
    return np.asarray(state["snr"], dtype=float), reach, linked


def greedy_moves(measure: np.ndarray, reach: np.ndarray, linked: np.ndarray) -> np.ndarray:
    """The `greedy` rule's station action of every UE (column) from (BS, UE) arrays: its
    station of the highest `measure` in `reach` (ties: the lower id), joined if not linked,
    else its lowest other link (`linked`: links in range) released; 0 keeps (none left, or
    nothing in range)."""
    columns = np.arange(measure.shape[1])
    best = np.argmax(np.where(reach, measure, -np.inf), axis=0)
    others = linked.copy()
    others[best, columns] = False
    act = np.where(linked[best, columns], first_station(others), best + 1)
    return np.where(reach.any(axis=0), act, 0)


def step_greedy_moves(env: Any) -> np.ndarray:
    """`greedy_moves` by SINR (SNR on mobile-env's model) of the env's UEs (id order)."""
    return greedy_moves(*measured_links(env))


def greedy_links(state: LinkState) -> np.ndarray:
    """Each active UE linked to its strongest station in range (mobrl's `greedy` target)."""
    conn = np.zeros_like(state.conn)
    reachable = state.reach.any(axis=0)
    best = np.argmax(np.where(state.reach, state.cap, -1.0), axis=0)
    cols = np.flatnonzero(reachable)
    conn[best[cols], cols] = True
    return conn


def best_links(
    state: LinkState, start: np.ndarray | None = None, local: bool = False
) -> np.ndarray:
    """The link set with the highest mean UE utility this step: exhaustive over the links in
    range when there are at most `EXHAUSTIVE_LINKS` (unless `local`), else a local search
    over single link toggles from `start` (default: the greedy links), taking the best toggle
    until none improves. Never below `start`'s utility."""
    candidates = np.argwhere(state.reach)
    if len(candidates) <= EXHAUSTIVE_LINKS and not local:
        return _exhaustive(state, candidates)
    conn = (greedy_links(state) if start is None else start & state.reach).copy()
    for _ in range(4 * len(candidates)):
        delta = toggle_gains(state, conn)
        b, u = np.unravel_index(np.argmax(delta), delta.shape)
        if delta[b, u] <= _EPS:
            break
        conn[b, u] = ~conn[b, u]
    return conn


def _exhaustive(state: LinkState, candidates: np.ndarray) -> np.ndarray:
    n = len(candidates)
    if n == 0:
        return np.zeros_like(state.conn)
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    sets = np.zeros((2**n, *state.conn.shape), dtype=bool)
    sets[:, candidates[:, 0], candidates[:, 1]] = bits.astype(bool)
    values = state.team_utility(sets)
    # among equal values, the set with the fewest links (no link that serves nothing)
    values = values - 1e-9 * bits.sum(axis=1)
    return sets[int(np.argmax(values))]


def toggle_gains(state: LinkState, conn: np.ndarray, split: bool = False) -> Any:
    """(BS, UE) change of the team's summed utility from toggling each link alone (-inf where
    a toggle is not possible: out of range or inactive). `split`: the change as two arrays,
    the toggling UE's own utility change and the other UEs' summed change (their sum)."""
    if state.radio is not None:
        return toggle_gains_at(state, conn, state.reach, split)
    cap = state.cap
    counts = conn.sum(axis=1).astype(float)
    rate = state.rates(conn)
    util = state.utility(rate)
    share = cap / np.maximum(counts, 1)[:, None]
    added = cap / (counts + 1)[:, None]
    without = rate[None, :] - share
    # the four rates each link's toggle leads to, scored in one call: (0) b's other UEs when
    # UE i joins b (1/n -> 1/(n+1) of their link rate), (1) UE i joining b, (2) b's other UEs
    # when i leaves (1/n -> 1/(n-1)), (3) UE i leaving b
    rates = np.stack(
        (
            without + added,
            rate[None, :] + added,
            without + cap / np.maximum(counts - 1, 1)[:, None],
            without,
        )
    )
    change = state.utility(rates) - util
    others_add = (conn * change[0]).sum(axis=1)
    others_all = conn * change[2]
    others_rem = others_all.sum(axis=1)[:, None] - others_all
    own = np.where(conn, change[3], change[1])
    others = np.where(conn, others_rem, np.broadcast_to(others_add[:, None], conn.shape))
    if split:
        return np.where(state.reach, own, -np.inf), np.where(state.reach, others, -np.inf)
    return np.where(state.reach, own + others, -np.inf)


def toggle_gains_at(
    state: LinkState, conn: np.ndarray, where: np.ndarray, split: bool = False
) -> Any:
    """`toggle_gains` of the toggles `where` (BS, UE) only, by `column_changes` (-inf
    elsewhere): the arithmetic of any radio model (`split`: own and others' changes)."""
    b, u = np.nonzero(where & state.reach)
    out = np.full(conn.shape, -np.inf)
    others = out.copy()
    if b.size:
        cols = conn[:, u].T.copy()
        toggle(cols, state.reach[:, u].T, np.arange(b.size), b)
        total, own = column_changes(state, conn, u, cols, split=True)
        out[b, u], others[b, u] = (own, total - own) if split else (total, -np.inf)
    return (out, others) if split else out


def capped_links(state: LinkState) -> np.ndarray:
    """Greedy links, but each station keeps only its strongest UE (by link rate): the rest
    stay unconnected. Not a policy to use: it probes mobile-env's multi-agent reward, which
    pays for few well-served UEs per station more than for serving everyone."""
    conn = greedy_links(state)
    rates = np.where(conn, state.cap, -1.0)
    keep = np.zeros_like(conn)
    busy = conn.any(axis=1)
    keep[np.flatnonzero(busy), np.argmax(rates, axis=1)[busy]] = True
    return conn & keep


def toward(state: LinkState, target: np.ndarray) -> np.ndarray:
    """Each UE's station action (0: keep, b + 1: toggle station b) that moves its links one
    toggle towards `target`: the strongest missing link first, then the weakest extra one."""
    missing = target & ~state.conn & state.reach
    extra = state.conn & ~target
    add = np.argmax(np.where(missing, state.cap, -1.0), axis=0)
    drop = np.argmin(np.where(extra, state.cap, np.inf), axis=0)
    act = np.where(missing.any(axis=0), add + 1, np.where(extra.any(axis=0), drop + 1, 0))
    return np.where(state.active, act, 0)


# --- learning rewards of `env.reward` (env=ma) -----------------------------------------------


def utility_rewards(env: Any) -> dict[int, float]:
    """`env.reward=utility`: each active UE's own scaled utility of the step (-1 unconnected);
    their sum is N times mobile-env's central reward."""
    return {ue.ue_id: float(env.utilities[ue]) for ue in env.active}


def marginal_rewards(env: Any) -> dict[int, float]:
    """`env.reward=marginal`: each active UE's `marginal_utilities` in the step."""
    values = marginal_utilities(link_state(env))
    column = {u: i for i, u in enumerate(sorted(env.users))}
    return {ue.ue_id: float(values[column[ue.ue_id]]) for ue in env.active}


#: `env.reward` -> the stock handler's reward of it (None: mobile-env's own)
REWARDS = {"mobile": None, "utility": utility_rewards, "marginal": marginal_rewards}


@cache
def with_reward(handler: type, reward: str) -> type:
    """`handler` (a multi-agent handler class) paying `env.reward`; the fast engine computes
    the same rewards on its arrays (it reads `reward_kind`). One class per pair, made once:
    every env copy of a run shares it."""
    compute = REWARDS[reward]
    if compute is None:
        return handler
    body = {"reward_kind": reward, "reward": classmethod(lambda cls, env: compute(env))}
    return type(f"{handler.__name__}_{reward}", (handler,), body)
