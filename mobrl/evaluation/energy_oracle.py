"""`energy_oracle`: the reference for cells that sleep. Each step it picks the stations to
keep on the air that maximise the objective, service − λ·energy (docs/energy.md), over the
next two steps at the UEs' current positions: the step now, in which a station told to wake
is still waking, and the one after, in which it serves, from the links the first left. UEs link by `greedy`, as under the
rules. Its predictions are the engine's own step (`mobrl.network.power_predict`).

The search: every set of stations where there are at most `EXHAUSTIVE_STATIONS`; above, a
local search from the best of `all_on`, `idle_off` and `threshold`'s sets, switching one
station at a time while that helps. Starting from the rules' sets and never accepting a
worse one, it never predicts less than they would get in the same state
(`scripts/energy_reference_quality.py` holds the search against exhaustive search)."""

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
        from mobrl.network.power_predict import StepPredictor

        cells = core.power_model()
        state, _ = core.cell_states()
        asleep = state > 0
        slow = asleep & (cells.wake_steps[state] > 0)  # told to wake, still off this step
        sleep = self.sleep_state(core)
        predict = StepPredictor(core)

        def score(on: np.ndarray) -> float:
            return predict.two_steps(on & ~slow, on, sleep)

        starts = [
            np.ones(state.size, dtype=bool),
            wanted(core),
            self.threshold.cell_states(core) == 0,
        ]
        if state.size <= self.exhaustive:
            best = _exhaustive(state.size, score)
        else:
            best = _local(max(starts, key=score), score)
        return np.where(best, 0, np.where(asleep, state, sleep))


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


RULES = (EnergyOraclePolicy,)
