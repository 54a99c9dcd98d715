"""TR 38.901 Urban Macro (UMa): path loss and LOS probability of a 25 m macro cell."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.radio.channels.base import Channel, LossTerms, breakpoint_distance


class UMa(Channel):
    """TR 38.901 V17.0.0 Table 7.4.1-1 (UMa) path loss and Table 7.4.2-1 LOS probability.

    LOS: PL1 = 28.0 + 22 log10(d3D) + 20 log10(fc) up to the breakpoint d'BP, then
    PL2 = 28.0 + 40 log10(d3D) + 20 log10(fc) - 9 log10(d'BP^2 + (hBS - hUT)^2).
    NLOS: max(PL_LOS, 13.54 + 39.08 log10(d3D) + 20 log10(fc) - 0.6 (hUT - 1.5)).
    fc in GHz; specified for 10 m <= d2D <= 5 km, 1.5 m <= hUT <= 22.5 m, hBS = 25 m,
    0.5 <= fc <= 100 GHz. hE is fixed at 1 m (the standard draws a larger one for some UEs
    above 13 m).
    """

    def loss_terms(self, fc_ghz: Any, h_bs: Any, h_ue: Any) -> LossTerms:
        fc_ghz, h_bs, h_ue = (np.asarray(v, dtype=np.float64) for v in (fc_ghz, h_bs, h_ue))
        d_bp = breakpoint_distance(fc_ghz, h_bs, h_ue)
        log_f = 20.0 * np.log10(fc_ghz)
        dh2 = (h_bs - h_ue) ** 2
        return LossTerms(
            dh2=dh2,
            breakpoint=d_bp,
            near=(28.0 + log_f, 22.0),
            far=(28.0 + log_f - 9.0 * np.log10(d_bp**2 + dh2), 40.0),
            nlos=(13.54 + log_f - 0.6 * (h_ue - 1.5), 39.08),
        )

    def _los_probability(self, d2d: Any, h_ue: Any) -> Any:
        # read at 18 m below 18 m, where the first factor is exactly 1 (18/18 + exp(.) * 0)
        # and the second at least 1, so the cap below gives the standard's "1 for d2D <= 18 m"
        # without a per-element branch
        d = np.maximum(d2d, 18.0)
        near = 18.0 / d
        base = near + np.exp(d * (-1.0 / 63.0)) * (1.0 - near)
        # C'(hUT): 0 up to 13 m, ((hUT - 13) / 10)^1.5 above (the standard stops at 23 m)
        c = ((np.maximum(h_ue, 13.0) - 13.0) / 10.0) ** 1.5
        if not np.any(c):  # every UE at 13 m or lower: the second factor is 1
            return base
        p = base * (1.0 + c * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0))
        # for hUT > 13 m the product is slightly above 1 just past 18 m (up to 1.0065 at
        # 23 m, until about 18.5 m): a probability, so capped at 1
        return np.minimum(p, 1.0)


CHANNEL = UMa(
    name="uma",
    source="3GPP TR 38.901 V17.0.0 Table 7.4.1-1, UMa; LOS probability Table 7.4.2-1",
    default_bs_height_m=25.0,
    sigma_los_db=4.0,
    sigma_nlos_db=6.0,
    sf_decorrelation_los_m=37.0,
    sf_decorrelation_nlos_m=50.0,
    los_decorrelation_m=50.0,
    has_los_state=True,
    min_distance_2d_m=10.0,
)
