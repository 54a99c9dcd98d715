"""Free-space path loss (Friis) over the 3D distance: the lower bound of every other model."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mobrl.radio.channels.base import SPEED_OF_LIGHT, Channel, LossTerms


class FreeSpace(Channel):
    """Friis: PL = 20 log10(4 pi d3D fc / c), fc in Hz. Always LOS (`los` is ignored, the LOS
    probability is 1), no shadowing. Specified in the far field, taken here as d2D >= 1 m."""

    def loss_terms(self, fc_ghz: Any, h_bs: Any, h_ue: Any) -> LossTerms:
        fc_ghz, h_bs, h_ue = (np.asarray(v, dtype=np.float64) for v in (fc_ghz, h_bs, h_ue))
        a = 20.0 * np.log10(4.0 * math.pi * (fc_ghz * 1e9) / SPEED_OF_LIGHT)
        return LossTerms((h_bs - h_ue) ** 2, np.inf, (a, 20.0), (a, 20.0), None)

    def _los_probability(self, d2d: Any, h_ue: Any) -> Any:
        return np.ones_like(d2d)


CHANNEL = FreeSpace(
    name="free_space",
    source="Friis transmission equation (free-space path loss, ITU-R P.525)",
    # no standard height: the 3GPP UMa one, so switching models keeps the geometry
    default_bs_height_m=25.0,
    sigma_los_db=None,
    sigma_nlos_db=None,
    sf_decorrelation_los_m=None,
    sf_decorrelation_nlos_m=None,
    los_decorrelation_m=None,
    has_los_state=False,
    min_distance_2d_m=1.0,
)
