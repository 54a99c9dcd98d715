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


def isolines(core: Any, rate: float, num: int = 32) -> list[tuple[list[float], list[float]]]:
    """Per BS (in id order), the points where a default UE still gets more than `rate`: the
    same points as mobile-env's `bs_isolines`, computed on arrays for its Okumura-Hata channel."""
    from mobile_env.core.channels import OkumuraHata

    stations = sorted(core.stations.values(), key=lambda bs: bs.bs_id)
    if type(core.channel) is not OkumuraHata:  # another channel model: mobile-env's own loop
        lines = core.bs_isolines(rate)
        return [(list(lines[bs][0]), list(lines[bs][1])) for bs in stations]
    # the scenario's UEs (mobile-env's own dashboard assumes its default UE here)
    ue = next(iter(core.users.values()))
    out = []
    for bs in stations:
        xs_all, ys_all = [], []
        for theta in np.linspace(EPSILON, 2 * np.pi, num=num):
            x1, y1 = core.channel.boundary_collison(theta, bs.x, bs.y, core.width, core.height)
            slope = (y1 - bs.y) / (x1 - bs.x)
            xs = np.linspace(bs.x, x1, num=100)
            xs_all.append(xs)
            ys_all.append(slope * (xs - bs.x) + bs.y)
        xs, ys = np.array(xs_all), np.array(ys_all)
        t1, t2 = loss_terms(bs.frequency, bs.height, ue.height)
        dx, dy = int(bs.x) - np.trunc(xs), int(bs.y) - np.trunc(ys)
        snrs = snr(t1, t2, bs.tx_power, ue.noise, dx, dy)
        rates = max_rate(bs.bw, snrs, ue.snr_threshold)
        last = np.array([np.flatnonzero(row > rate).max() for row in rates])
        rows = np.arange(num)
        out.append((xs[rows, last].tolist(), ys[rows, last].tolist()))
    return out
