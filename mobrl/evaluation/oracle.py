"""The `oracle` reference: each step, the actions mobile-env allows (every UE keeps its links
or toggles one station in range) that give the highest mean UE utility of that step, the
value mobile-env computes after applying them (mobrl.network.service.LinkState holds what it
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
from typing import Any

import numpy as np

from mobrl.evaluation.ascent import EPS, MAX_ROUNDS, Ascent
from mobrl.evaluation.coupled import coupled_best, coupled_lookahead
from mobrl.network.service import LinkState, best_links, links_after, toward, utility_sums

#: action sets up to this many joint choices are searched exhaustively
EXHAUSTIVE_ACTIONS = 4096
#: link sets up to this many candidate links also start from the best link set's first move
#: (its local search changes one link at a time, too slow for thousands of links)
PLAN_LINKS = 400


def step_utility(state: LinkState, actions: np.ndarray) -> float:
    """The step's mean UE utility (mobile-env's central reward) after `actions`."""
    return float(state.team_utility(links_after(state, actions)))


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
    if _few_choices(allowed):
        return exhaustive_actions(state, allowed)
    if state.radio is not None:  # rates coupled beyond a station: score sets whole
        return coupled_best(state, allowed, list(starts))
    return _best_of(Ascent(state, allowed), starts, stats)


def _few_choices(allowed: np.ndarray) -> bool:
    """Whether the joint choices (each UE: keep or toggle one allowed station) are at most
    `EXHAUSTIVE_ACTIONS`. Each UE that can move at least doubles them, so on big layouts
    the count of such UEs settles it without the per-UE sums."""
    if 1 << min(int(np.count_nonzero(allowed.any(axis=0))), 63) > EXHAUSTIVE_ACTIONS:
        return False
    return math.prod((allowed.sum(axis=0) + 1).tolist()) <= EXHAUSTIVE_ACTIONS


def _best_of(search: Ascent, starts: list[np.ndarray], stats: dict[str, Any] | None) -> np.ndarray:
    """`best_actions` with the step's pairs already gathered in `search`."""
    state = search.state
    if _few_choices(search.allowed):
        return exhaustive_actions(state, search.allowed)
    best, best_value, won = np.zeros(len(state.active), dtype=np.int64), -np.inf, 0
    seen: list[np.ndarray] = []
    for n, start in enumerate([np.zeros(len(state.active), dtype=np.int64), *starts]):
        start = search.valid(start)
        if any(np.array_equal(start, s) for s in seen):
            continue
        seen.append(start)
        actions, value = search.run(start, stats)
        if value > best_value + EPS:
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
    if state.radio is not None:
        return coupled_lookahead(state, allowed, list(starts))
    first = Ascent(state, allowed)
    candidates = [_best_of(first, starts, stats), *map(first.valid, starts)]
    best, best_value = candidates[0], -np.inf
    for a1 in candidates:
        a1, value = _two_steps(first, a1.copy())
        if value > best_value + EPS:
            best, best_value = a1, value
    return best


def _two_steps(first: Ascent, a1: np.ndarray) -> tuple[np.ndarray, float]:
    a2 = np.zeros_like(a1)
    value = -np.inf
    for _ in range(4):
        c1 = first.apply(a1)
        second = Ascent(first.state, first.allowed, first.pairs, c1)
        a2, _ = second.run(a2, None)
        c2 = second.apply(a2)
        for _ in range(MAX_ROUNDS):
            if not first.round(a1, [c1, c2]):
                break
        now = float(first.value(c1) + first.value(c2))
        if now <= value + EPS:
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
    values = utility_sums(state, sets)
    toggles = (grid > 0).sum(axis=1)
    top = np.flatnonzero(values >= values.max() - EPS)
    actions[movers] = grid[top[np.argmin(toggles[top])]]
    return actions


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
        from mobrl.network.service import link_state

        return self.decide_state(link_state(core), greedy, toggleable(core))

    def decide_state(
        self, state: LinkState, greedy: np.ndarray, allowed: np.ndarray | None = None
    ) -> np.ndarray:
        starts = [np.asarray(greedy, dtype=np.int64)]
        if self.target is not None and self.target.shape == state.conn.shape:
            starts.append(toward(state, self.target & state.reach))
        if state.radio is None and np.count_nonzero(state.reach) <= PLAN_LINKS:
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
    from mobrl.envs.observations import slot_mask, station_arrays, topk_slots

    return slot_mask(topk_slots(station_arrays(core), k), core.NUM_STATIONS)
