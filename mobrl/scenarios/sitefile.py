"""Station positions from a CSV file: `x,y` in metres, or latitude and longitude in degrees
(the column names public cell databases such as OpenCelliD use) projected to metres.

The projection is a local equirectangular one around the centre of the stations' extent on
the WGS84 ellipsoid: y = M·Δφ, x = N·cos φ0·Δλ with the ellipsoid's meridional (M) and
prime-vertical (N) radii at the centre latitude φ0. North-south distances are right to
better than 0.01 % over tens of kilometres; east-west distances are off by about
tan φ0 · Δφ (Δφ in radians) at a point Δφ north or south of the centre: 0.2 % (2 m per km)
10 km from the centre at 50° latitude, less nearer the centre or the equator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mobrl.core.errors import UserError

#: accepted column names (compared lower-case, spaces and underscores ignored)
X_NAMES = ("x", "xm", "easting")
Y_NAMES = ("y", "ym", "northing")
LAT_NAMES = ("lat", "latitude")
LON_NAMES = ("lon", "lng", "long", "longitude")
#: per-station parameters a CSV may give (mobrl's layout keys)
STATION_COLUMNS = ("bandwidth", "frequency", "tx_power", "height")
#: WGS84: semi-major axis (m) and first eccentricity squared
_A, _E2 = 6_378_137.0, 6.694_379_990_14e-3


@dataclass
class Sites:
    """Station positions in metres (any origin), optional per-station parameters, notes."""

    xy: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _wrap(degrees: np.ndarray | float) -> np.ndarray | float:
    return (degrees + 180) % 360 - 180


def centre(lat: np.ndarray, lon: np.ndarray) -> tuple[float, float]:
    """The centre of the stations' extent in degrees (an extent across the antimeridian too)."""
    east = _wrap(lon - lon[0])
    return (lat.min() + lat.max()) / 2, float(_wrap(lon[0] + (east.min() + east.max()) / 2))


def project(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Degrees to metres east and north of the centre of their extent (see the module)."""
    lat0, lon0 = centre(lat, lon)
    phi0 = math.radians(lat0)
    w = 1 - _E2 * math.sin(phi0) ** 2
    meridional, prime = _A * (1 - _E2) / w**1.5, _A / math.sqrt(w)
    east = prime * math.cos(phi0) * np.radians(_wrap(lon - lon0))
    north = meridional * np.radians(lat - lat0)
    return np.stack([east, north], axis=1)


def _key(name: str) -> str:
    return str(name).strip().lower().replace(" ", "").replace("_", "").replace("(m)", "")


def _find(columns: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((columns[n] for n in names if n in columns), None)


def _numbers(frame, column: str, path: Path) -> np.ndarray:
    import pandas as pd

    text = frame[column].astype("string").str.strip()
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        given = text.iloc[row]
        what = "is empty" if given is pd.NA or given == "" else f"holds '{given}', not a number"
        raise UserError(
            f"stations file '{path}': column {column}, line {row + 2} {what}. "
            "Fix the value or delete the line."
        )
    return values.to_numpy(dtype=float)


def read_sites(path: Path) -> Sites:
    """The stations of a CSV file (header line, one row per station), or a one-line error
    naming the file, the column or line, and the fix."""
    frame = _read_csv(path)
    columns = {_key(c): c for c in frame.columns}
    xy, note = _positions(frame, columns, path)
    extra = _station_columns(frame, columns, path)
    return _merge_masts(xy, extra, [note])


def _read_csv(path: Path):
    """The file's table, every cell as text, with at least one station."""
    import pandas as pd

    if not path.is_file():
        raise UserError(f"stations file '{path}' does not exist. Check the path.")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise UserError(
            f"stations file '{path}' is empty. Give a header line (x,y or lat,lon) and a line "
            "per station."
        ) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(
            f"stations file '{path}' is not a readable CSV file ({reason}). Save it as "
            "comma-separated text with a header line."
        ) from None
    return frame


def _positions(frame, columns: dict[str, str], path: Path) -> tuple[np.ndarray, str]:
    """Station positions in metres from the x,y columns, or else lat,lon projected; and a
    note saying which columns were read."""
    x, y = _find(columns, X_NAMES), _find(columns, Y_NAMES)
    lat, lon = _find(columns, LAT_NAMES), _find(columns, LON_NAMES)
    if not ((x and y) or (lat and lon)):
        found = ", ".join(map(str, frame.columns)) or "none"
        hint = " (the file must be comma-separated)" if any(";" in c for c in columns) else ""
        raise UserError(
            f"stations file '{path}' has no x,y or lat,lon columns (found: {found}){hint}. "
            "Name the columns x,y (metres) or lat,lon (degrees; latitude/longitude/lng also "
            "work)."
        )
    if frame.empty:
        raise UserError(
            f"stations file '{path}' has a header but no stations. Add a line per station."
        )
    if x and y:
        xy = np.stack([_numbers(frame, x, path), _numbers(frame, y, path)], axis=1)
        return xy, f"stations from {path.name}: columns {x}, {y} in metres, shifted onto the map"
    lats, lons = _numbers(frame, lat, path), _numbers(frame, lon, path)
    _check_degrees(lat, lats, 90, path)
    _check_degrees(lon, lons, 180, path)
    lat0, lon0 = centre(lats, lons)
    note = (
        f"stations from {path.name}: columns {lat}, {lon} (degrees) projected to metres "
        f"around {lat0:.6f}, {lon0:.6f}"
    )
    return project(lats, lons), note


def _check_degrees(column: str, values: np.ndarray, limit: int, path: Path) -> None:
    """Refuse a latitude (`limit` 90) or longitude (180) beyond the globe's."""
    outside = np.flatnonzero(np.abs(values) > limit)
    if outside.size:
        raise UserError(
            f"stations file '{path}': column {column}, line {outside[0] + 2} holds "
            f"{values[outside[0]]:g}, beyond ±{limit}°. Give degrees (WGS84)."
        )


def _station_columns(frame, columns: dict[str, str], path: Path) -> dict[str, np.ndarray]:
    """The per-station parameters the file gives (`STATION_COLUMNS`), each > 0 but tx_power."""
    extra = {}
    for key in STATION_COLUMNS:
        if _key(key) in columns:
            values = _numbers(frame, columns[_key(key)], path)
            if key != "tx_power" and (values <= 0).any():
                row = int(np.flatnonzero(values <= 0)[0])
                raise UserError(
                    f"stations file '{path}': column {columns[_key(key)]}, line {row + 2} holds "
                    f"{values[row]:g}; {key} must be > 0. Fix the value."
                )
            extra[key] = values
    return extra


def _merge_masts(xy: np.ndarray, extra: dict[str, np.ndarray], notes: list[str]) -> Sites:
    """One station per position: several cells of one mast (sectors, radio technologies)
    share its position, and the first line of each position stands for it."""
    _, first = np.unique(np.round(xy, 1), axis=0, return_index=True)
    first = np.sort(first)
    if len(first) < len(xy):
        merged = len(xy) - len(first)
        notes.append(f"{merged} line{'s' * (merged > 1)} at an earlier line's position merged")
    return Sites(xy[first], {k: v[first] for k, v in extra.items()}, notes)
