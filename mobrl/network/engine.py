"""Fast mobile-env engine: each step computed once on BS x UE arrays, same trajectories as stock.

Stock mobile-env recomputes every BS-UE path loss (with shapely points) many times per step in
Python loops. `FastEngine` keeps the simulation state as arrays (UE positions, waypoints, a
boolean connection matrix), computes the SNR matrix once per step with the same floating-point
operations as mobile-env, and derives connectivity, data rates, utilities, rewards, metrics and
observations from it. Random draws (arrivals, initial positions, waypoints) come from
mobile-env's own RNG objects in the same order, so episodes are the same step for step.
On city-scale layouts the step runs on the (BS, UE) pairs in range instead, with the same
numbers (mobrl.network.neighbours).

This module holds the engine's set-up, reset and step entry points; the step's phases are in
mobrl.network.engine_step, its rewards and mobile-env's monitor metrics in
mobrl.network.engine_rewards, the observations in mobrl.network.engine_obs.

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
from mobile_env.core.arrival import Arrival
from mobile_env.core.base import MComCore
from mobile_env.core.channels import OkumuraHata
from mobile_env.core.movement import RandomWaypointMovement
from mobile_env.core.schedules import ResourceFair
from mobile_env.core.utilities import BoundedLogUtility
from mobile_env.handlers.multi_agent import MComMAHandler

from mobrl.network import channel
from mobrl.network.engine_obs import Observations
from mobrl.network.engine_rewards import RewardsAndMetrics
from mobrl.network.engine_step import StepPhases
from mobrl.network.engine_views import StockViews
from mobrl.network.neighbours import SparseLinks, grid_for
from mobrl.network.power_engine import PowerSteps
from mobrl.network.radio_engine import RadioSteps
from mobrl.network.station_slots import topk_station_actions

#: the simulation models the engine computes natively (exact classes: a subclass may change them)
SUPPORTED_MODELS = {
    "channel": OkumuraHata,
    "scheduler": ResourceFair,
    "movement": RandomWaypointMovement,
    "utility": BoundedLogUtility,
}


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


class FastEngine(
    StepPhases, RewardsAndMetrics, Observations, PowerSteps, RadioSteps, SparseLinks, StockViews
):
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
        self._setup_metrics()
        # city-scale layouts: the step on candidate (BS, UE) pairs only (mobrl.network.neighbours)
        self._grid = grid_for(self, getattr(core.handler, "topk", None) or 0)
        # a layout's radio model and mobility beyond mobile-env's (mobrl.network.radio_engine)
        config = args[2] if len(args) > 2 else kwargs.get("config") or {}
        self._setup_radio(config)
        # stations that sleep, finite demand, the day's load (mobrl.network.power_engine)
        self._setup_power(config.get("mobrl") or {})

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


class FastCore(FastEngine, MComCore):
    """A mobile-env core (stations, users, config, render_mode) on the fast engine."""
