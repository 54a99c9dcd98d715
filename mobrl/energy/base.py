"""What every base-station power model is: named states, their power at a load, and what it
costs to leave a sleep state (`mobrl.energy`). Numbers only: no env, no Ray, no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mobrl.core.errors import UserError, unknown_choice

#: the state a station serves in (every model has it)
ACTIVE = "active"


@dataclass(frozen=True)
class Transition:
    """Waking from a sleep state: how long it takes and the energy it costs beyond the sleep
    state's own power over that time (in the model's power unit x seconds)."""

    seconds: float
    energy: float


class PowerModel:
    """A base station's power by state and load. A model is one module defining `MODEL`, an
    instance of a subclass, named in `mobrl.energy._MODULES`."""

    #: the model's name (`power.model` in a layout)
    name: str = ""
    #: the unit its powers are in
    unit: str = ""
    #: the layout keys it reads (`power.category`, ...) with their defaults
    defaults: dict[str, Any] = {}
    #: its states, active first, then the sleep states from the lightest to the deepest
    states: tuple[str, ...] = (ACTIVE,)

    @property
    def sleep_states(self) -> tuple[str, ...]:
        """The states a station sleeps in (serving nobody), lightest first."""
        return tuple(s for s in self.states if s not in self.serving)

    #: the states a station serves in
    serving: tuple[str, ...] = (ACTIVE,)

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        """`params` completed with the defaults, or a one-line `UserError` naming the key, its
        bad value and the choices."""
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise unknown_choice(
                f"power key for model {self.name}",
                unknown[0],
                self.defaults,
                f"Remove it; model {self.name} reads {', '.join(self.defaults) or 'no key'}.",
            )
        return {**self.defaults, **params}

    def check_state(self, state: str) -> None:
        if state not in self.states:
            raise unknown_choice(
                f"state of power model {self.name}",
                str(state),
                self.states,
                "Use one of the model's states.",
            )

    def powers(self, params: dict[str, Any], load: np.ndarray) -> dict[str, np.ndarray]:
        """Each state's power at `load` (the share of resources in use; sleep states ignore
        it), for checked `params`."""
        raise NotImplementedError

    def transition(self, state: str, params: dict[str, Any]) -> Transition:
        """Waking from `state` (`ACTIVE` and a state without a transition: none)."""
        return Transition(0.0, 0.0)


def check_load(load: Any) -> np.ndarray:
    """`load` as a float array in [0, 1], or a one-line `UserError`."""
    values = np.asarray(load, dtype=float)
    if values.size and (np.isnan(values).any() or values.min() < 0.0 or values.max() > 1.0):
        bad = values[(np.isnan(values)) | (values < 0.0) | (values > 1.0)].flat[0]
        raise UserError(
            f"load {bad:g} is not a share of resources: use values from 0 (idle) to 1 (every "
            "resource in use)."
        )
    return values
