"""The EARTH base-station power model (`power.model: earth`).

G. Auer et al., "How much energy is needed to run a wireless network?", IEEE Wireless
Communications 18(5), 2011, eq. (1) and Table II: a station of N_TRX transceiver chains draws

    P_in = N_TRX (P0 + Δp P_out)      for 0 < P_out <= P_max
    P_in = N_TRX P_sleep              asleep (P_out = 0)

where P_out is the RF output power per chain, P0 the power at the minimum non-zero output and
Δp the slope of the load dependence. mobrl sets P_out = load x P_max, so an active station
with no load draws N_TRX P0 and a fully loaded one N_TRX (P0 + Δp P_max). Powers in W.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import unknown_choice
from mobrl.energy.base import ACTIVE, PowerModel

#: Table II: kind -> (N_TRX, P_max W, P0 W, Δp, P_sleep W)
KINDS: dict[str, tuple[int, float, float, float, float]] = {
    "macro": (6, 20.0, 130.0, 4.7, 75.0),
    "rrh": (6, 20.0, 84.0, 2.8, 56.0),
    "micro": (2, 6.3, 56.0, 2.6, 39.0),
    "pico": (2, 0.13, 6.8, 4.0, 4.3),
    "femto": (2, 0.05, 4.8, 8.0, 2.9),
}


class Earth(PowerModel):
    name = "earth"
    unit = "W"
    defaults = {"kind": "macro"}
    states = (ACTIVE, "sleep")

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        params = super().check(params)
        if params["kind"] not in KINDS:
            raise unknown_choice(
                "power.kind", str(params["kind"]), KINDS, "Use one of EARTH's Table II kinds."
            )
        return params

    def powers(self, params: dict[str, Any], load: np.ndarray) -> dict[str, np.ndarray]:
        n_trx, p_max, p0, slope, p_sleep = KINDS[params["kind"]]
        active = n_trx * (p0 + slope * load * p_max)
        return {ACTIVE: active, "sleep": np.full_like(active, n_trx * p_sleep)}


MODEL = Earth()
