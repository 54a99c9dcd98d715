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
    exhaustive = EXHAUSTIVE_STATIONS

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.threshold = ThresholdPolicy()
        self.threshold.reset(seed)

    def cell_states(self, core: Any) -> np.ndarray | None:
        score, states = _predicted(self, core)
        n = len(core.stations)
        starts = [np.ones(n, dtype=bool), wanted(core), self.threshold.cell_states(core) == 0]
        if n <= self.exhaustive:
            return states(_exhaustive(n, score))
        return states(_local(max(starts, key=score), score))


class EnergyGreedyPolicy(CellRule):
    """The reference's prediction in one pass: stations from the least loaded leave the air
    while each raises the predicted objective of the next two steps, given those before it."""

    name = "energy_greedy"

    def cell_states(self, core: Any) -> np.ndarray | None:
        from mobrl.network.offload import Offload

        score, states = _predicted(self, core)
        on = np.ones(len(core.stations), dtype=bool)
        for b in Offload(core).by_load():
            off = on.copy()
            off[b] = False
            if score(off) > score(on) + 1e-12:
                on = off
        return states(on)


def _predicted(rule: CellRule, core: Any) -> tuple[Any, Any]:
    """`score(on)`: the predicted objective of the next two steps with the stations `on` on
    the air (a station told to wake is still waking in the first); `states(on)`: the
    stations' states that put `on` on the air (the others asleep, in their state or the
    rule's sleep state)."""
    from mobrl.network.power_predict import StepPredictor

    cells = core.power_model()
    state, _ = core.cell_states()
    asleep = state > 0
    slow = asleep & (cells.wake_steps[state] > 0)  # told to wake, still off this step
    sleep = rule.sleep_state(core)
    predict = StepPredictor(core)

    def score(on: np.ndarray) -> float:
        return predict.two_steps(on & ~slow, on, sleep)

    def states(on: np.ndarray) -> np.ndarray:
        return np.where(on, 0, np.where(asleep, state, sleep))

    return score, states


def _exhaustive(n: int, score: Any) -> np.ndarray:
    """The best of all 2^n sets of stations on the air (ties: the first, most on)."""
    best, top = None, -np.inf
    for bits in itertools.product((True, False), repeat=n):
        on = np.array(bits)
        value = score(on)
        if value > top + 1e-12:
            best, top = on, value
    return best


def _local(start: np.ndarray, score: Any) -> np.ndarray:
    """From `start`, switch the one station that helps most, while one does."""
    on, top = start.copy(), score(start)
    for _ in range(_PASSES * on.size):
        gains = []
        for b in range(on.size):
            trial = on.copy()
            trial[b] = not trial[b]
            gains.append(score(trial))
        b = int(np.argmax(gains))
        if gains[b] <= top + 1e-12:
            break
        on[b], top = not on[b], gains[b]
    return on


RULES = (EnergyOraclePolicy, EnergyGreedyPolicy)
