"""What code outside the fast engine reads of it: its arrays (SNRs, links, the last step for
mobrl's metrics), and mobile-env's own attributes (`connections`, `datarates`, `macro`,
`utilities`, `active`) as views built on access from the arrays (see mobrl.network.engine for
what editing them does)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np


class StockViews:
    """Mixin of `FastEngine`: reads of its state arrays (`_snr`, `_conn`, `_reach`, `_util`,
    `_macro`, `_connected_before`, ...) in the forms other code expects."""

    def snr_matrix(self) -> np.ndarray:
        """SNR of every (BS, UE) pair at the UEs' current positions, BS and UE in id order."""
        return self._snr

    def signal_matrix(self) -> np.ndarray | None:
        """Received power of every (BS, UE) pair (3GPP's RSRP; mW) under a layout's radio
        model; None in mobile-env's model, where the SNR orders a UE's stations the same way
        (its noise is the same for all of them)."""
        return self._rx if self._radio is not None else None

    def reach_matrix(self) -> np.ndarray:
        """Which (BS, UE) links a UE can hold this step (SNR, or a radio model's SINR, above the
        UE's threshold)."""
        return self._reach

    def ue_column(self, ue: Any) -> int:
        """Column of `ue` in `snr_matrix()` and `connectivity()`."""
        return self._ue_index[ue.ue_id]

    def ue_columns(self) -> dict[int, int]:
        """UE id -> its column in the (BS, UE) arrays (the engine's own map: do not change)."""
        return self._ue_index

    def link_state(self) -> Any:
        """The (BS, UE) service arrays of this step (mobrl.network.service.LinkState); links out
        of range left out, as the next step drops them."""
        from mobrl.network.service import LinkState

        util = self.utility
        active = self._active_mask
        radio = None
        if self._grid is not None:  # the sparse path: every pair in range is a candidate
            p = self._pairs
            b, u = p.b[p.reach], p.u[p.reach]
            cap = np.zeros(self._t1.shape)
            cap[b, u] = self._bw[b, 0] * np.log2(1 + p.snr[p.reach])
        elif self._radio is not None:
            service = self.radio_service()
            cap = service.capacity(self._snr, self._reach)
            radio = None if service.model.separable else service
        else:
            cap = np.where(self._reach, self._bw * np.log2(1 + self._snr), 0.0)
        return LinkState(
            cap=cap,
            reach=self._reach & active[None, :],
            conn=self._conn & self._reach,
            active=active.copy(),
            lower=float(util.lower),
            upper=float(util.upper),
            coeffs=tuple(float(c) for c in util.coeffs),
            radio=radio,
        )

    def connectivity(self) -> np.ndarray:
        """Boolean (BS, UE) matrix of the links that are up."""
        return self._conn

    def check_connectivity(self, bs: Any, ue: Any) -> bool:
        return bool(self._reach[bs.bs_id, self._ue_index[ue.ue_id]])

    def available_connections(self, ue: Any) -> set:
        col = self._reach[:, self._ue_index[ue.ue_id]]
        return {self._bs_list[b] for b in np.flatnonzero(col).tolist()}

    def _view(self, name: str, build: Any) -> Any:
        if name not in self._views:
            self._views[name] = build()
        return self._views[name]

    @property
    def active(self) -> list:
        return getattr(self, "_active_list", None)

    @active.setter
    def active(self, value: Any) -> None:
        if value is not None:  # someone sets the active UEs by hand: follow them
            ids = {ue.ue_id for ue in value}
            self._follow_active(np.array([ue.ue_id in ids for ue in self._ue_list]))

    @property
    def connections(self) -> dict:
        def build() -> dict:
            out: dict = defaultdict(set)
            for b, u in zip(*np.nonzero(self._conn)):
                out[self._bs_list[b]].add(self._ue_list[u])
            return out

        return self._view("connections", build)

    @connections.setter
    def connections(self, value: Any) -> None:
        self._views.pop("connections", None)
        if self._pairs is not None:
            self._pairs.slots.clear()  # the topk order depends on the links
        if value is None or not len(self._conn):
            return
        self._conn[:] = False
        for bs, ues in value.items():
            for ue in ues:
                self._conn[bs.bs_id, self._ue_index[ue.ue_id]] = True

    @property
    def datarates(self) -> dict:
        """Rates of the links that are up, at the UEs' current positions (as after a step)."""

        def build() -> dict:
            rates = self._rates()
            return {
                (self._bs_list[b], self._ue_list[u]): float(rates[b, u])
                for b, u in zip(*np.nonzero(self._conn))
            }

        return self._view("datarates", build)

    @datarates.setter
    def datarates(self, value: Any) -> None:
        """Stock code assigns it; the engine derives it."""

    @property
    def macro(self) -> dict:
        def build() -> dict:
            connected = np.flatnonzero(self._connected_before)
            return {self._ue_list[i]: float(self._macro[i]) for i in connected.tolist()}

        return self._view("macro", build) if hasattr(self, "_connected_before") else {}

    @macro.setter
    def macro(self, value: Any) -> None:
        """Stock code assigns it; the engine derives it."""

    @property
    def utilities(self) -> dict:
        def build() -> dict:
            return {
                self._ue_list[i]: float(self._util[i])
                for i in np.flatnonzero(~np.isnan(self._util)).tolist()
            }

        return self._view("utilities", build) if hasattr(self, "_util") else {}

    @utilities.setter
    def utilities(self, value: Any) -> None:
        """Stock code assigns it; the engine derives it."""

    def metric_pairs(self) -> tuple[Any, ...] | None:
        """`metric_arrays` with the links as (station, UE) index arrays and their SNRs in dB
        (what `EpisodeTracker.record` also takes) on the sparse path; None on the dense one."""
        if self._grid is None:
            return None
        b, u = self._links()
        snr_db = 10.0 * np.log10(np.maximum(self._pair_snr(b, u), 1e-30))
        return self._util, np.where(self._connected_before, self._macro, 0.0), (b, u), snr_db

    def metric_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The last step for mobrl's `EpisodeTracker`, UEs in id order: scaled utility
        (NaN: not active), data rate, the (BS, UE) links up and every pair's SNR in dB (on the
        sparse path, city scale: the links' SNRs only, 0 elsewhere)."""
        rate = np.where(self._connected_before, self._macro, 0.0)
        if self._grid is not None:  # only the links' SNRs are read
            return self._util, rate, self._conn, self._sparse_snr_db()
        snr_db = 10.0 * np.log10(np.maximum(self._snr, 1e-30))
        return self._util, rate, self._conn, snr_db
