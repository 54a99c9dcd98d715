"""Fast mobile-env engine: each step computed once on BS x UE arrays, same trajectories as stock.

Stock mobile-env recomputes every BS-UE path loss (with shapely points) many times per step in
Python loops. `FastEngine` keeps the simulation state as arrays (UE positions, waypoints, a
boolean connection matrix), computes the SNR matrix once per step with the same floating-point
operations as mobile-env, and derives connectivity, data rates, utilities, rewards, metrics and
observations from it. Random draws (arrivals, initial positions, waypoints) come from
mobile-env's own RNG objects in the same order, so episodes are the same step for step.
On city-scale layouts the step runs on the (BS, UE) pairs in range instead, with the same
numbers (mobrl.envs.neighbours).

The stock attributes other code reads (`connections`, `datarates`, `macro`, `utilities`,
`active`, UE positions) stay available as views built on access, so baselines, rendering and
user metrics work unchanged. They are read-only snapshots: the state lives in the arrays, so
editing a view (adding a UE to a station's set, moving a UE by hand) does not change the
simulation; assigning a whole `connections` dict does. Code that builds hand-made states by
editing mobile-env's objects needs `engine=stock`.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
from mobile_env.core import metrics as me_metrics
from mobile_env.core.arrival import Arrival
from mobile_env.core.base import MComCore
from mobile_env.core.channels import OkumuraHata
from mobile_env.core.movement import RandomWaypointMovement
from mobile_env.core.schedules import ResourceFair
from mobile_env.core.utilities import BoundedLogUtility
from mobile_env.handlers.central import MComCentralHandler
from mobile_env.handlers.multi_agent import MComMAHandler

from mobrl.envs import channel
from mobrl.envs.engine_views import StockViews
from mobrl.envs.neighbours import SparseLinks, SparseState, grid_for
from mobrl.envs.observations import topk_station_actions
from mobrl.envs.power_engine import PowerSteps
from mobrl.envs.radio_engine import RadioSteps
from mobrl.envs.service import marginal_utilities, toggle

#: the simulation models the engine computes natively (exact classes: a subclass may change them)
SUPPORTED_MODELS = {
    "channel": OkumuraHata,
    "scheduler": ResourceFair,
    "movement": RandomWaypointMovement,
    "utility": BoundedLogUtility,
}

_NATIVE_METRICS = (
    me_metrics.number_connections,
    me_metrics.number_connected,
    me_metrics.mean_utility,
    me_metrics.mean_datarate,
)


def _mean(values: np.ndarray) -> np.float64:
    """np.mean of a 1-d float array (the same pairwise sum and division), without its overhead."""
    return values.sum() / values.size


def _norms(vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Length of each (vx, vy) as mobile-env's `np.linalg.norm` computes it: the square root of
    BLAS's dot product of the vector with itself. The BLAS kernel (OpenBLAS picks one per CPU)
    decides whether that dot uses a fused multiply-add, so `sqrt(vx*vx + vy*vy)` can differ from
    it by one ulp; a stack of 1x2 @ 2x1 products goes through the same dot routine."""
    v = np.stack([vx, vy], axis=-1)
    return np.sqrt(np.matmul(v[:, None, :], v[:, :, None])[:, 0, 0])


class UnsupportedByEngine(ValueError):
    """The scenario uses a model the fast engine does not compute; use `engine=stock`."""


def unsupported_models(core: MComCore) -> list[str]:
    """Names of the core's models the fast engine cannot reproduce (empty: supported)."""
    bad = [
        f"{name}={type(getattr(core, name)).__name__}"
        for name, cls in SUPPORTED_MODELS.items()
        if type(getattr(core, name)) is not cls
    ]
    if not isinstance(core.arrival, Arrival):
        bad.append(f"arrival={type(core.arrival).__name__}")
    if sorted(core.stations) != list(range(len(core.stations))):
        bad.append("base station ids other than 0..n-1")
    return bad


