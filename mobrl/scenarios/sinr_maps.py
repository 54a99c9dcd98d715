"""A layout's best-SINR map, every station transmitting, on the engine's arrays: what
`mobrl scenarios plot` and `mobrl render` shade where a radio section changes the SINR."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mobrl.scenarios.budget import point_arrays

#: points per side of a SINR map's grid
MAP_POINTS = 200
#: (station, point) pairs of a map computed at once: bounds its temporary arrays (8 MB each)
_MAP_PAIRS = 1_000_000


def _db(value: Any) -> Any:
    return 10.0 * np.log10(value)


@dataclass(frozen=True)
class SinrMap:
    """The best SINR (dB) over a grid of the map, every station transmitting (full buffer):
    `values_db[i, j]` at y = i * height / (rows - 1), x = j * width / (cols - 1)."""

    values_db: np.ndarray
    width: float
    height: float
    #: the UEs' threshold (dB): where a link can carry data
    threshold_db: float

    @property
    def extent(self) -> tuple[float, float, float, float]:
        return (0.0, self.width, 0.0, self.height)

    @property
    def limits(self) -> tuple[float, float]:
        """The colour scale's range: the values but the extreme 0.5 % at either end, so a few
        points do not flatten the rest (under mobile-env's channel a point on a station is at
        distance 0, where its SNR is hundreds of dB)."""
        low, high = np.percentile(self.values_db, [0.5, 99.5])
        return float(low), float(max(high, low + 1e-6))

    @property
    def extend(self) -> str:
        """Which ends of the colour bar `limits` cut (matplotlib's `extend`)."""
        low, high = self.limits
        cut_low, cut_high = self.values_db.min() < low, self.values_db.max() > high
        return {(0, 0): "neither", (1, 0): "min", (0, 1): "max"}.get((cut_low, cut_high), "both")


def shows_sinr_map(core: Any) -> bool:
    """Whether `core`'s layout is drawn with a SINR map: a radio section whose SINR is not
    mobile-env's (another channel, or interference); mobile-env's model keeps its coverage
    drawing."""
    live = getattr(core, "_radio", None)
    return live is not None and (live.cfg.thermal or live.cfg.interference != "none")


def sinr_map(core: Any, points: int = MAP_POINTS) -> SinrMap:
    """The best SINR over a `points` x `points` grid of `core`'s map, with the LOS and
    shadowing of the core's current episode: at each point, the strongest station's SINR of a
    UE there, with every station transmitting."""
    from mobrl.radio.links import link_sinr

    width, height = float(core.width), float(core.height)
    gx, gy = np.meshgrid(np.linspace(0.0, width, points), np.linspace(0.0, height, points))
    px, py = gx.ravel(), gy.ravel()
    n_bs = len(core.stations)
    chunk = min(px.size, max(1, _MAP_PAIRS // n_bs))
    arrays = point_arrays(core, chunk)
    on = np.ones(n_bs, dtype=bool)
    best = np.empty(px.size)
    for start in range(0, px.size, chunk):
        cx, cy = px[start : start + chunk], py[start : start + chunk]
        k = cx.size
        if k < chunk:  # the last chunk, padded to the arrays' UE count
            cx, cy = np.resize(cx, chunk), np.resize(cy, chunk)
        sinr = link_sinr(arrays.rx(cx, cy), arrays.noise, on)
        best[start : start + k] = sinr.max(axis=0)[:k]
    values = _db(best).reshape(points, points).astype(np.float32)
    return SinrMap(values, width, height, float(_db(arrays.thr[0, 0])))
