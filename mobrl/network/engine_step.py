"""The phases of the fast engine's step on its arrays: SNRs at the UEs' positions, the active
set, the UEs' actions applied to the links, rates and utilities, movement and departures
(mobrl.network.engine: the step as gymnasium's API calls it)."""

from __future__ import annotations

from typing import Any

import numpy as np
from mobile_env.core.base import MComCore
from mobile_env.handlers.central import MComCentralHandler

from mobrl.network.link_utility import scaled_utility, toggle


def _norms(vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Length of each (vx, vy) as mobile-env's `np.linalg.norm` computes it: the square root of
    BLAS's dot product of the vector with itself. The BLAS kernel (OpenBLAS picks one per CPU)
    decides whether that dot uses a fused multiply-add, so `sqrt(vx*vx + vy*vy)` can differ from
    it by one ulp; a stack of 1x2 @ 2x1 products goes through the same dot routine."""
    v = np.stack([vx, vy], axis=-1)
    return np.sqrt(np.matmul(v[:, None, :], v[:, :, None])[:, 0, 0])


class StepPhases:
    """Mixin of `FastEngine`: the state as arrays (positions, SNRs, the active set, links,
    utilities) and one step's transition of it (`_advance`)."""

    def _positions_from_ues(self) -> None:
        self._x = np.array([float(ue.x) for ue in self._ue_list])
        self._y = np.array([float(ue.y) for ue in self._ue_list])

    def _compute_snr(self) -> None:
        """SNR of every BS-UE pair at the current positions (the sparse path: of candidates;
        a radio model with interference: the SINR with the stations transmitting now)."""
        if self._radio is not None:
            return self._radio_snr()
        if self._grid is not None:
            return self._sparse_snr()
        self._snr = self._dense_snr()
        if self._off is not None:  # stations asleep are off the air
            self._snr_all = self._snr
            self._snr = self._mask_off(self._snr)
        self._reach = self._snr > self._thr

    def _set_active(self) -> None:
        t = self.time
        if self._active_mask is not None and t not in self._change_times:
            if self._presence is None:
                return  # nobody arrives or leaves at this time
        mask = (self._extime > t) & (self._stime <= t)
        present = self._present(t)  # a layout's load over the day (mobrl.network.power_engine)
        if present is not None:
            mask &= present
        if not np.array_equal(mask, self._active_mask):
            self._follow_active(mask)

    def _follow_active(self, mask: np.ndarray) -> None:
        self._active_mask = mask
        self._active_idx = np.flatnonzero(mask)
        self._idle_idx = np.flatnonzero(~mask)
        self._active_list = [self._ue_list[i] for i in self._active_idx.tolist()]
        # every UE active (the usual case): select with a slice, which copies nothing
        self._sel = slice(None) if mask.all() else self._active_idx
        self._first_exit = self._extime[mask].min() if mask.any() else np.inf

    def _rates(self) -> np.ndarray:
        """Resource-fair share of each connection's max. data rate (0 where not connected)."""
        if self._radio is not None:
            return self._radio_rates()
        if self._grid is not None:
            return self._sparse_rate_matrix()
        counts = self._conn.sum(axis=1, keepdims=True)
        full = self._bw * np.log2(1 + self._snr) / np.maximum(counts, 1)
        # a link that moved out of range keeps its share but carries nothing (as in mobile-env)
        return np.where(self._conn & self._reach, full, 0.0)

    def _station_utilities(self) -> tuple[np.ndarray, np.ndarray]:
        """Connections per BS, and the mean scaled utility of each BS's connected UEs (the
        idle value for BSs without any), as mobile-env broadcasts them."""
        if self._grid is not None:
            return self._sparse_station_utilities()
        counts = self._conn.sum(axis=1)
        sums = (self._conn * self._util0).sum(axis=1)
        return counts, np.where(counts > 0, sums / np.maximum(counts, 1), self._idle)

    def _set_utilities(self, util: np.ndarray, util0: np.ndarray) -> None:
        """Scaled utility of each UE in the last step (`util`: NaN where not active then;
        `util0`: 0 there, for sums)."""
        self._util, self._util0 = util, util0
        self._bs_stats = self._station_utilities()

    def _advance(self, act: np.ndarray | None, monitor: bool) -> None:
        """Apply the UEs' actions (None: no UE acts) and advance the simulation one step;
        leaves the step's rewards in `_step_rewards` (per active UE, or the central scalar)."""
        core: MComCore = self  # type: ignore[assignment]
        self._views = {}

        # release links that moved out of range, then toggle the chosen links of active UEs
        conn = self._conn
        conn &= self._reach
        if act is not None:
            chosen = np.flatnonzero(self._active_mask & (act != core.NOOP_ACTION))
            if chosen.size:
                toggle(conn, self._reach, act[chosen] - 1, chosen)

        # data rates, each UE's summed rate, utilities; the step's rewards and metrics
        self._serve()
        self._step_rewards = self._reward_values()
        if self._off is not None:
            self._count_energy(self._macro)
        if monitor:
            self._monitor_update()

        # move active UEs towards their waypoints (drawn in UE order from mobile-env's RNG)
        self._move(self._sel)

        # UEs that leave drop their links; then the active set advances
        if core.time >= self._first_exit:
            act_idx = self._active_idx
            conn[:, act_idx[self._extime[act_idx] <= core.time]] = False
            self._bs_stats = self._station_utilities()
        self._advance_wakes()
        self._set_active()
        self._compute_snr()
        core.time += 1

    def _serve(self) -> None:
        """Each UE's summed rate under the links (`_macro`, in BS order, as mobile-env adds
        them), the UEs connected then, and the active UEs' scaled utilities."""
        core: MComCore = self  # type: ignore[assignment]
        conn = self._conn
        if self._off is not None:  # demand, loads (mobrl.network.power_engine)
            macro = self._served_macro()
        elif self._grid is None:
            # numpy adds a C-ordered array's rows one after another along axis 0: the BS order
            macro = self._rates().sum(axis=0)
        else:
            macro = self._sparse_rates()[3]
        self._macro = macro
        self._connected_before = conn.any(axis=0)
        util = self._no_util.copy()
        sel = self._sel
        utility = core.utility
        scaled = scaled_utility(
            macro[sel], utility.lower, utility.upper, utility.coeffs, self._log_w3
        )
        util[sel] = scaled
        util0 = np.zeros(len(self._ue_list))
        util0[sel] = scaled
        self._set_utilities(util, util0)

    def _action_array(self, actions: Any) -> np.ndarray | None:
        """Each UE's action (0: keep connections) in UE order; None if no UE acts."""
        core: MComCore = self  # type: ignore[assignment]
        if issubclass(core.handler, MComCentralHandler) and not isinstance(actions, dict):
            act = np.asarray(actions, dtype=np.int64)  # already one action per UE, in id order
            assert act.shape == (len(self._ue_list),), "Number of actions must equal overall UEs."
        else:
            actions = core.handler.action(core, actions)
            if not actions:
                return None
            act = np.zeros(len(self._ue_list), dtype=np.int64)
            index = self._ue_index
            for ue_id, action in actions.items():
                act[index[ue_id]] = action
        n_bs = len(self._bs_list)
        if np.count_nonzero(act.view(np.uint64) > n_bs):  # (negatives wrap to huge values)
            raise KeyError(int(act[(act < 0) | (act > n_bs)][0]) - 1)  # mobile-env: no such BS
        return act

    def _move(self, sel: Any) -> None:
        """Move the active UEs (`sel`: their index array or a slice of all) one step towards
        their waypoints, drawing new waypoints in UE order from mobile-env's RNG."""
        ids = self._active_idx
        if not ids.size:
            return
        if self._mobility is not None:
            return self._move_model(sel)
        movement: Any = self.movement  # type: ignore[attr-defined]
        need = ids[~self._has_wp[sel]]
        if need.size:
            bounds = np.tile([movement.width, movement.height], need.size).astype(float)
            draws = movement.rng.uniform(0.0, bounds).reshape(-1, 2)
            self._wx[need], self._wy[need] = draws[:, 0], draws[:, 1]
            self._has_wp[need] = True
        x, y = self._x[sel], self._y[sel]
        wx, wy = self._wx[sel], self._wy[sel]
        vx, vy = wx - x, wy - y
        dist = _norms(vx, vy)
        vel = self._velocity[sel]
        arrive = dist <= vel
        dist[arrive] = 1.0  # arriving UEs jump onto the waypoint; avoid 0/0 for them
        self._x[sel] = np.where(arrive, wx, x + vel * vx / dist)
        self._y[sel] = np.where(arrive, wy, y + vel * vy / dist)
        self._has_wp[ids[arrive]] = False
        ues = self._ue_list
        for i, nx, ny in zip(ids.tolist(), self._x[sel].tolist(), self._y[sel].tolist()):
            ues[i].x, ues[i].y = nx, ny
