"""TR 38.901 Urban Micro, street canyon (UMi): path loss and LOS probability of a 10 m small cell."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.radio.channels.base import Channel, LossTerms, breakpoint_distance


class UMi(Channel):
    """TR 38.901 V17.0.0 Table 7.4.1-1 (UMi-Street Canyon) path loss and Table 7.4.2-1 LOS
    probability.

    LOS: PL1 = 32.4 + 21 log10(d3D) + 20 log10(fc) up to the breakpoint d'BP, then
    PL2 = 32.4 + 40 log10(d3D) + 20 log10(fc) - 9.5 log10(d'BP^2 + (hBS - hUT)^2).
    NLOS: max(PL_LOS, 35.3 log10(d3D) + 22.4 + 21.3 log10(fc) - 0.3 (hUT - 1.5)).
    fc in GHz; specified for 10 m <= d2D <= 5 km, 1.5 m <= hUT <= 22.5 m, hBS = 10 m,
    0.5 <= fc <= 100 GHz. The table's optional single-slope NLOS formula is not used.
    """

    def loss_terms(self, fc_ghz: Any, h_bs: Any, h_ue: Any) -> LossTerms:
        fc_ghz, h_bs, h_ue = (np.asarray(v, dtype=np.float64) for v in (fc_ghz, h_bs, h_ue))
        d_bp = breakpoint_distance(fc_ghz, h_bs, h_ue)
        log_f = 20.0 * np.log10(fc_ghz)
        dh2 = (h_bs - h_ue) ** 2
        return LossTerms(
            dh2=dh2,
            breakpoint=d_bp,
            near=(32.4 + log_f, 21.0),
            far=(32.4 + log_f - 9.5 * np.log10(d_bp**2 + dh2), 40.0),
            nlos=(22.4 + 21.3 * np.log10(fc_ghz) - 0.3 * (h_ue - 1.5), 35.3),
        )

    def _los_probability(self, d2d: Any, h_ue: Any) -> Any:
        # read at 18 m below 18 m, where the formula is exactly 1 (18/18 + exp(.) * 0): the
        # standard's "1 for d2D <= 18 m" without a per-element branch. UMi's LOS probability
        # does not depend on the UE's height (d2d is already broadcast against it)
        d = np.maximum(d2d, 18.0)
        near = 18.0 / d
        return near + np.exp(d * (-1.0 / 36.0)) * (1.0 - near)


CHANNEL = UMi(
    name="umi",
    source="3GPP TR 38.901 V17.0.0 Table 7.4.1-1, UMi-Street Canyon; LOS probability Table 7.4.2-1",
    default_bs_height_m=10.0,
    sigma_los_db=4.0,
    sigma_nlos_db=7.82,
    sf_decorrelation_los_m=10.0,
    sf_decorrelation_nlos_m=13.0,
    los_decorrelation_m=50.0,
    has_los_state=True,
    min_distance_2d_m=10.0,
)
