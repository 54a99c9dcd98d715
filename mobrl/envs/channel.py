"""mobile-env's Okumura-Hata channel on numpy arrays, with mobile-env's floating-point steps.

mobile-env computes, per BS-UE pair, the distance between integer-truncated positions, the
path loss `t1 + t2 * log10(distance + 1e-16)` and `snr = 10 ** ((tx - loss) / 10) / noise`.
The same operations here give the same numbers for whole matrices at once (the fast engine,
the dashboard's coverage isolines and `mobrl scenarios plot` all use them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: mobile-env's guard against log10(0) (mobile_env.core.channels.EPSILON)
EPSILON = 1e-16


def loss_terms(frequency: Any, bs_height: Any, ue_height: Any) -> tuple[Any, Any]:
    """(t1, t2) of the Okumura-Hata path loss t1 + t2 * log10(d), for broadcastable inputs."""
    ch = 0.8 + (1.1 * np.log10(frequency) - 0.7) * ue_height - 1.56 * np.log10(frequency)
    t1 = 69.55 - ch + 26.16 * np.log10(frequency) - 13.82 * np.log10(bs_height)
    t2 = 44.9 - 6.55 * np.log10(bs_height)
    return t1, t2


def snr(t1: Any, t2: Any, tx_power: Any, noise: Any, dx: Any, dy: Any) -> Any:
    """SNR over offsets (dx, dy) between integer-truncated BS and UE positions."""
    distance = np.sqrt(dx * dx + dy * dy)
    loss = t1 + t2 * np.log10(distance + EPSILON)
    return 10 ** ((tx_power - loss) / 10) / noise


def max_rate(bandwidth: Any, snr_value: Any, threshold: Any) -> Any:
    """A link's data rate with all of a BS's resources: bw * log2(1 + snr) above the UE's
    SNR threshold, else 0."""
    return np.where(snr_value > threshold, bandwidth * np.log2(1 + snr_value), 0.0)
