"""3GPP's FTP traffic model 3 (TR 36.814 Annex A.2.1.3.1; TR 38.901's evaluations use it as
well): each UE receives files of `file_mb` megabytes whose arrivals form a Poisson process
with mean inter-arrival time `mean_interval_s` seconds. A UE queues what it has not yet
received; each step it asks for its queue over the step (Mbit/s), so a file larger than a
step's rate takes several steps. Offered load per UE: 8 · file_mb / mean_interval_s Mbit/s.
A UE's queue starts empty and is dropped when the UE leaves."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.traffic.base import Demand


class Ftp3(Demand):
    name = "ftp3"
    defaults = {"file_mb": 0.5, "mean_interval_s": None}

    def start(self, params: dict[str, Any], n: int, rng: np.random.Generator) -> Any:
        return np.zeros(n)  # each UE's queue, Mbit

    def offered(
        self,
        params: dict[str, Any],
        state: Any,
        seconds: float,
        present: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        files = rng.poisson(seconds / float(params["mean_interval_s"]), size=state.shape)
        arrived = np.where(present, files * (8.0 * float(params["file_mb"])), 0.0)
        state += arrived
        state[~present] = 0.0  # a UE that left drops its queue
        return state / seconds, arrived

    def expected(self, params: dict[str, Any], state: Any, seconds: float) -> np.ndarray:
        mean = 8.0 * float(params["file_mb"]) * seconds / float(params["mean_interval_s"])
        return (state + mean) / seconds

    def served(self, params: dict[str, Any], state: Any, rates: np.ndarray, seconds: float) -> None:
        np.maximum(state - rates * seconds, 0.0, out=state)

    def mean_mbps(self, params: dict[str, Any]) -> float:
        return 8.0 * float(params["file_mb"]) / float(params["mean_interval_s"])


DEMAND = Ftp3()
