"""`energy_oracle`: the reference for cells that sleep. Each step it picks the stations to
keep on the air that maximise the objective, service − λ·energy (docs/energy.md), over the
next two steps at the UEs' current positions: the step now, in which a station told to wake
is still waking, and the one after, in which it serves, from the links the first left. UEs link by `greedy`, as under the
rules. Its predictions are the engine's own step (`mobrl.network.power_predict`).

The search: every set of stations where there are at most `EXHAUSTIVE_STATIONS`; above, a
local search from the best of `all_on`, `idle_off` and `threshold`'s sets, switching one
station at a time while that helps. Starting from the rules' sets and never accepting a
worse one, it never predicts less than they would get in the same state
(`scripts/energy_reference_quality.py` holds the search against exhaustive search).

`energy_greedy` makes the same prediction in one pass: from the least loaded station, each
leaves the air if that raises the predicted objective given the ones before it (the others
on). It is the sequence of decisions cells taking turns would make with the predictor's
answer to "what would my sleeping change?" (docs/energy.md), at 2 predictions a station."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from mobrl.evaluation.baselines.energy import CellRule, ThresholdPolicy, wanted

#: networks of at most this many stations are searched exhaustively (2^n sets a step)
EXHAUSTIVE_STATIONS = 10
#: a local search stops after this many improving switches per station
_PASSES = 3


class EnergyOraclePolicy(CellRule):
    """The best stations on the air for the next two steps, by the engine's own arithmetic."""

    name = "energy_oracle"
    weighs = True
    exhaustive = EXHAUSTIVE_STATIONS

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.threshold = ThresholdPolicy()
        self.threshold.reset(seed)

    def cell_states(self, core: Any) -> np.ndarray | None:
        n = len(core.stations)
        # once a step: threshold counts the steps a cell's load stays low
        self._threshold_on = self.threshold.cell_states(core) == 0
        return self.given(core, np.zeros(n, dtype=bool), np.ones(n, dtype=bool))

    def given(self, core: Any, decided: np.ndarray, on: np.ndarray) -> np.ndarray:
        """Every station's state, the stations `decided` kept on or off the air as in `on`
        (cells deciding in turns: the requests before a turn) and the others searched, from
        the rules' sets of this step (`cell_states` first)."""
        from mobrl.network.power_predict import SleepPlan

        plan = SleepPlan(core, self.sleep_state(core), self.weight, self.floor)
        n = len(core.stations)
        starts = [np.ones(n, dtype=bool), wanted(core), self._threshold_on]
        if decided.any():
            starts = [np.where(decided, on, s) for s in starts]
        if n <= self.exhaustive:
            return plan.states(_exhaustive(n, plan.score, decided, on))
        return plan.states(_local(max(starts, key=plan.score), plan.score, ~decided))


class EnergyGreedyPolicy(CellRule):
    """The reference's prediction in one pass: stations from the least loaded leave the air
    while each raises the predicted objective of the next two steps, given those before it."""

    name = "energy_greedy"
    weighs = True

    def cell_states(self, core: Any) -> np.ndarray | None:
        from mobrl.network.offload import Offload
        from mobrl.network.power_predict import SleepPlan

        plan = SleepPlan(core, self.sleep_state(core), self.weight, self.floor)
        on = np.ones(len(core.stations), dtype=bool)
        for b in Offload(core).by_load():
            if plan.gain(on, b) > 1e-12:
                on[b] = False
        return plan.states(on)


def _exhaustive(
    n: int, score: Any, decided: np.ndarray | None = None, given: np.ndarray | None = None
) -> np.ndarray:
    """The best of all 2^n sets of stations on the air (ties: the first, most on), those with
    the stations `decided` as in `given` only."""
    best, top = None, -np.inf
    for bits in itertools.product((True, False), repeat=n):
        on = np.array(bits)
        if decided is not None and (on[decided] != given[decided]).any():
            continue
        value = score(on)
        if value > top + 1e-12:
            best, top = on, value
    return best


def _local(start: np.ndarray, score: Any, free: np.ndarray | None = None) -> np.ndarray:
    """From `start`, switch the one station (of those `free`) that helps most, while one
    does."""
    on, top = start.copy(), score(start)
    free = np.ones(on.size, dtype=bool) if free is None else free
    for _ in range(_PASSES * on.size):
        gains = []
        for b in range(on.size):
            if not free[b]:
                gains.append(-np.inf)
                continue
            trial = on.copy()
            trial[b] = not trial[b]
            gains.append(score(trial))
        b = int(np.argmax(gains))
        if gains[b] <= top + 1e-12:
            break
        on[b], top = not on[b], gains[b]
    return on


RULES = (EnergyOraclePolicy, EnergyGreedyPolicy)
