"""How UEs that are not agents pick their stations: the network's own association procedures,
on arrays of a fast-engine core. Under `env=cells` and `env=hierarchical` the UEs follow one
of them (`env.ue_policy`); the rules of the same names (`mobrl.evaluation.baselines`) decide
through the same functions, so a cell policy with `env.ue_policy=a3` meets the UEs that
`threshold+a3` has in `env=ma`.

- `greedy`: each UE to its strongest station on the air by SINR (SNR without interference).
- `greedy_rsrp`: the same by received power (3GPP's RSRP-based cell selection).
- `a3`, `a3_ttt2`: 3GPP handover on event A3 with a 3 dB hysteresis and a time-to-trigger of
  1 or 2 steps (`a3_moves`; the rule's module, `mobrl.evaluation.baselines.a3`, has the
  source and the reasoning).

A variant is a class with `name`, `reset()` and `moves(core)` (every UE's station action, UEs
in id order) in `ASSOCIATIONS`."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network.service import first_station, greedy_moves, measured_links

#: the measures a UE compares stations by (`links`)
MEASURES = ("sinr", "rsrp")


def links(core: Any, measure: str = "sinr") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(BS, UE) `measure` (SINRs, or received powers where the core has them), reachable
    links and live links in range, stations and UEs in id order (`measured_links`)."""
    values, reach, linked = measured_links(core)
    matrix = getattr(core, "signal_matrix", None) if measure == "rsrp" else None
    signal = matrix() if matrix is not None else None
    if signal is not None:  # None: the SNR orders a UE's stations as the received power does
        values = np.asarray(signal, dtype=float)
    return values, reach, linked


def strongest(mask: np.ndarray, measure: np.ndarray) -> np.ndarray:
    """Per UE, the station action of the strongest station where `mask` (ties: the lower
    station), else 0."""
    best = np.argmax(np.where(mask, measure, -np.inf), axis=0) + 1
    return np.where(mask.any(axis=0), best, 0)


def a3_moves(
    rsrp: np.ndarray,
    reach: np.ndarray,
    linked: np.ndarray,
    before: tuple[np.ndarray, np.ndarray],
    hysteresis_db: float,
    ttt: int,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Event A3's station actions of every UE and the state the next step reads: `before` is
    (the serving station per UE, -1: none; the (BS, UE) counts of consecutive steps on which
    a neighbour met the entering condition against that serving station) of the step before.
    A UE holding several links releases the others first (lowest station); one with none
    connects to its strongest station."""
    serving_before, counts_before = before
    columns = np.arange(rsrp.shape[1])
    held = linked.any(axis=0)
    serving = np.argmax(np.where(linked, rsrp, -np.inf), axis=0)
    factor = 10.0 ** (hysteresis_db / 10.0)
    neighbour = np.arange(rsrp.shape[0])[:, None] != serving[None, :]
    entering = held[None, :] & reach & neighbour & (rsrp > rsrp[serving, columns][None, :] * factor)
    same = (serving_before == serving)[None, :]
    counts = np.where(entering, np.where(same, counts_before + 1, 1), 0)
    others = linked & neighbour
    act = np.where(others.any(axis=0), first_station(others), strongest(counts >= ttt, rsrp))
    return np.where(held, act, strongest(reach, rsrp)), (np.where(held, serving, -1), counts)


def a3_start(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """`a3_moves`' state before a UE's first step: no serving station, no counts."""
    return np.full(shape[1], -1), np.zeros(shape, dtype=int)


class Greedy:
    name = "greedy"
    measure = "sinr"

    def reset(self) -> None:
        pass

    def moves(self, core: Any) -> np.ndarray:
        return greedy_moves(*links(core, self.measure))


class GreedyRsrp(Greedy):
    name = "greedy_rsrp"
    measure = "rsrp"


class A3(Greedy):
    name = "a3"
    hysteresis_db = 3.0
    ttt = 1

    def reset(self) -> None:
        self._state: tuple[np.ndarray, np.ndarray] | None = None

    def moves(self, core: Any) -> np.ndarray:
        rsrp, reach, linked = links(core, "rsrp")
        state = getattr(self, "_state", None)
        if state is None or state[1].shape != rsrp.shape:
            state = a3_start(rsrp.shape)
        act, self._state = a3_moves(rsrp, reach, linked, state, self.hysteresis_db, self.ttt)
        return act


class A3TTT2(A3):
    name = "a3_ttt2"
    ttt = 2


ASSOCIATIONS = {cls.name: cls for cls in (Greedy, GreedyRsrp, A3, A3TTT2)}
