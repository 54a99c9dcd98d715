"""The `oracle` reference: each step, the actions mobile-env allows (every UE keeps its links
or toggles one station in range) that give the highest mean UE utility of that step, the
value mobile-env computes after applying them (mobrl.envs.service.LinkState holds what it
depends on).

Exhaustive where the product of the UEs' choices is at most `EXHAUSTIVE_ACTIONS`; otherwise a
coordinate ascent from several starts: each round scores every UE's every choice exactly on
(BS, UE) arrays, then applies the best improving change of each UE whose neighbourhood (the
stations its change touches and the stations of the UEs there) no other change of the round
touches, so the gains of one round add up exactly. `StepSearch` keeps what the next step
starts from; `stats` counts rounds and which start won.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from mobrl.envs.service import LinkState, best_links, toward

#: action sets up to this many joint choices are searched exhaustively
EXHAUSTIVE_ACTIONS = 4096
#: rounds of the coordinate ascent per start (each applies at least one improving change)
MAX_ROUNDS = 60
#: link sets up to this many candidate links also start from the best link set's first move
#: (its local search changes one link at a time, too slow for thousands of links)
PLAN_LINKS = 400
#: gains below this are rounding
_EPS = 1e-12


def apply_actions(state: LinkState, actions: np.ndarray) -> np.ndarray:
    """The links after every active UE's station action (0: keep, b + 1: toggle station b; a
    join needs b in range), as mobile-env's step applies them."""
    conn = state.conn.copy()
    act = np.asarray(actions, dtype=np.int64)
    ues = np.flatnonzero((act > 0) & state.active)
    rows = act[ues] - 1
    conn[rows, ues] = ~conn[rows, ues] & state.reach[rows, ues]
    return conn


def step_utility(state: LinkState, actions: np.ndarray) -> float:
    """The step's mean UE utility (mobile-env's central reward) after `actions`."""
    return float(state.team_utility(apply_actions(state, actions)))


def best_actions(
    state: LinkState,
    starts: list[np.ndarray] = (),  # type: ignore[assignment]
    allowed: np.ndarray | None = None,
    stats: dict[str, Any] | None = None,
) -> np.ndarray:
    """The station actions (UE order) with the highest step utility: exhaustive when the
    joint choices are few, else the best coordinate ascent from no change and each of
    `starts`. `allowed` (BS, UE) limits the stations a UE may toggle (default: in range)."""
    allowed = state.reach if allowed is None else allowed & state.reach
    per_ue = allowed.sum(axis=0)
    if math.prod((per_ue + 1).tolist()) <= EXHAUSTIVE_ACTIONS:
        return exhaustive_actions(state, allowed)
    search = _Ascent(state, allowed)
    best, best_value, won = np.zeros(len(state.active), dtype=np.int64), -np.inf, 0
    seen: list[np.ndarray] = []
    for n, start in enumerate([np.zeros(len(state.active), dtype=np.int64), *starts]):
        start = search.valid(start)
        if any(np.array_equal(start, s) for s in seen):
            continue
        seen.append(start)
        actions, value = search.run(start, stats)
        if value > best_value + _EPS:
            best, best_value, won = actions, value, n
    if stats is not None:
        stats.setdefault("won", {}).setdefault(won, 0)
        stats["won"][won] += 1
    return best


def lookahead_actions(
    state: LinkState,
    starts: list[np.ndarray] = (),  # type: ignore[assignment]
    allowed: np.ndarray | None = None,
    stats: dict[str, Any] | None = None,
) -> np.ndarray:
    """The first step of the best two-step plan with this step's SNRs held for the next one:
    actions a1 then a2 maximising the summed utility of both steps, by alternating a
    coordinate ascent over a2 (the next step's search from a1's links) and one over a1
    scored on both steps. Starts: the one-step best and each of `starts`."""
    allowed = state.reach if allowed is None else allowed & state.reach
    first = _Ascent(state, allowed)
    candidates = [best_actions(state, starts, allowed, stats), *map(first.valid, starts)]
    best, best_value = candidates[0], -np.inf
    for a1 in candidates:
        a1, value = _two_steps(first, a1.copy())
        if value > best_value + _EPS:
            best, best_value = a1, value
    return best


