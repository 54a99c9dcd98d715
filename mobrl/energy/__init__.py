"""Base-station power models and sleep states: physics only, beside `mobrl.radio` (numpy and
`mobrl.core`; no env, Ray or torch). `station_power` is the public entry point.

A model is one module in this package defining `MODEL` (a `base.PowerModel`) and named in
`_MODULES`: `tr38864` (3GPP TR 38.864, relative units) and `earth` (Auer et al. 2011, W).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError, unknown_choice
from mobrl.core.registry import load_registry
from mobrl.energy.base import ACTIVE, PowerModel, Transition, check_load

__all__ = [
    "ACTIVE",
    "MODELS",
    "PowerModel",
    "Transition",
    "check",
    "check_step_seconds",
    "model",
    "station_power",
]

#: λ of the objective, service − λ·energy (docs/energy.md: a step's mean scaled UE utility
#: less the share of UEs unserved, less λ times the network's power over its power with every
#: station fully loaded); at 0.05 leaving a UE unserved never pays while fewer than 20 UEs per
#: station are present
WEIGHT = 0.05

#: the modules that define a power model, in the order they are listed to users
_MODULES = ("tr38864", "earth")


#: every power model by name
MODELS: dict[str, PowerModel] = load_registry(__name__, _MODULES, "MODEL")


def model(name: str) -> PowerModel:
    """The power model called `name`, or a one-line `UserError` naming the closest ones."""
    if isinstance(name, str) and name in MODELS:
        return MODELS[name]
    raise unknown_choice("power.model", str(name), MODELS, "Use one of mobrl's power models.")


def station_power(name: str, state: Any, load: Any = 1.0, **params: Any) -> np.ndarray:
    """A base station's power in `state` (a name, or an array of names) at `load` (the share
    of its resources in use, 0 to 1; sleep states ignore it), broadcast like numpy: relative
    units for `tr38864` (Table 5.1-3: deep sleep = 1), W for `earth`. `params` are the layout's
    `power:` keys (`category`, `config`, `kind`); `load=1.0` gives the table's active state.

    >>> float(station_power("tr38864", "active", category=1, config=1))
    280.0
    >>> float(station_power("earth", "active", 0.5, kind="macro"))  # 6 x (130 + 4.7 x 10 W)
    1062.0
    """
    chosen = model(name)
    checked = chosen.check(params)
    states = np.asarray(state)
    for found in np.unique(states):
        chosen.check_state(str(found))
    loads = check_load(load)
    states, loads = np.broadcast_arrays(states, loads)
    powers = chosen.powers(checked, loads)
    out = np.empty(loads.shape, dtype=float)
    for found in np.unique(states):
        where = states == found
        out[where] = np.broadcast_to(powers[str(found)], loads.shape)[where]
    return out if out.ndim else out[()]


def check(section: Any) -> dict[str, Any]:
    """A layout's `power:` section completed and checked: `model`, the model's keys
    (`category`, `config`, `kind`) and `sleep`, the sleep states a station may enter (by
    default all of the model's, lightest first; `active_ul` is not a sleep state); or a
    one-line `UserError` naming the key and the fix."""
    if not isinstance(section, dict) or "model" not in section:
        raise UserError(
            f"power={section!r} needs a model: power: {{model: tr38864}} (or earth). "
            "See docs/energy.md."
        )
    chosen = model(section["model"])
    own = ("model", "sleep", "weight")
    params = chosen.check({k: v for k, v in section.items() if k not in own})
    weight = section.get("weight", WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        raise UserError(
            f"power.weight={weight!r} must be a number from 0 up: the λ of the objective "
            f"service - λ·energy (default {WEIGHT})."
        )
    sleep = section.get("sleep")
    allowed = chosen.sleep_states
    if sleep is None:
        sleep = list(allowed)
    if isinstance(sleep, str):
        sleep = [sleep]
    if not isinstance(sleep, list) or not sleep:
        raise UserError(
            f"power.sleep={sleep!r} must list sleep states, e.g. [{', '.join(allowed)}]."
        )
    for state in sleep:
        if state not in allowed:
            raise unknown_choice(
                f"power.sleep state of model {chosen.name}",
                str(state),
                allowed,
                "List only the model's sleep states.",
            )
    ordered = [s for s in allowed if s in sleep]  # lightest first, each once
    return {"model": chosen.name, **params, "sleep": ordered, "weight": float(weight)}


def check_step_seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(
            f"step_seconds={value!r} must be a duration above 0 (seconds per step; "
            "mobile-env's UE velocities are per step: 1)."
        )
    return float(value)
