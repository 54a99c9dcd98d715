"""Base-station power models and sleep states: physics only, beside `mobrl.radio` (numpy and
`mobrl.core`; no env, Ray or torch). `station_power` is the public entry point.

A model is one module in this package defining `MODEL` (a `base.PowerModel`) and named in
`_MODULES`: `tr38864` (3GPP TR 38.864, relative units) and `earth` (Auer et al. 2011, W).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import unknown_choice
from mobrl.core.registry import load_registry
from mobrl.energy.base import ACTIVE, PowerModel, Transition, check_load

__all__ = ["ACTIVE", "MODELS", "PowerModel", "Transition", "model", "station_power"]

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