def _two_steps(first: _Ascent, a1: np.ndarray) -> tuple[np.ndarray, float]:
    state = first.state
    a2 = np.zeros_like(a1)
    value = -np.inf
    for _ in range(4):
        c1 = apply_actions(state, a1)
        after = replace(state, conn=c1)
        a2, v2 = _Ascent(after, first.allowed).run(a2, None)
        c2 = apply_actions(after, a2)
        for _ in range(MAX_ROUNDS):
            if not first.improve(a1, first.table(c1, a1) + first.table(c2, a1), [c1, c2]):
                break
        now = float(state.utility_sum(c1) + state.utility_sum(c2))
        if now <= value + _EPS:
            break
        value = now
    return a1, value


def exhaustive_actions(state: LinkState, allowed: np.ndarray | None = None) -> np.ndarray:
    """Every joint choice scored at once (among equals, the one with the fewest toggles)."""
    allowed = state.reach if allowed is None else allowed & state.reach
    movers = np.flatnonzero(allowed.any(axis=0))
    actions = np.zeros(len(state.active), dtype=np.int64)
    if not movers.size:
        return actions
    options = [np.concatenate(([0], np.flatnonzero(allowed[:, i]) + 1)) for i in movers]
    grid = np.stack(np.meshgrid(*options, indexing="ij"), axis=-1).reshape(-1, len(movers))
    sets = np.repeat(state.conn[None], len(grid), axis=0)
    for m, ue in enumerate(movers.tolist()):
        act = grid[:, m]
        on = np.flatnonzero(act > 0)
        sets[on, act[on] - 1, ue] = ~sets[on, act[on] - 1, ue]
    values = state.utility_sum(sets)
    toggles = (grid > 0).sum(axis=1)
    top = np.flatnonzero(values >= values.max() - _EPS)
    actions[movers] = grid[top[np.argmin(toggles[top])]]
    return actions


