"""UE mobility models on numpy arrays, by the name a layout's `movement.model` gives.

The fast engine moves UEs with one of these when a layout asks for it, e.g.
`movement: {model: gauss_markov, alpha: 0.75}` or `movement: {model: trace, file: fcd.xml}`.
`random_waypoint`, the default, is not here: the engine keeps mobile-env's own, so its
episodes stay identical to stock mobile-env's.

A new model is one module in this package: a `MobilityModel` subclass (`base.py`: its name,
its `PARAMS` with defaults, `check`, `reset` and `step`) bound to the module's `MODEL`, and
the module's name added to `_MODULES` below.
"""

from __future__ import annotations

from mobrl.core.errors import closest_first
from mobrl.core.registry import load_registry
from mobrl.network.mobility.base import MobilityModel, MovementError

__all__ = ["MODELS", "MobilityModel", "MovementError", "model_class"]

#: the modules under this package that each define one model as `MODEL`
_MODULES = ("gauss_markov", "trace")


#: every model by its name in the layout's `movement.model`
MODELS: dict[str, type[MobilityModel]] = load_registry(__name__, _MODULES, "MODEL")


def model_class(name: str) -> type[MobilityModel]:
    """The model a layout's `movement.model` names, or `MovementError` naming the closest."""
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        close = closest_first(str(name), MODELS)[0]
        raise MovementError(
            "movement.model",
            f"'{name}' is no array mobility model (did you mean '{close}'?)",
            f"Use one of: {', '.join(MODELS)}.",
        ) from None
