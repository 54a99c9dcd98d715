"""Flat: every UE is present at every hour (the layout's UE count is the load)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.traffic.base import Profile


class Flat(Profile):
    name = "flat"
    source = "none: the same load all day"

    def hourly(self, spec: Any, base: Any) -> np.ndarray:
        return np.ones(24)


PROFILE = Flat()
