"""3GPP TR 38.864's base-station power model (`power.model: tr38864`), Rel-18 network energy
savings, clause 5.1, as cited from V18.1.0.

Powers are relative: deep sleep is 1 (Table 5.1-3). A station is in one of five states:
deep sleep, light sleep, micro sleep, active DL (`active`) or active UL (`active_ul`), with
powers per BS category (1: macro-like, 2: small cell) and reference configuration
(Table 5.1-1: set 1 FR1 TDD 100 MHz, 64 TxRU; set 2 FR1 FDD 20 MHz, 32 TxRU; set 3 FR2 TDD
100 MHz, 2 TxRU). Waking from light or deep sleep takes a transition time and costs a
transition energy on top of the sleep state's power over that time (Tables 5.1-4 and 5.1-5,
relative power x ms); micro sleep has none.

Load. The TR sums power over a slot's symbols: a symbol with DL transmission draws the active
DL power (at full bandwidth, Tx power and TxRUs: s_f = s_p = s_a = 1 in its scaling), one
with nothing scheduled the micro-sleep power. mobrl's `load` is the share of a step's
resources in use, so a station's mean power over the step is

    P(load) = P_micro + load (P_active - P_micro)

which is the table's active value at load 1 and micro sleep at load 0 (awake, nothing sent).
The TR's scaling within one symbol for part of the bandwidth or power (a load-independent
share A of the active power) is not modelled: mobrl's schedulers share whole resources.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.energy.base import ACTIVE, PowerModel, Transition

#: Table 5.1-3: (category, config) -> relative power of
#: (deep sleep, light sleep, micro sleep, active DL, active UL)
RELATIVE: dict[tuple[int, int], tuple[float, float, float, float, float]] = {
    (1, 1): (1.0, 25.0, 55.0, 280.0, 110.0),
    (1, 2): (1.0, 25.0, 50.0, 200.0, 90.0),
    (1, 3): (1.0, 25.0, 38.0, 152.0, 80.0),
    (2, 1): (1.0, 2.1, 5.5, 32.0, 6.5),
    (2, 2): (1.0, 2.1, 5.0, 26.0, 5.8),
    (2, 3): (1.0, 2.1, 3.0, 17.6, 4.2),
}

#: Tables 5.1-4 and 5.1-5: category -> sleep state -> (transition time ms, extra energy in
#: relative power x ms)
TRANSITIONS: dict[int, dict[str, tuple[float, float]]] = {
    1: {"deep_sleep": (50.0, 1000.0), "light_sleep": (6.0, 90.0)},
    2: {"deep_sleep": (10_000.0, 17_000.0), "light_sleep": (640.0, 1088.0)},
}

#: Table 5.1-1, for messages and documentation
CONFIGS = {
    1: "FR1 TDD, 100 MHz, 30 kHz SCS, 64 TxRU, 55 dBm",
    2: "FR1 FDD, 20 MHz, 15 kHz SCS, 32 TxRU, 49 dBm",
    3: "FR2 TDD, 100 MHz, 120 kHz SCS, 2 TxRU, 33 dBm",
}

_STATES = ("deep_sleep", "light_sleep", "micro_sleep", ACTIVE, "active_ul")


class TR38864(PowerModel):
    name = "tr38864"
    unit = "relative (deep sleep = 1)"
    defaults = {"category": 1, "config": 1}
    states = (ACTIVE, "active_ul", "micro_sleep", "light_sleep", "deep_sleep")
    serving = (ACTIVE, "active_ul")

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        params = super().check(params)
        for key, allowed in (("category", (1, 2)), ("config", (1, 2, 3))):
            if params[key] not in allowed or isinstance(params[key], bool):
                raise UserError(
                    f"power.{key}={params[key]} is not a TR 38.864 {key}: use "
                    f"{' or '.join(str(a) for a in allowed)} (Table 5.1-"
                    f"{'3' if key == 'category' else '1'})."
                )
        return params

    def powers(self, params: dict[str, Any], load: np.ndarray) -> dict[str, np.ndarray]:
        row = dict(zip(_STATES, RELATIVE[params["category"], params["config"]]))
        micro = row["micro_sleep"]
        out = {state: np.full(load.shape, value) for state, value in row.items()}
        out[ACTIVE] = micro + load * (row[ACTIVE] - micro)
        out["active_ul"] = micro + load * (row["active_ul"] - micro)
        return out

    def transition(self, state: str, params: dict[str, Any]) -> Transition:
        ms, energy = TRANSITIONS[params["category"]].get(state, (0.0, 0.0))
        return Transition(ms / 1000.0, energy / 1000.0)


MODEL = TR38864()
