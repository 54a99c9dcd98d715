"""Full buffer: every UE takes whatever rate it gets (mobile-env's model)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.traffic.base import Demand


class FullBuffer(Demand):
    name = "full_buffer"
    full = True

    def start(self, params: dict[str, Any], n: int, rng: np.random.Generator) -> Any:
        return np.full(n, np.inf)

    def offered(
        self,
        params: dict[str, Any],
        state: Any,
        seconds: float,
        present: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        return state, np.zeros(state.shape)

    def mean_mbps(self, params: dict[str, Any]) -> float:
        return float("inf")


DEMAND = FullBuffer()
