"""Schedulers: how a station splits its resources among its links, as a registry (one module
per scheduler, each defining `SCHEDULER`).

A scheduler works on the step's links as flat arrays, sorted by UE then station: `b` and `u`
(station and UE of each link) and `rate`, each link's rate with all of its station's
resources (0 for a link that carries nothing). It returns each link's share of its station's
resources; a link's rate is then `share * rate`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from mobrl.core.registry import load_registry

_MODULES = ("resource_fair", "rate_fair", "proportional_fair")


class Scheduler(Protocol):
    name: str
    #: where its definition comes from
    source: str

    def shares(
        self, b: np.ndarray, u: np.ndarray, rate: np.ndarray, n_bs: int, n_ue: int
    ) -> np.ndarray: ...


SCHEDULERS: dict[str, Scheduler] = load_registry(__name__, _MODULES, "SCHEDULER")


def scheduler(name: str) -> Scheduler:
    """The scheduler called `name`, or a ValueError naming the closest one."""
    if name not in SCHEDULERS:
        from mobrl.core.errors import closest_first

        close = closest_first(str(name), list(SCHEDULERS))[0]
        raise ValueError(
            f"unknown scheduler '{name}' (did you mean '{close}'?); use one of "
            f"{', '.join(SCHEDULERS)}"
        )
    return SCHEDULERS[name]
