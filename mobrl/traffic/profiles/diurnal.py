"""The EARTH project's daily traffic profile: the share of a day's busiest traffic at each
hour, from the average data use in European networks (EARTH deliverable D2.3, Auer et al.,
"How much energy is needed to run a wireless network?", IEEE Wireless Communications 18(5),
2011). The values are the curve at each full hour as digitised in the open dataset
tmc-calc/mob-traffic-ds (`data/traffic.csv`, column `thp_earth12`, commit 62ae89b), scaled
so that the busiest hour (22:00, 0.997 there) is 1. The night's low is 15 % of the peak at
06:00; the load climbs through the day to its peak in the late evening."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.traffic.base import Profile

#: the digitised curve at hours 0, 1, ..., 23 (before scaling its largest value to 1)
DIGITISED = (
    0.790, 0.618, 0.416, 0.283, 0.196, 0.157, 0.148, 0.188, 0.262, 0.392, 0.511, 0.594,
    0.640, 0.654, 0.685, 0.723, 0.755, 0.783, 0.807, 0.860, 0.936, 0.993, 0.997, 0.925,
)  # fmt: skip


class Diurnal(Profile):
    name = "diurnal"
    source = "EARTH D2.3 / Auer et al. 2011, digitised in tmc-calc/mob-traffic-ds"

    def hourly(self, spec: Any, base: Any) -> np.ndarray:
        values = np.asarray(DIGITISED)
        return values / values.max()


PROFILE = Diurnal()
