"""A constant bit rate: every present UE asks for `mbps` each step (a stream: what is not
served in a step is lost, not queued)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.traffic.base import Demand


class Constant(Demand):
    name = "constant"
    defaults = {"mbps": None}

    def start(self, params: dict[str, Any], n: int, rng: np.random.Generator) -> Any:
        return np.full(n, float(params["mbps"]))

    def offered(
        self,
        params: dict[str, Any],
        state: Any,
        seconds: float,
        present: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        return state, np.where(present, state * seconds, 0.0)

    def mean_mbps(self, params: dict[str, Any]) -> float:
        return float(params["mbps"])


DEMAND = Constant()
