"""`a3`: 3GPP handover on event A3 (a neighbour becomes offset better than the serving cell).

Source: 3GPP TS 36.331 (LTE RRC) and TS 38.331 (NR RRC), §5.5.4.4 "Event A3": the entering
condition Mn + Ofn + Ocn − Hys > Mp + Ofp + Ocp + Off must hold for a whole time-to-trigger
(TTT) before the UE reports it and is handed over to that neighbour. Here the measurement M is
the received power (RSRP) in dB (in mobile-env's model the SNR: the same comparison, since a
UE's noise is the same for every station) and the offsets are 0, so: hand over when a
neighbour's received power exceeds the serving station's by more than the hysteresis
(`hysteresis_db`, default 3 dB, a common setting of Hys + Off) on `ttt` consecutive steps with
the same serving station. TS 36.331's TimeToTrigger runs from 0 to 5120 ms, commonly a few
hundred ms; mobile-env measures once a step (1 s: its UEs move their velocity in m each step),
so a typical TTT rounds to less than one step: the default `ttt = 1` hands over at the first
step the condition is seen, and `a3_ttt2` asks for two steps in a row (a TTT of at least 1 s).
A UE without a link connects to its strongest station (cell selection); a handover is
make-before-break over two steps (connect the target, then release the old link), since an action
toggles one link.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.evaluation.baselines.base import (
    PerUEBaseline,
    link_arrays,
    ue_link_state,
)
from mobrl.network.association import a3_moves, a3_start


class A3Policy(PerUEBaseline):
    """3GPP A3 handover: one serving station per UE (its strongest link); hand over to the
    strongest neighbour whose received power has been more than `hysteresis_db` (3 dB) above
    the serving station's on `ttt` (1) consecutive steps; with no link, connect to the
    strongest station.

    Each step the rule counts, per (station, UE), the consecutive steps on which the station
    (in range, not serving) met the entering condition against the same serving station; a
    new serving station restarts the counts. A UE holding several links releases the others
    first (lowest station id). The counts are the only state: both ways of deciding (per UE and
    for all UEs at once) read the counts of the step before and write this step's."""

    name = "a3"
    hysteresis_db = 3.0
    ttt = 1

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._step: tuple[int, Any] | None = None
        self._next: tuple[np.ndarray, np.ndarray] | None = None

    def _counts(self, core: Any, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """The (serving station per UE, (BS, UE) counts) of the step before; this step's
        are written to `self._next`."""
        step = (id(core), core.time)
        if getattr(self, "_step", None) != step:
            last = getattr(self, "_next", None)
            fresh = a3_start(shape)
            self._prev = last if last is not None and last[1].shape == shape else fresh
            self._next = (fresh[0].copy(), fresh[1].copy())
            self._step = step
        return self._prev

    def ue_action(self, core: Any, ue: Any) -> int:
        from mobrl.envs.observations import ue_columns

        reachable, connected, snrs = ue_link_state(core, ue, "rsrp")
        stations = [bs for _, bs in sorted(core.stations.items())]
        column = ue_columns(core)[ue.ue_id]
        serving_before, counts_before = self._counts(core, (len(stations), len(core.users)))
        if not connected:  # next step's counts stay cleared
            return max(reachable, key=lambda bs: snrs[bs]).bs_id + 1 if reachable else 0
        serving = max(sorted(connected, key=lambda bs: bs.bs_id), key=lambda bs: snrs[bs])
        s = stations.index(serving)
        factor = 10.0 ** (self.hysteresis_db / 10.0)
        same = serving_before[column] == s
        for b, bs in enumerate(stations):
            if bs in reachable and bs is not serving and snrs[bs] > snrs[serving] * factor:
                self._next[1][b, column] = counts_before[b, column] + 1 if same else 1
        self._next[0][column] = s
        others = sorted(connected - {serving}, key=lambda bs: bs.bs_id)
        if others:
            return others[0].bs_id + 1
        due = [bs for b, bs in enumerate(stations) if self._next[1][b, column] >= self.ttt]
        return max(due, key=lambda bs: snrs[bs]).bs_id + 1 if due else 0

    def station_actions(self, core: Any) -> np.ndarray:
        rsrp, reach, linked = link_arrays(core, "rsrp")
        before = self._counts(core, rsrp.shape)
        act, self._next = a3_moves(rsrp, reach, linked, before, self.hysteresis_db, self.ttt)
        return act


class A3TTT2Policy(A3Policy):
    """`a3` with a time-to-trigger of 2 steps: the condition must hold on two steps in a row."""

    name = "a3_ttt2"
    ttt = 2


RULES = (A3Policy, A3TTT2Policy)