class _Ascent:
    """Coordinate ascent over one-toggle-per-UE actions of one step's `LinkState`."""

    def __init__(self, state: LinkState, allowed: np.ndarray):
        self.state = state
        self.allowed = allowed
        self.cb, self.ci = np.nonzero(allowed)  # candidate toggles (station, UE)
        self.ues = len(state.active)
        self.stations = state.cap.shape[0]

    def valid(self, actions: np.ndarray) -> np.ndarray:
        """`actions` with every toggle the search may not make replaced by 0."""
        act = np.asarray(actions, dtype=np.int64).copy()
        on = np.flatnonzero(act > 0)
        ok = self.allowed[act[on] - 1, on]
        act[on[~ok]] = 0
        return act

    def run(self, actions: np.ndarray, stats: dict[str, Any] | None) -> tuple[np.ndarray, float]:
        """Improve `actions` until no UE's change pays (or `MAX_ROUNDS`): actions and their
        summed utility."""
        acts = actions.copy()
        conn = apply_actions(self.state, acts)
        rounds = 0
        for rounds in range(1, MAX_ROUNDS + 1):  # noqa: B007
            if not self.improve(acts, self.table(conn, acts), [conn]):
                break
        if stats is not None:
            stats["rounds"] = stats.get("rounds", 0) + rounds
            stats["runs"] = stats.get("runs", 0) + 1
        return acts, float(self.state.utility_sum(conn))

    def improve(self, acts: np.ndarray, table: np.ndarray, conns: list[np.ndarray]) -> bool:
        """Apply the independent improving changes of `table` to `acts` and to each of
        `conns` (link sets that hold `acts`' toggles); False when none improves."""
        choice = np.argmax(table, axis=1)
        gain = table[np.arange(self.ues), choice]
        improving = np.flatnonzero(gain > _EPS)
        if not improving.size:
            return False
        for ue in self._independent(conns, acts, improving, choice, gain):
            for b in {int(acts[ue]) - 1, int(choice[ue]) - 1} - {-1}:
                for conn in conns:
                    conn[b, ue] = ~conn[b, ue]
            acts[ue] = choice[ue]
        return True

    def table(self, conn: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """(UE, 1 + BS) change of the summed utility of `conn` when a UE's action changes from
        `acts` (which `conn` holds) to no toggle (column 0) or to toggling station b (b + 1);
        -inf where not allowed."""
        st, cap, cb, ci = self.state, self.state.cap, self.cb, self.ci
        utility = st.utility
        counts = conn.sum(axis=1)
        lb, lj = np.nonzero(conn)
        link_cap = cap[lb, lj]
        nl = counts[lb].astype(float)
        rate = np.bincount(lj, link_cap / nl, minlength=self.ues)
        util = utility(rate)
        # each linked UE's utility change when its station gains or loses another UE
        join_delta = link_cap * (1.0 / (nl + 1) - 1.0 / nl)
        leave_delta = np.where(nl >= 2, link_cap * (1.0 / np.maximum(nl - 1, 1) - 1.0 / nl), 0.0)
        base = util[lj]
        gj = utility(rate[lj] + join_delta) - base
        gl = utility(rate[lj] + leave_delta) - base
        add_b = np.bincount(lb, gj, minlength=self.stations)
        rem_b = np.bincount(lb, gl, minlength=self.stations)
        leave_link = np.zeros_like(cap)
        leave_link[lb, lj] = gl

        def toggle(b: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """UE i's own rate change and the others' utility change when i toggles b."""
            on, c, n = conn[b, i], cap[b, i], counts[b]
            own = np.where(on, -c / np.maximum(n, 1), c / (n + 1))
            return own, np.where(on, rem_b[b] - leave_link[b, i], add_b[b])

        own, others = toggle(cb, ci)
        cur = acts - 1  # each UE's current toggle (-1: none), undone by toggling it again
        has = np.flatnonzero(cur >= 0)
        rev_own, rev_oth = np.zeros(self.ues), np.zeros(self.ues)
        rev_own[has], rev_oth[has] = toggle(cur[has], has)
        s = cur[ci]
        two = (s >= 0) & (s != cb)
        gain = utility(rate[ci] + own + rev_own[ci]) - util[ci] + others
        gain += np.where(two, rev_oth[ci], 0.0)
        gain = np.where(s == cb, 0.0, gain)
        gain[two] += self._shared(conn, counts, rate, util, cb[two], ci[two], s[two])
        table = np.full((self.ues, self.stations + 1), -np.inf)
        table[ci, cb + 1] = gain
        table[:, 0] = np.where(cur >= 0, utility(rate + rev_own) - util + rev_oth, 0.0)
        table[~st.active] = -np.inf
        table[~st.active, 0] = 0.0
        return table

    def _shared(
        self,
        conn: np.ndarray,
        counts: np.ndarray,
        rate: np.ndarray,
        util: np.ndarray,
        b: np.ndarray,
        i: np.ndarray,
        s: np.ndarray,
    ) -> np.ndarray:
        """The part of two toggles' gain (UE i at stations s and b) the single toggles' sums
        miss: other UEs linked at both stations get both share changes at once."""
        out = np.zeros(len(b))
        multi = np.flatnonzero(conn.sum(axis=0) >= 2)
        if not multi.size or not len(b):
            return out
        both = conn[s][:, multi] & conn[b][:, multi] & (multi[None, :] != i[:, None])
        p, m = np.nonzero(both)
        if not p.size:
            return out
        j, cap, utility = multi[m], self.state.cap, self.state.utility

        def delta(st: np.ndarray) -> np.ndarray:
            n = counts[st].astype(float)
            after = np.where(conn[st, i[p]], n - 1, n + 1)
            return cap[st, j] * (1.0 / after - 1.0 / n)

        ds, db = delta(s[p]), delta(b[p])
        r = rate[j]
        corr = utility(r + ds + db) - utility(r + ds) - utility(r + db) + util[j]
        return np.bincount(p, corr, minlength=len(b))

    def _independent(
        self,
        conns: list[np.ndarray],
        acts: np.ndarray,
        improving: np.ndarray,
        choice: np.ndarray,
        gain: np.ndarray,
    ) -> list[int]:
        """The improving changes, best first, whose gains do not depend on each other: a
        change touches the stations it toggles (T) and depends on the stations of the UEs
        linked there and its own (S), in each of `conns`; one is taken when its T meets no
        taken S and its S no taken T."""
        order = improving[np.argsort(-gain[improving], kind="stable")]
        if len(order) == 1:
            return order.tolist()
        shared = np.eye(self.stations, dtype=bool)
        linked = np.zeros((len(order), self.stations), dtype=bool)
        for conn in conns:
            multi = conn[:, conn.sum(axis=0) >= 2].astype(np.float32)  # UEs that join stations
            shared |= multi @ multi.T > 0
            linked |= conn[:, order].T
        adjacent, own = _bits(shared), _bits(linked)
        taken_t = taken_s = 0
        chosen = []
        for ue, mine in zip(order.tolist(), own):
            touched = 0
            for b in {int(acts[ue]) - 1, int(choice[ue]) - 1} - {-1}:
                touched |= 1 << b
            if touched & taken_s:
                continue
            reach = touched | mine
            bits = touched
            while bits:
                low = bits & -bits
                reach |= adjacent[low.bit_length() - 1]
                bits ^= low
            if reach & taken_t:
                continue
            chosen.append(ue)
            taken_t |= touched
            taken_s |= reach
        return chosen


def _bits(rows: np.ndarray) -> list[int]:
    """Each row of a boolean matrix as an int (bit b: column b)."""
    packed = np.packbits(rows, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


class StepSearch:
    """The oracle's decisions along an episode: each step `best_actions` from no change,
    greedy's move, the first move towards the step's best link set and towards the previous
    step's (a plan that needs two toggles, carried on)."""

    def __init__(self, lookahead: bool = False) -> None:
        self.lookahead = lookahead
        self.target: np.ndarray | None = None
        self.stats: dict[str, Any] = {}

    def decide(self, core: Any, greedy: np.ndarray) -> np.ndarray:
        """Every UE's station action this step (UE order), `greedy` its greedy move."""
        from mobrl.envs.service import link_state

        return self.decide_state(link_state(core), greedy, toggleable(core))

    def decide_state(
        self, state: LinkState, greedy: np.ndarray, allowed: np.ndarray | None = None
    ) -> np.ndarray:
        starts = [np.asarray(greedy, dtype=np.int64)]
        if self.target is not None and self.target.shape == state.conn.shape:
            starts.append(toward(state, self.target & state.reach))
        if np.count_nonzero(state.reach) <= PLAN_LINKS:
            self.target = best_links(state)
            starts.append(toward(state, self.target))
        search = lookahead_actions if self.lookahead else best_actions
        return search(state, starts, allowed, self.stats)


def toggleable(core: Any) -> np.ndarray | None:
    """(BS, UE) stations each UE's action can name: with `env.obs=topk` those in its slots,
    else None (every station in range)."""
    k = getattr(core.handler, "topk", None)
    if k is None:
        return None
    from mobrl.envs.observations import station_arrays, topk_slots

    order = topk_slots(station_arrays(core), k)
    allowed = np.zeros((core.NUM_STATIONS, order.shape[1]), dtype=bool)
    slot, ue = np.nonzero(order >= 0)
    allowed[order[slot, ue], ue] = True
    return allowed
