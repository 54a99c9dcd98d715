"""Rate-fair: each station gives every link that can carry data the same rate,
1 / sum(1 / rate) over its links, i.e. shares inversely proportional to the link's rate
(mobile-env's `RateFair`; links that carry nothing get nothing and take nothing)."""

from __future__ import annotations

import numpy as np


class RateFair:
    name = "rate_fair"
    source = "mobile-env's RateFair (mobile_env.core.schedules): equal rates per station"

    def shares(
        self, b: np.ndarray, u: np.ndarray, rate: np.ndarray, n_bs: int, n_ue: int
    ) -> np.ndarray:
        carries = rate > 0.0
        inv = np.where(carries, 1.0 / np.where(carries, rate, 1.0), 0.0)
        total = np.bincount(b, weights=inv, minlength=n_bs)
        return np.where(carries, inv / np.where(total[b] > 0, total[b], 1.0), 0.0)


SCHEDULER = RateFair()
