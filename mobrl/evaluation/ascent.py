"""The oracle's coordinate ascent (mobrl.evaluation.oracle) on one step's (station, UE) pairs:
`LinkPairs` gathers the pairs a step's search can touch (in range, linked or allowed), in the
order `np.nonzero` gives them on (BS, UE) arrays so that every sum adds up as on those arrays;
`Ascent` scores every UE's every choice on them (a per-UE "keep" vector and a vector over the
candidate pairs) and applies the improving changes whose neighbourhoods do not meet. Its cost
grows with the links in range, not with stations x UEs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network.service import LinkState, toggle

#: rounds of the coordinate ascent per start (each applies at least one improving change)
MAX_ROUNDS = 60
#: gains below this are rounding
EPS = 1e-12


#: `LinkPairs.co_linked` of a link set: the pair indices of links (x, j), (y, j) and UE j
Links = tuple[np.ndarray, np.ndarray, np.ndarray]


class LinkPairs:
    """The (station, UE) pairs one step's search can touch: those in range, linked or
    allowed. On city-scale layouts a UE reaches a handful of the hundreds of stations, so
    the search works on these pairs and on per-UE and per-station vectors, never on
    (BS, UE) arrays. The pairs are kept in (station, UE) order, the order np.nonzero gives
    on the (BS, UE) arrays: the sums over them (np.bincount adds in input order) are the
    same floating-point numbers as those over the full arrays, so gains that tie still tie.
    A link set is a boolean vector over the pairs (`on`)."""

    def __init__(self, state: LinkState, allowed: np.ndarray):
        self.stations, self.ues = state.cap.shape
        b, u = np.nonzero(state.reach | state.conn | allowed)
        self.b, self.u = b, u
        self.key = b * self.ues + u  # ascending: the lookup of a pair's index
        self.cap = state.cap[b, u]
        self.reach = state.reach[b, u]
        self.on = state.conn[b, u]
        # candidate toggles (station cb, UE ci): their pair indices and, for each UE's best
        # choice, the candidates grouped by UE (stations ascending within a UE)
        self.cand = np.flatnonzero(allowed[b, u])
        self.cb, self.ci = b[self.cand], u[self.cand]
        by_ue = np.argsort(self.ci, kind="stable")
        self.by_ue = by_ue
        self.cb_by_ue = self.cb[by_ue]
        ci = self.ci[by_ue]
        new = _starts(ci)
        self.group_start = np.flatnonzero(new)
        self.group_ue = ci[self.group_start]
        self.group_of = np.cumsum(new) - 1

    def index(self, b: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Pair index of each (station b, UE u); every pair asked for must be one of them."""
        return np.searchsorted(self.key, b * self.ues + u)

    def co_linked(self, on: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ordered pair of distinct links (x, j), (y, j) of one UE j in `on`: the pair
        indices of both links and j, grouped by UE (ascending) and x, y within a UE in
        station order. Only such UEs make two stations' shares depend on each other."""
        linked = np.flatnonzero(on)
        per_ue = np.bincount(self.u[linked], minlength=self.ues)
        linked = linked[per_ue[self.u[linked]] >= 2]
        if not linked.size:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        linked = linked[np.argsort(self.u[linked], kind="stable")]
        j = self.u[linked]
        n = per_ue[j]
        first = np.searchsorted(j, j)
        p = np.repeat(np.arange(len(j)), n)
        q = first[p] + np.arange(len(p)) - np.repeat(np.cumsum(n) - n, n)
        distinct = p != q
        p, q = p[distinct], q[distinct]
        return linked[p], linked[q], j[p]


class Ascent:
    """Coordinate ascent over one-toggle-per-UE actions of one step's `LinkState`, on the
    step's `LinkPairs`; `base` is the link set the actions start from (default: the links up)."""

    def __init__(
        self,
        state: LinkState,
        allowed: np.ndarray,
        pairs: LinkPairs | None = None,
        base: np.ndarray | None = None,
    ):
        self.state = state
        self.allowed = allowed
        self.pairs = LinkPairs(state, allowed) if pairs is None else pairs
        self.base = self.pairs.on if base is None else base

    def valid(self, actions: np.ndarray) -> np.ndarray:
        """`actions` with every toggle the search may not make replaced by 0."""
        act = np.asarray(actions, dtype=np.int64).copy()
        on = np.flatnonzero(act > 0)
        ok = self.allowed[act[on] - 1, on]
        act[on[~ok]] = 0
        return act

    def apply(self, actions: np.ndarray) -> np.ndarray:
        """`mobrl.network.service.links_after` on the pairs: the link set after `actions` (valid ones)
        from `base`."""
        pairs, on = self.pairs, self.base.copy()
        ues = np.flatnonzero((actions > 0) & self.state.active)
        k = pairs.index(actions[ues] - 1, ues)
        toggle(on, pairs.reach, k)
        return on

    def value(self, on: np.ndarray) -> np.floating:
        """`LinkState.utility_sum` of the link set `on`, added up in the same order."""
        pairs = self.pairs
        lb = pairs.b[on]
        counts = np.bincount(lb, minlength=pairs.stations)
        share = pairs.cap[on] / np.maximum(counts, 1)[lb]
        rate = np.bincount(pairs.u[on], share, minlength=pairs.ues)
        return (self.state.utility(rate) * self.state.active).sum(axis=-1)

    def run(self, actions: np.ndarray, stats: dict[str, Any] | None) -> tuple[np.ndarray, float]:
        """Improve `actions` until no UE's change pays (or `MAX_ROUNDS`): actions and their
        summed utility."""
        acts = actions.copy()
        on = self.apply(acts)
        rounds = 0
        for rounds in range(1, MAX_ROUNDS + 1):  # noqa: B007
            if not self.round(acts, [on]):
                break
        if stats is not None:
            stats["rounds"] = stats.get("rounds", 0) + rounds
            stats["runs"] = stats.get("runs", 0) + 1
        return acts, float(self.value(on))

    def round(self, acts: np.ndarray, ons: list[np.ndarray]) -> bool:
        """One round of the ascent: score every UE's every choice on the summed utility of
        the link sets `ons` (each holds `acts`' toggles), then apply the independent improving
        changes to `acts` and to each of `ons`; False when none improves."""
        links = [self.pairs.co_linked(on) for on in ons]
        stay, move = self.gains(ons[0], acts, links[0])
        for on, linked in zip(ons[1:], links[1:]):
            more = self.gains(on, acts, linked)
            stay, move = stay + more[0], move + more[1]
        choice, gain = self.choose(stay, move)
        improving = np.flatnonzero(gain > EPS)
        if not improving.size:
            return False
        chosen = self._independent(ons, links, acts, improving, choice, gain)
        chosen = np.array(chosen, dtype=np.int64)
        old, new = acts[chosen] - 1, choice[chosen] - 1
        undo, do = old >= 0, new >= 0
        k = self.pairs.index(
            np.concatenate((old[undo], new[do])), np.concatenate((chosen[undo], chosen[do]))
        )
        for on in ons:
            on[k] = ~on[k]
        acts[chosen] = choice[chosen]
        return True

    def choose(self, stay: np.ndarray, move: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each UE's best action and its gain: no toggle when nothing beats `stay`, else the
        lowest station among the best `move`s (the (UE, 1 + BS) table's row argmax)."""
        pairs = self.pairs
        choice = np.zeros(pairs.ues, dtype=np.int64)
        gain = stay.copy()
        if not len(move):
            return choice, gain
        ordered = move[pairs.by_ue]
        top = np.maximum.reduceat(ordered, pairs.group_start)
        better = top > stay[pairs.group_ue]
        if better.any():
            hit = np.flatnonzero(ordered == top[pairs.group_of])
            first = hit[_starts(pairs.group_of[hit])]  # one per group, groups in order
            ues = pairs.group_ue[better]
            choice[ues] = pairs.cb_by_ue[first[better]] + 1
            gain[ues] = top[better]
        return choice, gain

    def gains(
        self, on: np.ndarray, acts: np.ndarray, links: Links | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Change of the summed utility of `on` when a UE's action changes from `acts`
        (which `on` holds): per UE to no toggle (`stay`), per candidate pair (cb, ci) to
        toggling it (`move`; -inf for inactive UEs). `links`: `LinkPairs.co_linked` of `on`."""
        pairs, utility = self.pairs, self.state.utility
        counts, rate, util, add_b, rem_b, leave_link = self._linked(on)

        def toggle(k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """The UE's own rate change and the others' utility change when pair k (station
            b) toggles."""
            linked, c, n = on[k], pairs.cap[k], counts[b]
            own = np.where(linked, -c / np.maximum(n, 1), c / (n + 1))
            return own, np.where(linked, rem_b[b] - leave_link[k], add_b[b])

        cb, ci = pairs.cb, pairs.ci
        own, others = toggle(pairs.cand, cb)
        cur = acts - 1  # each UE's current toggle (-1: none), undone by toggling it again
        has = np.flatnonzero(cur >= 0)
        cur_pair = np.full(pairs.ues, -1)
        cur_pair[has] = pairs.index(cur[has], has)
        rev_own, rev_oth = np.zeros(pairs.ues), np.zeros(pairs.ues)
        rev_own[has], rev_oth[has] = toggle(cur_pair[has], cur[has])
        s = cur[ci]
        two = (s >= 0) & (s != cb)
        move = utility(rate[ci] + own + rev_own[ci]) - util[ci] + others
        move += np.where(two, rev_oth[ci], 0.0)
        move = np.where(s == cb, 0.0, move)
        if two.any():
            two = np.flatnonzero(two)
            i = ci[two]
            move[two] += self._shared(
                pairs.co_linked(on) if links is None else links,
                on,
                counts,
                rate,
                util,
                (cb[two], i, s[two], pairs.cand[two], cur_pair[i]),
            )
        stay = np.zeros(pairs.ues)
        stay[has] = utility(rate[has] + rev_own[has]) - util[has] + rev_oth[has]
        active = self.state.active
        move[~active[ci]] = -np.inf
        stay[~active] = 0.0
        return stay, move

    def _linked(self, on: np.ndarray) -> tuple[np.ndarray, ...]:
        """What `gains` builds on, from the links `on`: UEs per station, each UE's rate and
        utility; per station, the summed utility change of its linked UEs when it gains or
        loses a UE; per pair in use, its UE's utility change when the station loses another."""
        pairs, utility = self.pairs, self.state.utility
        k = np.flatnonzero(on)
        lb, lj, link_cap = pairs.b[k], pairs.u[k], pairs.cap[k]
        counts = np.bincount(lb, minlength=pairs.stations)
        nl = counts[lb].astype(float)
        rate = np.bincount(lj, link_cap / nl, minlength=pairs.ues)
        util = utility(rate)
        # each linked UE's utility change when its station gains or loses another UE
        join_delta = link_cap * (1.0 / (nl + 1) - 1.0 / nl)
        leave_delta = np.where(nl >= 2, link_cap * (1.0 / np.maximum(nl - 1, 1) - 1.0 / nl), 0.0)
        base = util[lj]
        gj = utility(rate[lj] + join_delta) - base
        gl = utility(rate[lj] + leave_delta) - base
        add_b = np.bincount(lb, gj, minlength=pairs.stations)
        rem_b = np.bincount(lb, gl, minlength=pairs.stations)
        leave_link = np.zeros(len(on))
        leave_link[k] = gl
        return counts, rate, util, add_b, rem_b, leave_link

    def _shared(
        self,
        links: Links,
        on: np.ndarray,
        counts: np.ndarray,
        rate: np.ndarray,
        util: np.ndarray,
        changes: tuple[np.ndarray, ...],
    ) -> np.ndarray:
        """The part of two toggles' gain (`changes`: UE i at stations s and b, pairs ks and
        kb) the single toggles' sums miss: other UEs linked at both stations get both share
        changes at once. Added up per change in UE order, as over the (BS, UE) arrays.
        `links`: `LinkPairs.co_linked` of `on`."""
        pairs = self.pairs
        b, i, s, kb, ks = changes
        out = np.zeros(len(b))
        at_x, at_y, j = links
        if not j.size:
            return out
        # the co-linked pairs by station pair (x, y), UEs ascending within each
        key = pairs.b[at_x] * pairs.stations + pairs.b[at_y]
        order = np.argsort(key, kind="stable")
        key, at_x, at_y, j = key[order], at_x[order], at_y[order], j[order]
        want = s * pairs.stations + b
        lo = np.searchsorted(key, want, side="left")
        n = np.searchsorted(key, want, side="right") - lo
        p = np.repeat(np.arange(len(b)), n)
        t = lo[p] + np.arange(len(p)) - np.repeat(np.cumsum(n) - n, n)
        other = j[t] != i[p]
        p, t = p[other], t[other]
        if not p.size:
            return out
        jj, utility = j[t], self.state.utility

        def delta(st: np.ndarray, mine: np.ndarray, link: np.ndarray) -> np.ndarray:
            n = counts[st].astype(float)
            after = np.where(on[mine], n - 1, n + 1)
            return pairs.cap[link] * (1.0 / after - 1.0 / n)

        ds, db = delta(s[p], ks[p], at_x[t]), delta(b[p], kb[p], at_y[t])
        r = rate[jj]
        corr = utility(r + ds + db) - utility(r + ds) - utility(r + db) + util[jj]
        return np.bincount(p, corr, minlength=len(b))

    def _independent(
        self,
        ons: list[np.ndarray],
        links: list[Links],
        acts: np.ndarray,
        improving: np.ndarray,
        choice: np.ndarray,
        gain: np.ndarray,
    ) -> list[int]:
        """The improving changes, best first, whose gains do not depend on each other: a
        change touches the stations it toggles (T) and depends on the stations of the UEs
        linked there and its own (S), in each of `ons` (`links`: their co-linked pairs); one
        is taken when its T meets no taken S and its S no taken T. Station sets are ints
        (bit b: station b)."""
        order = improving[np.argsort(-gain[improving], kind="stable")]
        if len(order) == 1:
            return order.tolist()
        pairs = self.pairs
        # stations that share a UE linked to both, in any of `ons`
        adjacent: dict[int, int] = {}
        x = np.concatenate([pairs.b[at_x] for at_x, _, _ in links]).tolist()
        y = np.concatenate([pairs.b[at_y] for _, at_y, _ in links]).tolist()
        for bx, by in zip(x, y):
            adjacent[bx] = adjacent.get(bx, 0) | 1 << by
        # each ordered UE's linked stations, in any of `ons`
        linked = np.logical_or.reduce(ons) if len(ons) > 1 else ons[0]
        wanted = np.zeros(pairs.ues, dtype=bool)
        wanted[order] = True
        own: dict[int, int] = {}
        k = np.flatnonzero(linked & wanted[pairs.u])
        for b, u in zip(pairs.b[k].tolist(), pairs.u[k].tolist()):
            own[u] = own.get(u, 0) | 1 << b
        taken_t = taken_s = 0
        chosen = []
        olds, news = (acts[order] - 1).tolist(), (choice[order] - 1).tolist()
        for ue, old, new in zip(order.tolist(), olds, news):
            touched = (1 << old if old >= 0 else 0) | (1 << new if new >= 0 else 0)
            if touched & taken_s:
                continue
            reach = touched | own.get(ue, 0)
            if old >= 0:
                reach |= adjacent.get(old, 0)
            if new >= 0:
                reach |= adjacent.get(new, 0)
            if reach & taken_t:
                continue
            chosen.append(ue)
            taken_t |= touched
            taken_s |= reach
        return chosen


def _starts(groups: np.ndarray) -> np.ndarray:
    """Where each run of equal values of `groups` starts (a boolean mask)."""
    new = np.ones(len(groups), dtype=bool)
    np.not_equal(groups[1:], groups[:-1], out=new[1:])
    return new
