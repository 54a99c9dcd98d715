"""Resource-fair: each station gives each of its links the same share, 1 / (its links), as
mobile-env's `ResourceFair` does (a link that carries nothing still holds its share)."""

from __future__ import annotations

import numpy as np


class ResourceFair:
    name = "resource_fair"
    source = "mobile-env's ResourceFair (mobile_env.core.schedules): equal resource shares"

    def shares(
        self, b: np.ndarray, u: np.ndarray, rate: np.ndarray, n_bs: int, n_ue: int
    ) -> np.ndarray:
        counts = np.bincount(b, minlength=n_bs)
        return 1.0 / np.maximum(counts[b], 1)


SCHEDULER = ResourceFair()
