"""What every demand model and load profile is (`mobrl.traffic`). Numbers only: no env, no
Ray, no torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError


class _NoDraws:
    """A stand-in RNG for models that draw nothing."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a demand model drew ({name}) where it predicts")


_NO_DRAWS: Any = _NoDraws()


class Demand:
    """How much a UE asks for each step. A model is one module of `mobrl.traffic.demands`
    defining `DEMAND`, named in its `_MODULES`.

    `start` gives an episode's state for `n` UEs; each step `offered` is the rate (Mbit/s)
    that each UE would take (inf: as much as it can get), and `served` tells the model what
    each UE received over `seconds`."""

    name: str = ""
    #: the keys of `traffic.demand` it reads, with their defaults (None: required)
    defaults: dict[str, Any] = {}
    #: True: every UE takes whatever it gets (mobile-env's model; no load, no demand served)
    full = False

    def check(self, params: dict[str, Any], where: str) -> dict[str, Any]:
        """`params` completed, or a one-line `UserError` naming the key `where.KEY`."""
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            keys = ", ".join(self.defaults) or "no other key"
            raise UserError(
                f"{where}.{unknown[0]} is not a key of demand model {self.name}: it reads "
                f"{keys}. Remove it."
            )
        out = {**self.defaults, **params}
        for key, value in out.items():
            if value is None:
                raise UserError(f"{where}.{key} is missing: demand model {self.name} needs it.")
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise UserError(
                    f"{where}.{key}={value!r} must be a number above 0 (demand model "
                    f"{self.name}). Give a positive value."
                )
        return out

    def start(self, params: dict[str, Any], n: int, rng: np.random.Generator) -> Any:
        return None

    def offered(
        self,
        params: dict[str, Any],
        state: Any,
        seconds: float,
        present: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def expected(self, params: dict[str, Any], state: Any, seconds: float) -> np.ndarray:
        """The rate each UE would ask for in the next step, in expectation, without drawing
        (what a planner predicts with)."""
        return self.offered(params, state, seconds, np.ones(len(state), bool), _NO_DRAWS)[0]

    def served(self, params: dict[str, Any], state: Any, rates: np.ndarray, seconds: float) -> None:
        """Each UE received `rates` (Mbit/s) over the step of `seconds`."""

    def mean_mbps(self, params: dict[str, Any]) -> float:
        """A UE's mean offered rate (Mbit/s) while present (inf: full buffer)."""
        raise NotImplementedError


class Profile:
    """How the offered load changes over a day: the share of a layout's UEs present at each
    hour (1: all of them). A profile is one module of `mobrl.traffic.profiles` defining
    `PROFILE`, named in its `_MODULES`."""

    name: str = ""
    #: where its numbers come from
    source: str = ""

    def hourly(self, spec: Any, base: Any) -> np.ndarray:
        """The 24 values at hours 0, 1, ..., 23 (checked: in [0, 1], the largest 1 unless all
        are 1), or a one-line `UserError`. `base`: the layout file's folder."""
        raise NotImplementedError


def at_hour(hourly: np.ndarray, hour: Any) -> np.ndarray:
    """The profile at `hour` (0 <= hour, any real number of hours, wrapping past 24): linear
    between the hourly values, hour h's value at h:00."""
    h = np.mod(np.asarray(hour, dtype=float), 24.0)
    low = np.floor(h).astype(int)
    frac = h - low
    return hourly[low] * (1.0 - frac) + hourly[(low + 1) % 24] * frac


def check_hourly(values: Any, what: str, fix: str) -> np.ndarray:
    """24 hourly values in [0, 1] with a largest of 1, as a float array, or a one-line error."""
    try:
        out = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise UserError(f"{what} holds a value that is not a number. {fix}") from None
    if out.shape != (24,):
        raise UserError(f"{what} has {out.size} values, not 24 (one per hour, 0 to 23). {fix}")
    if np.isnan(out).any() or out.min() < 0.0 or out.max() > 1.0:
        raise UserError(f"{what} has a value outside 0 to 1 (a share of the UEs). {fix}")
    if out.max() <= 0.0:
        raise UserError(f"{what} is 0 at every hour: nobody would ever be there. {fix}")
    return out
