"""Where the stations of a generated or imported layout stand: the sites of a hexagonal grid
(the N nearest its centre, or a rectangular block), stations scattered at random over the map,
and sites centred on a map that fits them (`place`). Positions are in metres, as (n, 2)
arrays."""

from __future__ import annotations

import math

import numpy as np

from mobrl.core.errors import UserError


def hex_sites(n: int, isd: float) -> np.ndarray:
    """The `n` sites of a hexagonal grid with spacing `isd` nearest its centre (ring by ring;
    within a ring by angle from east, counter-clockwise), as (n, 2) offsets from the centre."""
    rings = 0
    while 3 * rings * (rings + 1) + 1 < n:
        rings += 1
    q, r = np.meshgrid(np.arange(-rings, rings + 1), np.arange(-rings, rings + 1))
    q, r = q.ravel(), r.ravel()
    keep = np.maximum.reduce([abs(q), abs(r), abs(q + r)]) <= rings
    q, r = q[keep], r[keep]
    xy = np.stack([isd * (q + r / 2), isd * r * math.sqrt(3) / 2], axis=1)
    distance = np.round(np.hypot(*xy.T) / isd, 6)
    angle = np.round(np.mod(np.arctan2(xy[:, 1], xy[:, 0]), 2 * math.pi), 6)
    order = np.lexsort((angle, distance))
    return xy[order[:n]]


def hex_block(cols: int, rows: int, isd: float) -> np.ndarray:
    """A rectangular block of a hexagonal grid: `rows` rows of `cols` sites `isd` apart, every
    other row shifted by isd / 2, rows isd * sqrt(3) / 2 apart; row by row from the bottom."""
    c, r = np.meshgrid(np.arange(cols), np.arange(rows))
    c, r = c.ravel(), r.ravel()
    return np.stack([isd * (c + (r % 2) / 2), isd * r * math.sqrt(3) / 2], axis=1)


def nearest_distances(points: np.ndarray) -> np.ndarray:
    """Each point's distance to its nearest other point (inf for a single point)."""
    out = np.full(len(points), np.inf)
    for start in range(0, len(points), 1024):
        block = points[start : start + 1024]
        d = np.hypot(*(block[:, None, :] - points[None, :, :]).transpose(2, 0, 1))
        d[np.arange(len(block)), np.arange(start, start + len(block))] = np.inf
        out[start : start + len(block)] = d.min(axis=1)
    return out


def place(
    points: np.ndarray, size: tuple[float, float] | None, margin: float
) -> tuple[float, float, np.ndarray]:
    """Centre `points` (m) on the map: (width, height, positions on the map). Without a size
    the map is their bounding box plus `margin` on each side, in whole metres."""
    low, high = points.min(axis=0), points.max(axis=0)
    if size is None:
        width, height = (float(math.ceil(v)) for v in high - low + 2 * margin)
        width, height = max(width, 1.0), max(height, 1.0)
    else:
        width, height = size
    placed = np.round(points - (low + high) / 2 + [width / 2, height / 2], 1)
    if size is not None and ((placed < 0).any() or (placed > [width, height]).any()):
        need = np.ceil(high - low)
        raise UserError(
            f"the stations span {need[0]:g} x {need[1]:g} m, more than --size "
            f"{width:g}x{height:g}. Enlarge --size, or drop it for the stations' extent "
            "plus a margin."
        )
    return width, height, placed


def random_sites(generator: str, number: float, size: tuple[float, float], seed: int) -> np.ndarray:
    """Stations scattered uniformly over the map: a Poisson count of `number` per km², or
    exactly `number` (`uniform`), drawn from `seed`."""
    rng = np.random.default_rng(seed)
    width, height = size
    count = (
        int(rng.poisson(number * width * height / 1e6)) if generator == "poisson" else int(number)
    )
    if count == 0:
        raise UserError(
            f"--sites poisson:{number:g} drew no station on {width:g} x {height:g} m "
            f"(seed {seed}). Raise the density or --size, or use another --seed."
        )
    return np.round(rng.uniform(0, 1, size=(count, 2)) * [width, height], 1)