class FastEngine(PowerSteps, RadioSteps, SparseLinks, StockViews):
    """Mixin placed before a mobile-env core class: `class X(FastEngine, MComCore)` (or one of
    mobile-env's scenario classes, e.g. `class X(FastEngine, MComSmall)`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conn = np.zeros((0, 0), dtype=bool)
        self._views: dict[str, Any] = {}
        super().__init__(*args, **kwargs)
        core: MComCore = self  # type: ignore[assignment]
        bad = unsupported_models(core)
        if bad:
            raise UnsupportedByEngine(
                f"the fast engine does not support {', '.join(bad)}; use engine=stock"
            )
        self._bs_list = [core.stations[b] for b in sorted(core.stations)]
        self._ue_list = [core.users[u] for u in sorted(core.users)]
        self._ue_index = {ue.ue_id: i for i, ue in enumerate(self._ue_list)}
        self._ue_ids = np.array([ue.ue_id for ue in self._ue_list])
        self._all_idx = np.arange(len(self._ue_list))
        bs, ues = self._bs_list, self._ue_list
        # shapely points of mobile-env truncate coordinates to integers
        self._bx = np.array([float(int(b.x)) for b in bs])[:, None]
        self._by = np.array([float(int(b.y)) for b in bs])[:, None]
        self._tx = np.array([b.tx_power for b in bs], dtype=float)[:, None]
        self._bw = np.array([b.bw for b in bs], dtype=float)[:, None]
        self._noise = np.array([ue.noise for ue in ues], dtype=float)[None, :]
        self._thr = np.array([ue.snr_threshold for ue in ues], dtype=float)[None, :]
        self._velocity = np.array([ue.velocity for ue in ues], dtype=float)
        # path-loss terms that depend only on BS and UE parameters
        freq = np.array([b.frequency for b in bs], dtype=float)[:, None]
        bs_height = np.array([b.height for b in bs], dtype=float)[:, None]
        ue_height = np.array([ue.height for ue in ues], dtype=float)[None, :]
        t1, t2 = channel.loss_terms(freq, bs_height, ue_height)
        shape = (len(bs), len(ues))
        self._t1, self._t2 = np.broadcast_to(t1, shape).copy(), np.broadcast_to(t2, shape).copy()
        util = core.utility
        self._idle = util.scale(util.lower)
        self._log_w3 = np.log(util.coeffs[2])
        self._conn = np.zeros((len(bs), len(ues)), dtype=bool)
        self._native_metrics = dict(
            zip(
                _NATIVE_METRICS,
                (
                    self._number_connections,
                    self._number_connected,
                    self._mean_utility,
                    self._mean_datarate,
                ),
            )
        )
        # city-scale layouts: the step on candidate (BS, UE) pairs only (mobrl.envs.neighbours)
        self._grid = grid_for(self, getattr(core.handler, "topk", None) or 0)
        # a layout's radio model and mobility beyond mobile-env's (mobrl.envs.radio_engine)
        config = args[2] if len(args) > 2 else kwargs.get("config") or {}
        self._setup_radio(config)
        # stations that sleep, finite demand, the day's load (mobrl.envs.power_engine)
        self._setup_power(config.get("mobrl") or {})

    # --- state as arrays ----------------------------------------------------------------------

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
        present = self._present(t)  # a layout's load over the day (mobrl.envs.power_engine)
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

    # --- gymnasium API ------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        core: MComCore = self  # type: ignore[assignment]
        gymnasium.Env.reset(core, seed=seed)
        core.time = 0.0
        if core.reset_rng_episode or core.rng is None:
            core.rng = np.random.default_rng(core.seed)
        if options is not None and options != {}:
            raise NotImplementedError("Passing extra options on env.reset() is not supported.")
        for model in (core.arrival, core.channel, core.scheduler, core.movement, core.utility):
            model.reset()
        # draws in mobile-env's order (its users dict), from its own RNG objects
        for ue in core.users.values():
            ue.stime = core.arrival.arrival(ue)
            ue.extime = core.arrival.departure(ue)
        for ue in core.users.values():
            ue.x, ue.y = core.movement.initial_position(ue)
        self._reset_radio()
        self._reset_power()
        self._stime = np.array([ue.stime for ue in self._ue_list], dtype=float)
        self._extime = np.array([ue.extime for ue in self._ue_list], dtype=float)
        self._positions_from_ues()
        self._wx = np.zeros(len(self._ue_list))
        self._wy = np.zeros(len(self._ue_list))
        self._has_wp = np.zeros(len(self._ue_list), dtype=bool)
        # the active set can only change at an arrival time or just after a departure time
        self._change_times = {math.ceil(t) for t in [*self._stime.tolist(), *self._extime.tolist()]}
        self._active_mask = None
        self._set_active()
        self._conn[:] = False
        self._no_util = np.full(len(self._ue_list), np.nan)
        self._set_utilities(self._no_util.copy(), np.zeros(len(self._ue_list)))
        self._macro = np.zeros(len(self._ue_list))
        self._views = {}
        core.max_departure = max(ue.extime for ue in self._ue_list)
        core.monitor.reset()
        self._plan_monitor()
        core.handler.check(core)
        self._compute_snr()
        info = {**core.handler.info(core), **core.monitor.info()}
        return self._observation(), info

    def step(self, actions: Any):
        core: MComCore = self  # type: ignore[assignment]
        assert not core.time_is_up, "step() called on terminated episode"
        acting = self._ue_ids[self._sel]  # the UEs active in this step are the rewarded ones
        self._advance(self._action_array(actions), monitor=True)
        if core.time_is_up and core.window:
            core.close()
        if not self._active_list and not core.time_is_up:
            return self.step({})
        observation = self._observation()
        info = {**core.handler.info(core), **self._latest_metrics()}
        rewards = self._reward_of(self._step_rewards, acting)
        return observation, rewards, False, core.time_is_up, info

    def step_arrays(self, actions: np.ndarray) -> tuple[np.ndarray, bool]:
        """One multi-agent step with every UE's action as an array in UE order (0: keep the
        connections): each UE's reward as an array (0 for UEs not active in the step) and
        whether the episode is over. The same transition as `step`, without the per-UE dicts,
        the info dict and mobile-env's monitor (for samplers that batch UEs: mobrl.envs.slots)."""
        core: MComCore = self  # type: ignore[assignment]
        assert issubclass(core.handler, MComMAHandler), "step_arrays needs the multi-agent handler"
        assert not core.time_is_up, "step() called on terminated episode"
        act = np.asarray(actions, dtype=np.int64)
        k = getattr(core.handler, "topk", None)
        if k is not None:  # slot actions of env.obs=topk -> station actions
            act = topk_station_actions(self.topk_state(), act, k)
        if np.count_nonzero(act.view(np.uint64) > len(self._bs_list)):
            raise KeyError(int(act[(act < 0) | (act > len(self._bs_list))][0]) - 1)
        sel = self._sel
        self._advance(act, monitor=False)
        rewards = np.zeros(len(self._ue_list))
        rewards[sel] = self._step_rewards
        return rewards, core.time_is_up

    def step_stations(self, actions: np.ndarray) -> tuple[float, bool]:
        """One step with every UE's station action (b + 1 toggles station b, 0 keeps its links)
        in UE order, whatever the UEs observe: the step's mean UE utility (mobrl's per-step
        measure; NaN if no UE was active) and whether the episode is over. What a planner
        plays on a copy of the env (`oracle_rollout`)."""
        core: MComCore = self  # type: ignore[assignment]
        assert not core.time_is_up, "step() called on terminated episode"
        self._advance(np.asarray(actions, dtype=np.int64), monitor=False)
        util = self._util
        active = ~np.isnan(util)
        value = float(util[active].sum()) / np.count_nonzero(active) if active.any() else math.nan
        return value, core.time_is_up

    def sample_future(self, seed: Any) -> None:
        """Give this env (a planner's copy) its own random stream, drawn from `seed`, for what
        moves the UEs from now on (mobile-env's waypoints, or the layout's mobility model): its
        future is then a sample of the model's, not the episode's real one. UEs keep the
        waypoint they head for and their motion so far; arrival and departure times, drawn
        when the episode starts, stay, and a trace moves as it is."""
        rng = np.random.default_rng(seed)
        if self._mobility is not None:
            self._mobility_rng = rng
        else:
            self.movement.rng = rng  # type: ignore[attr-defined]

    def observe_all(self) -> np.ndarray:
        """Observation rows of every UE (multi-agent features, UE order), active or not."""
        return self._ma_rows(self._all_idx)

    def _ma_rows(self, idx: np.ndarray) -> np.ndarray:
        """Multi-agent observation rows of the UEs at `idx`."""
        handler = self.handler  # type: ignore[attr-defined]
        k = getattr(handler, "topk", None)
        if k is not None:  # env.obs=topk or topk_gain (mobrl.envs.observations)
            return handler.rows(self, idx)  # the handler's rows from this engine's arrays
        return self._features(idx, handler.features)

    def topk_state(self) -> dict[str, Any]:
        """The arrays `env.obs=topk` reads (mobrl.envs.observations.station_arrays)."""
        counts, bs_util = self._bs_stats
        state = {
            "conn": self._conn,
            "reach": self._reach,
            "counts": counts.astype(float),
            "bs_util": bs_util,
            "util": self._util if hasattr(self, "_util") else np.full(len(self._ue_list), np.nan),
            "idle": self._idle,
        }
        if self._grid is not None:  # the SNR matrix is built only if read
            return SparseState(self, **state)
        return {"snr": self._snr, **state}

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

        # data rates, each UE's summed rate (in BS order, as mobile-env adds them), utilities
        if self._off is not None:  # demand, loads (mobrl.envs.power_engine)
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
        lower, upper = utility.lower, utility.upper
        served = macro[sel]
        positive = served > 0.0
        w1, w2, _ = utility.coeffs
        # np.clip's values, without its overhead
        raw = np.minimum(
            np.maximum(w1 * np.log(w2 + np.where(positive, served, 1.0)) / self._log_w3, lower),
            upper,
        )
        raw = np.where(positive, raw, lower)
        scaled = 2 * (raw - lower) / (upper - lower) - 1
        util[sel] = scaled
        util0 = np.zeros(len(self._ue_list))
        util0[sel] = scaled
        self._set_utilities(util, util0)
        self._step_rewards = self._reward_values()
        if self._off is not None:
            self._count_energy(macro)
        if monitor:
            self._monitor_update()

        # move active UEs towards their waypoints (drawn in UE order from mobile-env's RNG)
        self._move(sel)

        # UEs that leave drop their links; then the active set advances
        if core.time >= self._first_exit:
            act_idx = self._active_idx
            conn[:, act_idx[self._extime[act_idx] <= core.time]] = False
            self._bs_stats = self._station_utilities()
        self._advance_wakes()
        self._set_active()
        self._compute_snr()
        core.time += 1

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

    def _reward_values(self) -> Any:
        """This step's rewards: an array over the active UEs (multi-agent handler), the
        central scalar, or whatever a user's handler returns."""
        core: MComCore = self  # type: ignore[assignment]
        handler = core.handler
        sel = self._sel
        if issubclass(handler, MComMAHandler):
            reward = getattr(handler, "reward_kind", "mobile")  # env.reward (mobrl.envs.service)
            if reward == "utility":
                return self._util[sel].copy()
            if reward == "marginal":
                return marginal_utilities(self.link_state())[sel]
            if self._grid is not None:
                return self._sparse_mobile_rewards()
            counts, bs_util = self._bs_stats
            reach = self._reach[:, sel]
            ngbr_util = (reach * bs_util[:, None]).sum(axis=0)
            ngbr_counts = (reach * counts[:, None]).sum(axis=0)
            return (ngbr_util + self._util[sel]) / (ngbr_counts + 1)
        if issubclass(handler, MComCentralHandler):
            utilities = self._util[sel]
            assert np.logical_and(utilities >= -1, utilities <= 1).all(), (
                "Utilities must be in range [-1, +1]"
            )
            return _mean(utilities)
        return handler.reward(core)

    def _reward_of(self, values: Any, ue_ids: np.ndarray) -> Any:
        """`_reward_values` as the handler returns them (multi-agent: a dict by UE id)."""
        if issubclass(self.handler, MComMAHandler):  # type: ignore[attr-defined]
            return dict(zip(ue_ids.tolist(), values.tolist()))
        return values

    def _monitor_update(self) -> None:
        """Append this step's values of the monitor's metrics (mobile-env's own natively)."""
        for results, compute in self._monitor_plan:
            results.append(compute())

    def _plan_monitor(self) -> None:
        """After the monitor's reset: (result list, how to compute it) for every metric."""
        core: MComCore = self  # type: ignore[assignment]
        monitor = core.monitor
        self._monitor_plan = []
        for kind in ("scalar", "ue", "bs"):
            results = getattr(monitor, f"{kind}_results")
            for name, func in getattr(monitor, f"{kind}_metrics").items():
                native = self._native_metrics.get(func)
                compute = native or (lambda func=func: func(core))
                self._monitor_plan.append((results[name], compute))

    def _latest_metrics(self) -> dict[str, Any]:
        """What mobile-env's `Monitor.info()` returns after a step: each metric's last value."""
        monitor = self.monitor  # type: ignore[attr-defined]
        return {
            name: values[-1]
            for results in (monitor.scalar_results, monitor.ue_results, monitor.bs_results)
            for name, values in results.items()
        }

    def _number_connections(self) -> int:
        return np.count_nonzero(self._conn)

    def _number_connected(self) -> int:
        return np.count_nonzero(self._connected_before)

    def _mean_utility(self) -> Any:
        idx = self._active_idx
        return _mean(self._util[self._sel]) if idx.size else self.utility.lower  # type: ignore[attr-defined]

    def _mean_datarate(self) -> Any:
        connected = self._connected_before
        return _mean(self._macro[connected]) if np.count_nonzero(connected) else 0.0

    def _features(self, ues: np.ndarray, names: list[str]) -> np.ndarray:
        """Observation rows (float32) of UEs `ues` with mobile-env's features `names`."""
        n_bs = len(self._bs_list)
        out = np.empty((ues.size, sum(1 if k == "utility" else n_bs for k in names)), np.float32)
        n_ues = len(self._ue_list)
        if ues.size == len(self._ue_list):
            ues = slice(None)  # every UE, in order: plain views instead of copies
        reach = self._reach[:, ues]
        col = 0
        for name in names:
            width = 1 if name == "utility" else n_bs
            target = out[:, col : col + width]
            col += width
            if name == "connections":
                target[:] = self._conn[:, ues].T
            elif name == "snrs":
                snr = self._snr[:, ues]
                target[:] = (snr / snr.max(axis=0)).T
            elif name == "utility":
                util = self._util[ues]
                target[:, 0] = np.where(np.isnan(util), self._idle, util)
            elif name == "bcast":
                target[:] = np.where(reach, self._bs_stats[1][:, None], self._idle).T
            elif name == "reachable":  # mobrl's env.obs=extended (mobrl.envs.observations)
                target[:] = reach.T
            elif name == "load":
                target[:] = (reach * self._bs_stats[0][:, None] / max(1, n_ues)).T
            else:  # stations_connected: connection counts of reachable BSs, normalized
                num = reach * self._bs_stats[0][:, None].astype(float)
                target[:] = (num / np.maximum(1.0, num.sum(axis=0))).T
        return out

    def _idle_features(self, count: int, names: list[str]) -> np.ndarray:
        n = len(self._bs_list)
        parts = {
            "connections": np.zeros((count, n)),
            "snrs": np.zeros((count, n)),
            "utility": np.full((count, 1), self._idle),
            "bcast": np.full((count, n), self._idle),
            "stations_connected": np.ones((count, n)),
            "reachable": np.zeros((count, n)),
            "load": np.zeros((count, n)),
        }
        return np.concatenate([parts[k].astype(np.float32) for k in names], axis=1)

    #: True while a policy that reads the env's state, not its observations (the baselines),
    #: plays: observations are left as zeros of their spaces (`mobrl.evaluation.rollout`)
    blind = False

    def _observation(self) -> Any:
        core: MComCore = self  # type: ignore[assignment]
        handler = core.handler
        if self.blind:
            return self._blank_observation()
        if issubclass(handler, MComMAHandler):
            idx = self._active_idx if not core.time_is_up else self._active_idx[:0]
            rows = self._ma_rows(idx)
            return dict(zip(self._ue_ids[idx].tolist(), rows))
        if issubclass(handler, MComCentralHandler):
            # mobile-env lists inactive UEs first (it builds them from a set; here: by id)
            idle = self._idle_idx
            rows = [self._idle_features(idle.size, handler.features)] if idle.size else []
            rows.append(self._features(self._active_idx, handler.features))
            return np.concatenate(rows, axis=0).ravel()
        return handler.observation(core)

    def _blank_observation(self) -> Any:
        """Zeros shaped like the observation (the same agents as `_observation`)."""
        core: MComCore = self  # type: ignore[assignment]
        space = core.observation_space
        if not isinstance(space, gymnasium.spaces.Dict):
            return np.zeros(space.shape, dtype=space.dtype)
        blanks = self.__dict__.get("_blanks")
        if blanks is None:  # one read-only array per UE, handed out every step
            blanks = {u: np.zeros(s.shape, dtype=s.dtype) for u, s in space.spaces.items()}
            for blank in blanks.values():
                blank.flags.writeable = False
            self._blanks = blanks
        idx = self._active_idx if not core.time_is_up else self._active_idx[:0]
        return {u: blanks[u] for u in self._ue_ids[idx].tolist()}

    def features(self) -> dict[int, dict[str, np.ndarray]]:
        """mobile-env's per-UE feature dicts (for handlers of users' own)."""
        names = ["connections", "snrs", "utility", "bcast", "stations_connected"]
        sizes = [len(self._bs_list)] * 2 + [1] + [len(self._bs_list)] * 2
        out: dict[int, dict[str, np.ndarray]] = {}
        idle = self._idle_idx
        for idx, rows in (
            (idle, self._idle_features(idle.size, names)),
            (self._active_idx, self._features(self._active_idx, names)),
        ):
            for i, row in zip(idx.tolist(), rows):
                parts = np.split(row, np.cumsum(sizes)[:-1])
                out[self._ue_list[i].ue_id] = dict(zip(names, parts))
        return out


class FastCore(FastEngine, MComCore):
    """A mobile-env core (stations, users, config, render_mode) on the fast engine."""
