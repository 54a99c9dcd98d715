"""The Gauss-Markov mobility model on arrays: speed and direction with memory, per UE.

Liang & Haas (1999) introduced the model, Camp, Boleng & Davies (2002, "A Survey of Mobility
Models for Ad Hoc Network Research", Wireless Communications and Mobile Computing 2(5),
483-502) made it the common reference; this follows ns-3's `GaussMarkovMobilityModel`
(src/mobility/model/gauss-markov-mobility-model.cc) in two dimensions (no pitch). Each UE
keeps a speed s and a direction d and, every 1-s step,

    s_n = alpha s_{n-1} + (1 - alpha) s_mean + sqrt(1 - alpha^2) speed_std w
    d_n = alpha d_{n-1} + (1 - alpha) d_mean + sqrt(1 - alpha^2) direction_std w'
    (x, y) += s_n (cos d_n, sin d_n)

with w, w' standard normal. alpha = 1 moves at constant velocity, alpha = 0 draws each step
afresh around the means. For alpha < 1 the long-run spread of s about s_mean is speed_std
(and that of d about d_mean is direction_std): the noise is scaled so that it is.

Parameters (layout `movement:` keys):

- `alpha` (default 0.75, in [0, 1]): the memory. At 0.75 a step's influence falls below 1 %
  after 16 steps (0.75^16 = 0.01): UEs hold a course for tens of metres, yet turn within a
  short episode.
- the mean speed s_mean is each UE's `ues.velocity` (m per step), as random waypoint's speed.
- `speed_std` (default 0.2, m per step, >= 0): the spread of the speed; 0.2 lets a pedestrian
  at mobile-env's 1.5 m/step vary by about 13 %. Raise it for vehicles.
- `direction_std` (default 0.45, radians, >= 0): the spread of the direction; about the
  square root of the direction variance 0.2 in ns-3's documented example.
- d_mean: drawn uniformly in [0, 2 pi) per UE at each reset (ns-3's default MeanDirection);
  the UE starts at s_mean and d_mean (as ns-3 does) from a position uniform in the area.

Where ns-3 differs: its speed may turn negative (a UE walks backwards); here it stops at 0.
At a bound ns-3 reverses the velocity component that would leave the area and mirrors the
mean direction (pi - d_mean at a vertical bound, -d_mean at a horizontal one), then continues
from the mirrored mean direction. Here the step is mirrored at the bound instead (the UE
travels its whole step, bouncing off the wall, so it never leaves [0, width] x [0, height]),
and the mean direction is mirrored the same way and becomes the direction, as in ns-3.

Random draws, in order: reset takes x (n_ues uniform in [0, width)), y (likewise in height),
then d_mean (n_ues uniform in [0, 2 pi)); a step takes one (2, len(idx)) standard normal
array, row 0 for the speeds and row 1 for the directions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.network.mobility.base import MobilityModel, number


def _fold(p: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """Positions mirrored back into [0, size] as often as needed, and whether each crossed a
    bound an odd number of times (its direction is then mirrored)."""
    inside = np.mod(p, 2 * size)
    folded = np.where(inside > size, 2 * size - inside, inside)
    # touching a bound is no crossing: a UE stopped on the wall keeps its direction
    crossings = np.where(p > size, np.ceil(p / size) - 1, 0) + np.where(
        p < 0, np.ceil(-p / size), 0
    )
    return np.clip(folded, 0.0, size), crossings % 2 == 1


class GaussMarkovMobility(MobilityModel):
    """Gauss-Markov mobility (see the module's docstring for the equations and sources)."""

    name = "gauss_markov"
    PARAMS: dict[str, Any] = {"alpha": 0.75, "speed_std": 0.2, "direction_std": 0.45}

    def __init__(
        self,
        params: dict,
        width: float,
        height: float,
        velocity: np.ndarray,
        base_dir: Path | None = None,
    ) -> None:
        super().__init__(params, width, height, velocity, base_dir)
        self.alpha = number(self.params, "alpha", self.PARAMS["alpha"])
        self.speed_std = number(self.params, "speed_std", self.PARAMS["speed_std"])
        self.direction_std = number(self.params, "direction_std", self.PARAMS["direction_std"])
        n = self.n_ues
        self.speed = self.velocity.copy()
        self.direction = np.zeros(n)
        self.mean_direction = np.zeros(n)

    @classmethod
    def check(
        cls, params: dict, width: float, height: float, n_ues: int, base_dir: Path | None
    ) -> None:
        super().check(params, width, height, n_ues, base_dir)
        number(params, "alpha", cls.PARAMS["alpha"], low=0.0, high=1.0)
        number(params, "speed_std", cls.PARAMS["speed_std"], low=0.0)
        number(params, "direction_std", cls.PARAMS["direction_std"], low=0.0)

    def reset(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_ues
        x = rng.uniform(0.0, self.width, n)
        y = rng.uniform(0.0, self.height, n)
        self.mean_direction = rng.uniform(0.0, 2 * math.pi, n)
        self.direction = self.mean_direction.copy()
        self.speed = self.velocity.copy()
        return x, y

    def step(
        self, x: np.ndarray, y: np.ndarray, idx: np.ndarray, t: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(idx, slice):
            idx = np.arange(self.n_ues)[idx]
        a = self.alpha
        noise = math.sqrt(max(1.0 - a * a, 0.0))
        w = rng.standard_normal((2, len(idx)))
        speed = a * self.speed[idx] + (1 - a) * self.velocity[idx]
        speed = np.maximum(speed + noise * self.speed_std * w[0], 0.0)
        mean = self.mean_direction[idx]
        direction = a * self.direction[idx] + (1 - a) * mean + noise * self.direction_std * w[1]
        nx, flip_x = _fold(x[idx] + speed * np.cos(direction), self.width)
        ny, flip_y = _fold(y[idx] + speed * np.sin(direction), self.height)
        mean = np.where(flip_x, math.pi - mean, mean)
        mean = np.where(flip_y, -mean, mean)
        bounced = flip_x | flip_y
        # wrapped so that repeated mirroring never lets the angles drift by turns of 2 pi
        mean = np.where(bounced, np.mod(mean + math.pi, 2 * math.pi) - math.pi, mean)
        self.mean_direction[idx] = mean
        self.direction[idx] = np.where(bounced, mean, direction)
        self.speed[idx] = speed
        return nx, ny


MODEL = GaussMarkovMobility
