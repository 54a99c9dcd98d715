"""mobile-env's Okumura-Hata path loss (its default channel), with mobile-env's units kept."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.radio.channels.base import Channel

#: mobile-env's guard against log10(0) (mobile_env.core.channels.EPSILON)
EPSILON = 1e-16


class OkumuraHata(Channel):
    """mobile-env's `OkumuraHata.power_loss`, term for term, so both give the same floats.

    PL = 69.55 + 26.16 log10(f) - 13.82 log10(hBS) - a(hUT) + (44.9 - 6.55 log10(hBS)) log10(d),
    a(hUT) = (1.1 log10(f) - 0.7) hUT - (1.56 log10(f) - 0.8): Hata's urban formula with the
    small/medium-city UE correction, f in MHz (here 1000 * fc_GHz).

    mobile-env's convention, kept on purpose: d is the 2D distance in *metres* where Hata's
    formula expects kilometres (so the loss is 3 * (44.9 - 6.55 log10(hBS)) dB above Hata's, about
    101 dB at hBS = 50 m),
    and it is used at 2.5 GHz, outside Hata's 150-1500 MHz. No LOS state (`los` is ignored,
    `los_probability` raises) and no shadowing. Hata's ranges, translated to mobile-env's
    units: 1 <= d <= 20 (Hata's 1-20 km, read as metres), 30 m <= hBS <= 200 m,
    1 m <= hUT <= 10 m, 150-1500 MHz; the formula is evaluated as is outside them, as
    mobile-env does.
    """

    def _path_loss_db(self, d2d: Any, fc_ghz: Any, h_bs: Any, h_ue: Any, los: Any) -> Any:
        # the same operations in the same order as mobile-env (and mobrl.network.channel), which
        # this layer may not import: results must stay equal to the last bit
        frequency = 1000.0 * fc_ghz
        ch = 0.8 + (1.1 * np.log10(frequency) - 0.7) * h_ue - 1.56 * np.log10(frequency)
        t1 = 69.55 - ch + 26.16 * np.log10(frequency) - 13.82 * np.log10(h_bs)
        t2 = 44.9 - 6.55 * np.log10(h_bs)
        return t1 + t2 * np.log10(d2d + EPSILON)

    def _los_probability(self, d2d: Any, h_ue: Any) -> Any:
        raise ValueError(
            "okumura_hata has no LOS state: its path loss ignores `los`, so it has no LOS "
            "probability (use uma or umi)"
        )


CHANNEL = OkumuraHata(
    name="okumura_hata",
    source="mobile-env 2.1 mobile_env.core.channels.OkumuraHata (Hata 1980, urban, small/medium city)",
    # mobile-env's default BS height
    default_bs_height_m=50.0,
    sigma_los_db=None,
    sigma_nlos_db=None,
    sf_decorrelation_los_m=None,
    sf_decorrelation_nlos_m=None,
    los_decorrelation_m=None,
    has_los_state=False,
    min_distance_2d_m=1.0,
)
