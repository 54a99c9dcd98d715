"""The interface every UE mobility model implements, and the error its checks raise."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import closest_first

#: keys of the movement section that belong to every model (the caller checks those)
COMMON_KEYS = ("model", "width", "height")


class MovementError(ValueError):
    """A bad movement section or trace file: the key, the problem and the fix, one line each,
    so the caller can say "scenario file 'X': movement.alpha must be in [0, 1], got 1.5. Fix
    the value."."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        super().__init__(f"{key} {problem}. {fix}")
        self.key, self.problem, self.fix = key, problem, fix


class MobilityModel:
    """How UEs move on numpy arrays: all UEs' positions at the start of an episode, then the
    positions of some of them (the active ones) one 1-s step later.

    A model is built once per env from the layout's movement section (`params`, which may also
    hold the common keys model, width and height) and keeps whatever state it needs per UE
    between `reset` and the steps; all randomness comes from the `rng` it is handed, so an
    episode is fixed by the caller's seed."""

    #: the name the layout's `movement.model` gives
    name: str = ""
    #: keys the layout's movement section may hold for this model, with defaults (besides
    #: model, width, height); None: required
    PARAMS: dict[str, Any] = {}

    def __init__(
        self,
        params: dict,
        width: float,
        height: float,
        velocity: np.ndarray,
        base_dir: Path | None = None,
    ) -> None:
        """`velocity`: each UE's mean speed in metres per step (one step = 1 s); `base_dir`:
        the layout file's folder, against which relative file names are read."""
        velocity = np.asarray(velocity, dtype=float).reshape(-1)
        # checked here too: a model built without the layout's validation (a test, the API)
        # must not run on bad values
        self.check(params, width, height, velocity.size, base_dir)
        self.params = {**self.PARAMS, **{k: params[k] for k in self.PARAMS if k in params}}
        self.width, self.height = float(width), float(height)
        self.velocity = velocity
        self.n_ues = velocity.size
        self.base_dir = base_dir

    @classmethod
    def check(
        cls, params: dict, width: float, height: float, n_ues: int, base_dir: Path | None
    ) -> None:
        """Raise `MovementError` for bad input. The base refuses keys the model does not know
        and required ones that are missing; models check their values after calling it."""
        allowed = [*COMMON_KEYS, *cls.PARAMS]
        for key in params:
            if key not in allowed:
                close = closest_first(str(key), allowed)[0]
                raise MovementError(
                    f"movement.{key}",
                    f"is not a key of the {cls.name} model (did you mean '{close}'?)",
                    f"Use one of: {', '.join(allowed)}.",
                )
        for key, default in cls.PARAMS.items():
            if default is None and params.get(key) is None:
                raise MovementError(
                    f"movement.{key}", "is missing", f"Add {key}: to the movement section."
                )

    def reset(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Every UE's initial x, y (float arrays of length n_ues) at the start of an episode."""
        raise NotImplementedError

    def step(
        self, x: np.ndarray, y: np.ndarray, idx: np.ndarray, t: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """New positions of the UEs at indices `idx` after one step from time t to t + 1 (`x`,
        `y`: all UEs' current positions); arrays of length len(idx)."""
        raise NotImplementedError


def number(
    params: dict,
    key: str,
    default: float,
    low: float | None = None,
    high: float | None = None,
) -> float:
    """A model parameter as a float within [low, high] (either bound optional), or
    `MovementError`. A number YAML 1.1 read as text (1e-3 without a dot) is taken."""
    value = params.get(key, default)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MovementError(
            f"movement.{key}", f"must be a finite number, got {value!r}", "Fix the value."
        )
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            bound = f"in [{low:g}, {high:g}]"
        else:
            bound = f">= {low:g}" if low is not None else f"<= {high:g}"
        raise MovementError(f"movement.{key}", f"must be {bound}, got {value!r}", "Fix the value.")
    return float(value)
