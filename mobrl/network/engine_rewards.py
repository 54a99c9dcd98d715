"""The fast engine's rewards and mobile-env's monitor metrics: each step's rewards as the
handler pays them (mobile-env's, or `env.reward`'s of mobrl.network.service), and the monitor's
metrics, mobile-env's own computed on the arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
from mobile_env.core import metrics as me_metrics
from mobile_env.core.base import MComCore
from mobile_env.handlers.central import MComCentralHandler
from mobile_env.handlers.multi_agent import MComMAHandler

from mobrl.network.link_utility import marginal_utilities

_NATIVE_METRICS = (
    me_metrics.number_connections,
    me_metrics.number_connected,
    me_metrics.mean_utility,
    me_metrics.mean_datarate,
)


def _mean(values: np.ndarray) -> np.float64:
    """np.mean of a 1-d float array (the same pairwise sum and division), without its overhead."""
    return values.sum() / values.size


class RewardsAndMetrics:
    """Mixin of `FastEngine`: the step's rewards from its arrays, and the values of the
    monitor's metrics after each step."""

    def _setup_metrics(self) -> None:
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

    def _reward_values(self) -> Any:
        """This step's rewards: an array over the active UEs (multi-agent handler), the
        central scalar, or whatever a user's handler returns."""
        core: MComCore = self  # type: ignore[assignment]
        handler = core.handler
        sel = self._sel
        if issubclass(handler, MComMAHandler):
            reward = getattr(handler, "reward_kind", "mobile")  # env.reward (mobrl.network.service)
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
