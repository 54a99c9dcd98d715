"""Service arithmetic on (BS, UE) arrays: each UE's scaled utility for a set of links, each UE's
marginal contribution to the team's utility, and the per-step link set that maximises the
mean UE utility (a start of the `oracle`'s search, mobrl.evaluation.oracle: the link set
itself may be more than one toggle per UE away).

mobile-env serves a UE at every station it links to with the resource-fair share
`bw * log2(1 + snr) / n_b` (n_b: the station's links) and scores the summed rate with its
bounded log utility, scaled to [-1, 1] (-1: no rate, i.e. unconnected). Its central reward is
the mean of that over the active UEs. All functions here take a `LinkState`, read from either
engine by `link_state`, and never change the env.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from mobrl.core.protocols import LinkArrays, StationArrays, implements
from mobrl.radio.links import RadioService

#: improvements smaller than this are rounding, not gains
_EPS = 1e-12
#: link sets up to this many candidate links are searched exhaustively, larger ones locally
EXHAUSTIVE_LINKS = 12


@dataclass
class LinkState:
    """What a step's service depends on: `cap` (BS, UE) rate of each link with all of a
    station's resources (0 out of range), `reach`, `conn` (the links up, all in range),
    `active` (UE mask) and mobile-env's utility model."""

    cap: np.ndarray
    reach: np.ndarray
    conn: np.ndarray
    active: np.ndarray
    lower: float
    upper: float
    coeffs: tuple[float, float, float]
    #: a radio model whose rates are not `cap` over a station's links (interference, another
    #: scheduler, joint transmission: mobrl.radio.links); None: mobile-env's arithmetic
    radio: RadioService | None = None

    def __post_init__(self) -> None:
        self._log_base = float(np.log(self.coeffs[2]))

    def utility(self, rate: np.ndarray) -> np.ndarray:
        """mobile-env's BoundedLogUtility of summed rates, scaled to [-1, 1] (0 rate: -1)."""
        return scaled_utility(rate, self.lower, self.upper, self.coeffs, self._log_base)

    def rates(self, conn: np.ndarray) -> np.ndarray:
        """Each UE's summed rate under the links `conn` (the last axes are (BS, UE))."""
        if self.radio is not None:
            return self.radio.rates(conn)
        counts = conn.sum(axis=-1, keepdims=True)
        return (conn * self.cap / np.maximum(counts, 1)).sum(axis=-2)

    def ue_utilities(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Each UE's scaled utility under `conn` (default: the links up); NaN where inactive."""
        util = self.utility(self.rates(self.conn if conn is None else conn))
        return np.where(self.active, util, np.nan)

    def utility_sum(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Summed scaled utility over the active UEs under `conn` (default: the links up)."""
        util = self.utility(self.rates(self.conn if conn is None else conn))
        return (util * self.active).sum(axis=-1)

    def team_utility(self, conn: np.ndarray | None = None) -> np.ndarray:
        """Mean scaled utility over the active UEs (mobile-env's central reward)."""
        return self.utility_sum(conn) / max(int(self.active.sum()), 1)


def scaled_utility(
    rate: np.ndarray, lower: float, upper: float, coeffs: tuple[float, ...], log_base: float
) -> np.ndarray:
    """mobile-env's BoundedLogUtility (`lower`, `upper`, `coeffs`; `log_base` = log of its
    third coefficient) of summed rates, scaled to [-1, 1] (0 rate: -1), with the engine's
    operations."""
    w1, w2, _ = coeffs
    positive = rate > 0.0
    raw = np.minimum(
        np.maximum(w1 * np.log(w2 + np.where(positive, rate, 1.0)) / log_base, lower),
        upper,
    )
    raw = np.where(positive, raw, lower)
    return 2 * (raw - lower) / (upper - lower) - 1


def toggle(conn: np.ndarray, reach: np.ndarray, *where: np.ndarray) -> None:
    """The step's rule for UEs' station actions, in place: the links of `conn` at `where`
    (index arrays: (station, UE), or a sparse pair index) toggled, a join only where `reach`
    is (the step drops links out of range)."""
    conn[where] = ~conn[where] & reach[where]


def links_after(state: LinkState, actions: np.ndarray) -> np.ndarray:
    """The links after every active UE's station action (UE order; 0: keep, b + 1: toggle
    station b), as the step applies them."""
    conn = state.conn.copy()
    act = np.asarray(actions, dtype=np.int64)
    ues = np.flatnonzero((act > 0) & state.active)
    toggle(conn, state.reach, act[ues] - 1, ues)
    return conn


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


def marginal_utilities(state: LinkState) -> np.ndarray:
    """Each active UE's contribution to the team's summed utility: the sum with its links minus
    the sum had it no links (then its own utility is -1 and its stations' other UEs get larger
    shares). A UE changing its own links changes the team's sum by exactly the change of this
    value (a difference reward with the empty link set as the counterfactual). 0 for inactive.

    Only UEs sharing a station gain when one leaves, so the work grows with the pairs of UEs
    linked to a common station, not with UEs squared (a 100-station / 1,000-UE layout: about
    ten thousand pairs instead of a (BS, UE, UE) array); small layouts keep the dense arrays,
    which are faster there and give the same numbers (tested)."""
    if state.radio is not None:
        return _marginal_coupled(state)
    conn = state.conn
    counts = conn.sum(axis=1)
    rate = state.rates(conn)
    util = state.utility(rate)
    dense = conn.shape[0] * conn.shape[1] ** 2 <= DENSE_MARGINAL
    others = (_others_dense if dense else _others_pairs)(state, counts, rate, util)
    return np.where(state.active, util + 1.0 - others, 0.0)


#: layouts up to this many (BS, UE, UE) entries compute `marginal_utilities` densely
DENSE_MARGINAL = 200_000
#: link sets scored at once under a coupled radio model hold at most this many (BS, UE)
#: entries together (memory, not numbers: the chunks give the same values)
COUPLED_CHUNK = 2_000_000


def utility_sums(state: LinkState, sets: np.ndarray) -> np.ndarray:
    """`utility_sum` of each of the link sets `sets` (n, BS, UE), scored in chunks."""
    size = max(1, COUPLED_CHUNK // max(1, sets.shape[1] * sets.shape[2]))
    if len(sets) <= size:
        return state.utility_sum(sets)
    return np.concatenate(
        [state.utility_sum(sets[i : i + size]) for i in range(0, len(sets), size)]
    )


def column_changes(
    state: LinkState, base: np.ndarray, ues: np.ndarray, cols: np.ndarray, split: bool = False
) -> Any:
    """The change of the team's summed utility when UE ues[i]'s links become cols[i] (n, BS),
    every other UE's as in `base`, for each i (`split`: also the moving UE's own change).
    Under a radio model the rates are recomputed only where a change can move them
    (mobrl.radio.local; under non-coherent joint transmission each link set scored whole)."""
    ues = np.asarray(ues, dtype=np.int64)
    n = len(ues)
    total, own = np.zeros(n), np.zeros(n)
    if not n:
        return (total, own) if split else total
    rate = state.rates(base)
    util = state.utility(rate) * state.active
    whole = np.ones(n, dtype=bool)
    if state.radio is not None:
        from mobrl.radio.local import local_rates

        found = local_rates(state.radio, base, ues, cols)
        whole = ~found.scored
        change = state.utility(found.rate) * state.active[found.ue] - util[found.ue]
        total += np.bincount(found.cand, weights=change, minlength=n)
        mine = found.ue == ues[found.cand]
        own[found.cand[mine]] = change[mine]
    rest = np.flatnonzero(whole)
    size = max(1, COUPLED_CHUNK // max(1, base.size))
    for start in range(0, rest.size, size):  # the other sets scored whole, in chunks
        idx = rest[start : start + size]
        sets = np.repeat(base[None], idx.size, axis=0)
        sets[np.arange(idx.size), :, ues[idx]] = cols[idx]
        after = state.utility(state.rates(sets)) * state.active
        total[idx] = after.sum(axis=1) - util.sum()
        own[idx] = after[np.arange(idx.size), ues[idx]] - util[ues[idx]]
    return (total, own) if split else total


def _marginal_coupled(state: LinkState) -> np.ndarray:
    """`marginal_utilities` under a radio model where a UE's links change others' rates
    (interference, shares beyond a station): the team's sum with the UE's links minus the sum
    without them (`column_changes` to no links)."""
    conn = state.conn
    ues = np.flatnonzero(state.active & conn.any(axis=0))
    out = np.zeros(conn.shape[1])
    if ues.size:
        out[ues] = -column_changes(state, conn, ues, np.zeros((ues.size, conn.shape[0]), bool))
    # an active UE without links contributes nothing: its utility is -1 either way
    return np.where(state.active, out, 0.0)


def _others_dense(
    state: LinkState, counts: np.ndarray, rate: np.ndarray, util: np.ndarray
) -> np.ndarray:
    """Per UE i, the change of the other UEs' summed utility had i no links: (BS, UE, UE)."""
    conn, cap = state.conn, state.cap
    # extra rate UE j gets at station b when one of b's other UEs leaves it
    extra = np.where(
        counts[:, None] >= 2,
        conn * cap * (1.0 / np.maximum(counts - 1, 1) - 1.0 / np.maximum(counts, 1))[:, None],
        0.0,
    )
    # gain[i, j]: UE j's extra rate when UE i drops all its links (elementwise sum, no BLAS)
    gain = (conn[:, :, None] * extra[:, None, :]).sum(axis=0)
    np.fill_diagonal(gain, 0.0)
    return ((state.utility(rate[None, :] + gain) - util[None, :]) * state.active).sum(axis=1)


def _others_pairs(
    state: LinkState, counts: np.ndarray, rate: np.ndarray, util: np.ndarray
) -> np.ndarray:
    """`_others_dense` from the pairs of UEs linked to a common station only."""
    conn, cap = state.conn, state.cap
    ues = conn.shape[1]
    bs, ue = np.nonzero(conn)  # the links, grouped by station (row-major order)
    n = counts[bs]
    # extra rate a link's UE gets at its station when one of the station's other UEs leaves it
    extra = np.where(n >= 2, cap[bs, ue] * (1.0 / np.maximum(n - 1, 1) - 1.0 / n), 0.0)
    # every ordered pair of distinct links at one station: (leaving link p, gaining link q)
    first = np.searchsorted(bs, bs)
    p = np.repeat(np.arange(len(bs)), n)
    q = first[p] + np.arange(len(p)) - np.repeat(np.cumsum(n) - n, n)
    distinct = p != q
    p, q = p[distinct], q[distinct]
    # gain[i, j]: UE j's extra rate when UE i drops all its links (summed over shared stations)
    pairs, where = np.unique(ue[p] * ues + ue[q], return_inverse=True)
    gain = np.bincount(where, extra[q], minlength=len(pairs))
    i, j = pairs // ues, pairs % ues
    change = (state.utility(rate[j] + gain) - util[j]) * state.active[j]
    return np.bincount(i, change, minlength=ues)


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
