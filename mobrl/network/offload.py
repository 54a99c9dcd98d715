"""Whether a station can leave the air without leaving its UEs behind: the hand-over check a
cell makes before it switches off (3GPP's network energy saving: a cell offloads its UEs to
neighbours that can take them first) and the wake-up a neighbour asks for when one of a
sleeping cell's UEs has no station on the air at all (Xn's cell activation request).

`Offload` holds one step's arrays (each UE's signal, reach and need at every station, the
stations' loads) and the stations taken off the air so far, so that requests are weighed one
after another, each given the ones granted before it. The `threshold` rule
(`mobrl.evaluation.baselines.energy`) and the cell agents' guard (`env.guard`,
`mobrl.envs.cells`) both decide through it.

A UE's need at another station is its demand over that link's rate with all of the station's
resources (the SNR without interference; a full-buffer UE needs all of it)."""

from __future__ import annotations

from typing import Any

import numpy as np


class Offload:
    """The hand-over arithmetic of one step of `core` (a fast-engine core with `power:`)."""

    def __init__(self, core: Any) -> None:
        state, _ = core.cell_states()
        self.load = core.cell_loads()
        self.signal, self.reach = core.full_signal()
        cap = core.full_capacity()
        need = np.where(cap > 0, core.ue_demands()[None, :] / np.where(cap > 0, cap, 1.0), 1.0)
        self.need = np.minimum(need, 1.0)
        self.present = core._active_mask.copy()
        self.best = core.best_stations()
        self.conn = core.connectivity()
        self.awake = state == 0
        #: stations on the air once the requests granted so far are
        self.on_air = self.awake.copy()
        #: the loads expected once the granted requests' UEs have moved
        self.expect = self.load.copy()
        #: stations that take UEs of a granted request (they do not leave in the same step)
        self.hosting = np.zeros(self.load.size, dtype=bool)

    def by_load(self) -> list[int]:
        """Station indices from the least loaded (ties: station order)."""
        return np.argsort(self.load, kind="stable").tolist()

    def leave(self, b: int, high: float) -> bool:
        """Takes station `b` off the air if every UE it serves or would serve has another
        station on the air and those stations, with the UEs' needs added, stay at or below
        `high`; False (nothing changed) if not, or if `b` is off the air or takes UEs of a
        station that left before it."""
        if not self.on_air[b] or self.hosting[b]:
            return False
        ues = np.flatnonzero(self.present & ((self.best == b) | self.conn[b]))
        moves = alternatives(ues, b, self.on_air, self.reach, self.signal)
        if moves is None:
            return False
        extra = np.bincount(moves, weights=self.need[moves, ues], minlength=self.load.size)
        if (self.expect + extra)[extra > 0].max(initial=0.0) > high:
            return False
        self.expect += extra
        self.hosting[moves] = True
        self.on_air[b] = False
        return True

    def moves_from(self, b: int) -> np.ndarray:
        """Where the UEs whose strongest station is the sleeping `b` would go: each one's
        strongest other station on the air (-1: none)."""
        ues = np.flatnonzero(self.present & (self.best == b))
        return alternatives(ues, b, self.on_air, self.reach, self.signal, partial=True)

    def stranded(self, b: int) -> bool:
        """Whether a UE whose strongest station is `b` has no other station on the air."""
        return bool((self.moves_from(b) < 0).any())


def alternatives(
    ues: np.ndarray,
    b: int,
    on_air: np.ndarray,
    reach: np.ndarray,
    signal: np.ndarray,
    partial: bool = False,
) -> np.ndarray | None:
    """Each UE's strongest station on the air other than `b` (-1: none, with `partial`;
    without it None if any UE has none)."""
    if not ues.size:
        return np.zeros(0, dtype=np.int64)
    ok = reach[:, ues] & on_air[:, None]
    ok[b] = False
    has = ok.any(axis=0)
    if not partial and not has.all():
        return None
    best = np.argmax(np.where(ok, signal[:, ues], -np.inf), axis=0)
    return np.where(has, best, -1)
