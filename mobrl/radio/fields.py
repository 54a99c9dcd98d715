"""Spatially consistent random fields: shadowing and the LOS state of each station's links.

TR 38.901 asks that a link's shadow fading and LOS state vary smoothly with the UE's position
(exponential correlation over the decorrelation distances of Table 7.5-6 and the LOS
correlation distance of Table 7.6.3.1-2; §7.6.3), so a UE moving a few metres sees nearly the
same channel and two UEs side by side see the same one. Each station's field is a stationary
Gaussian field with correlation exp(-r / d_corr). One realisation per correlation distance is
drawn once per process on a periodic grid of CELLS x CELLS cells of d_corr / CELLS_PER_DCORR
(circulant embedding: white noise filtered by the square root of the covariance's spectrum,
exact for the periodic field); each station reads it at its own random offset, drawn per
episode from the env's radio RNG, so its field is a new window of the realisation each
episode. Windows far apart are practically independent, so stations' fields are too. A point
reads its cell's value (nearest cell; neighbouring cells correlate at exp(-1/8) = 0.88), so a
UE moving through a cell sees the value change in small steps. A map too large for half the
grid at that resolution gets larger cells (fewer per decorrelation distance).
The LOS field is the same Gaussian field through the normal CDF: uniform values, and a link
is in LOS where its value is below the model's LOS probability (38.901 §7.6.3.3).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

#: cells per side of a field's periodic grid
CELLS = 1024
#: cells per decorrelation distance (fewer only on maps larger than half the grid)
CELLS_PER_DCORR = 8
#: the realisations' seed (the sequence numpy's SeedSequence takes)
_POOL_SEED = (38901, 0)


#: a per-episode table of a field's values, cell by cell with every station's value side by
#: side, is built up to this size (bytes); larger ones read the realisation in place
TABLE_BYTES = 64 * 2**20


@functools.cache
def pool(cells_per_dcorr: float, scale: float = 1.0, uniform: bool = False) -> np.ndarray:
    """The process's one realisation of a unit-variance Gaussian field with correlation
    exp(-r / d_corr) on a periodic CELLS x CELLS grid of cells `cells_per_dcorr` to a d_corr,
    flattened and read-only; times `scale`, or through the normal CDF if `uniform`."""
    if uniform or scale != 1.0:
        base = pool(cells_per_dcorr)
        if uniform:
            from scipy.special import ndtr

            out = ndtr(base)
        else:
            out = base * scale
        # float32: half the memory a step's scattered reads go through (values to 1e-7)
        out = out.astype(np.float32)
        out.flags.writeable = False
        return out
    n = CELLS
    k = np.minimum(np.arange(n), n - np.arange(n)) / cells_per_dcorr  # in units of d_corr
    eig = np.maximum(np.fft.fft2(np.exp(-np.hypot(k[:, None], k[None, :]))).real, 0.0)
    white = np.random.default_rng(_POOL_SEED).standard_normal((n, n))
    field = np.fft.ifft2(np.sqrt(eig) * np.fft.fft2(white)).real.ravel()
    field.flags.writeable = False
    return field


class _SharedRealisations:
    """A copy (`copy.deepcopy`, e.g. of an env a planner plays ahead on) shares the object's
    read-only arrays, the realisations and per-episode tables, instead of copying them:
    nothing writes them, and a new episode replaces them."""

    def __deepcopy__(self, memo: dict) -> Any:
        new = copy.copy(self)
        memo[id(self)] = new
        for key, value in vars(self).items():
            if not (isinstance(value, np.ndarray) and not value.flags.writeable):
                setattr(new, key, copy.deepcopy(value, memo))
        return new


class StationFields(_SharedRealisations):
    """Per station, one field of correlation distance `d_corr` over a `width` x `height` map:
    `at(x, y)` gives the (station, UE) values at the UEs' positions (times `scale`, or
    uniform values with `uniform`).

    With `table`, each episode's windows are copied into a table with the map's cells as rows and the
    stations' values side by side (when it fits in TABLE_BYTES): a step's reads then touch a
    few lines of memory per UE instead of one line per (station, UE) pair scattered over the
    whole realisation, the same values sooner."""

    def __init__(
        self,
        d_corr: float,
        n_stations: int,
        width: float,
        height: float,
        scale: float = 1.0,
        uniform: bool = False,
        table: bool = True,
    ) -> None:
        self.cell = max(float(d_corr) / CELLS_PER_DCORR, max(width, height) / (CELLS // 2))
        self.values = pool(float(d_corr) / self.cell, float(scale), uniform)
        self.nx = int(width // self.cell) + 1
        self.ny = int(height // self.cell) + 1
        self.base = np.zeros((n_stations, 1), dtype=np.int64)
        self.table: np.ndarray | None = None
        fits = self.nx * self.ny * n_stations * self.values.itemsize <= TABLE_BYTES
        self._tabled = table and fits

    def redraw(self, rng: np.random.Generator) -> None:
        """New windows for every station (a new realisation for the episode)."""
        n = len(self.base)
        ox = rng.integers(0, CELLS - self.nx + 1, size=(n, 1))
        oy = rng.integers(0, CELLS - self.ny + 1, size=(n, 1))
        self.base = ox * CELLS + oy
        if self._tabled:
            cells = (np.arange(self.nx)[:, None] * CELLS + np.arange(self.ny)[None, :]).ravel()
            self.table = np.ascontiguousarray(np.take(self.values, self.base + cells).T)
            self.table.flags.writeable = False

    def cells(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each position's cell (column, row) on the map (positions off it: the nearest)."""
        ix = np.clip(np.floor(np.asarray(x) / self.cell), 0, self.nx - 1).astype(np.int64)
        iy = np.clip(np.floor(np.asarray(y) / self.cell), 0, self.ny - 1).astype(np.int64)
        return ix, iy

    def keys(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Each position's cell within a window."""
        ix, iy = self.cells(x, y)
        return ix * CELLS + iy

    def at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(station, UE) field values at the UEs' positions x, y (metres)."""
        if self.table is not None:
            ix, iy = self.cells(x, y)
            # each UE's cell is a row of every station's value: rows copied whole, then
            # seen as (station, UE)
            return np.take(self.table, ix * self.ny + iy, axis=0).T
        return np.take(self.values, self.base + self.keys(x, y)[None, :])


class ShadowFields(_SharedRealisations):
    """Shadow fading of every station's links: one field for links in LOS and one for links
    in NLOS (their own decorrelation distances and sigmas, on cells of the shorter distance's
    size), read in one pass: `at(x, y, los)` in dB."""

    def __init__(
        self,
        d_los: float,
        d_nlos: float,
        sigma_los: float,
        sigma_nlos: float,
        n_stations: int,
        width: float,
        height: float,
    ) -> None:
        # read in place: a table of the fine shadowing grid would be too large
        self.grid = StationFields(min(d_los, d_nlos), n_stations, width, height, table=False)
        cell = self.grid.cell
        self.values = np.concatenate(
            [pool(d_los / cell, float(sigma_los)), pool(d_nlos / cell, float(sigma_nlos))]
        )
        self.values.flags.writeable = False
        self.los_base = self.nlos_base = self.grid.base

    def redraw(self, rng: np.random.Generator) -> None:
        self.grid.redraw(rng)
        los_base = self.grid.base
        self.grid.redraw(rng)
        # int32 offsets (the two realisations hold 2 * CELLS^2 values): index arithmetic on
        # half the memory of int64
        self.los_base = los_base.astype(np.int32)
        self.nlos_base = (self.grid.base + CELLS * CELLS).astype(np.int32)

    def at(self, x: np.ndarray, y: np.ndarray, los: np.ndarray) -> np.ndarray:
        """(station, UE) shadow fading (dB) at the UEs' positions with the links' LOS states
        (bool, broadcastable to (station, UE))."""
        # each link's window by arithmetic (a masked selection branches per element)
        index = self.nlos_base + self.grid.keys(x, y).astype(np.int32)[None, :]
        index += los * (self.los_base - self.nlos_base)
        return np.take(self.values, index)
