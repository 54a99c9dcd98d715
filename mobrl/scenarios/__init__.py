"""Scenario definitions as data: mobile-env layouts in YAML, validated on load, found by name.

A layout file gives the map, the base stations, the UEs and how they move and arrive (see
`scenarios/small.yaml` at the top of the repository). Built-in layouts ship as the package
`mobrl.layouts`; a user's own live in `./scenarios/*.yaml` of the working directory (found by
name, shadowing a built-in of the same name) or anywhere (`scenario.path=my.yaml`). A
`./scenarios/` that is mobrl's own folder of built-ins (it holds `__init__.py`: mobrl's source
tree) is not a user's folder. Loading never imports mobile-env; `build_config` turns a validated
layout into the stations, UEs and config of a mobile-env core.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from mobrl.core.errors import UserError, closest_first, unknown_choice

#: the folder of a user's own scenario files, relative to the working directory
USER_DIR = Path("scenarios")
MOVEMENT_MODELS = ("random_waypoint",)
ARRIVAL_MODELS = ("always", "random")

#: every key a layout file may hold, with its default (mobile-env's defaults); None: required
DEFAULTS: dict[str, Any] = {
    "description": "",
    "width": None,
    "height": None,
    "episode_length": 100,
    "seed": 0,
    "station_defaults": {"bandwidth": 9e6, "frequency": 2500, "tx_power": 30, "height": 50},
    "stations": None,
    "ues": {
        "count": None,
        "snr_threshold": 2e-8,
        "noise": 1e-9,
        "height": 1.5,
        "velocity": 1.5,
    },
    "movement": {"model": "random_waypoint", "width": None, "height": None},
    "arrival": {"model": "always", "window": 0, "min_stay": None, "max_stay": None},
}
_STATION_KEYS = ("x", "y", "bandwidth", "frequency", "tx_power", "height")


def builtin_dir() -> Path:
    return Path(str(resources.files("mobrl.layouts")))


def user_dir() -> Path | None:
    """`./scenarios/` when it is a user's folder of layouts (not mobrl's built-ins)."""
    if not USER_DIR.is_dir() or (USER_DIR / "__init__.py").is_file():
        return None
    return USER_DIR


def discover() -> dict[str, Path]:
    """Every layout file by name: built-ins, then `./scenarios/*.yaml` (which win)."""
    found = {p.stem: p for p in sorted(builtin_dir().glob("*.yaml"))}
    folder = user_dir()
    if folder is not None:
        found.update({p.stem: p.absolute() for p in sorted(folder.glob("*.yaml"))})
    return found


def path_of(name: str) -> Path:
    """The layout file of scenario `name`, or a one-line error with the closest names."""
    found = discover()
    if name not in found:
        raise unknown_choice(
            "scenario", name, found, "See `mobrl scenarios list`, or give a path to a .yaml file."
        )
    return found[name]


class _Checker:
    """Builds one-line errors that name the file, the key and the fix."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str, fix: str) -> UserError:
        return UserError(f"scenario file '{self.path}': {key} {problem}. {fix}")

    def keys(self, given: dict, allowed: Any, where: str) -> None:
        for key in given:
            if key not in allowed:
                close = closest_first(str(key), allowed)
                raise self.fail(
                    f"{where}{key}",
                    f"is not a known key (did you mean '{close[0]}'?)",
                    f"Use one of: {', '.join(allowed)}.",
                )

    def number(
        self, data: dict, key: str, where: str, low: float | None = None, strict=True
    ) -> float:
        value = data.get(key)
        if isinstance(value, str):  # YAML 1.1 reads 2.0e7 (no sign in the exponent) as text
            try:
                value = data[key] = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{where}{key}", f"must be a number, got {value!r}", "Fix the value.")
        if low is not None and (value <= low if strict else value < low):
            bound = f"> {low}" if strict else f">= {low}"
            raise self.fail(f"{where}{key}", f"must be {bound}, got {value!r}", "Fix the value.")
        return value

    def integer(self, data: dict, key: str, where: str, low: int) -> int:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(
                f"{where}{key}", f"must be a whole number >= {low}, got {value!r}", "Fix the value."
            )
        return value


def _merged(defaults: dict, given: dict) -> dict:
    out = copy.deepcopy(defaults)
    for key, value in given.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


#: validated layouts of this process by (file, mtime, size): one read and check per file
_LOADED: dict[tuple[str, int, int], dict[str, Any]] = {}


def load(path: Path | str) -> dict[str, Any]:
    """Read and validate a layout file; return it with every default filled in. A file is
    read and checked once per process while it stays unchanged (a copy each time: callers
    may change what they get)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(
            f"scenario file '{path}' does not exist. Check scenario.path, or put the file in "
            f"./{USER_DIR}/ and use scenario=<name>."
        )
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _LOADED:
        _LOADED[key] = _read(path)
    return copy.deepcopy(_LOADED[key])


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise UserError(
            f"scenario file '{path}' is not valid YAML{line}: {getattr(err, 'problem', err)}. "
            "Fix the syntax."
        ) from err
    if not isinstance(raw, dict):
        raise UserError(f"scenario file '{path}' must hold a mapping of keys. See small.yaml.")
    return validate(raw, path)


def validate(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """Check every key and value of a layout; return it with defaults filled in."""
    check = _Checker(path)
    check.keys(raw, list(DEFAULTS), "")
    for section in ("station_defaults", "ues", "movement", "arrival"):
        if section in raw:
            if not isinstance(raw[section], dict):
                raise check.fail(section, "must be a mapping", f"See the {section} of small.yaml.")
            check.keys(raw[section], list(DEFAULTS[section]), f"{section}.")
    data = _merged(DEFAULTS, raw)
    for key in ("width", "height", "stations"):
        if data[key] is None:
            raise check.fail(key, "is missing", f"Add {key}: (see small.yaml).")
    if data["ues"]["count"] is None:
        raise check.fail("ues.count", "is missing", "Add ues: {count: N}.")
    width = check.number(data, "width", "", 0)
    height = check.number(data, "height", "", 0)
    check.integer(data, "episode_length", "", 1)
    check.integer(data, "seed", "", 0)

    defaults = data["station_defaults"]
    stations = data["stations"]
    if not isinstance(stations, list) or not stations:
        raise check.fail("stations", "must be a non-empty list", "Add - {x: ..., y: ...} items.")
    resolved = []
    for i, station in enumerate(stations):
        where = f"stations[{i}]."
        if not isinstance(station, dict):
            raise check.fail(f"stations[{i}]", "must be a mapping", "Write - {x: 10, y: 20}.")
        check.keys(station, list(_STATION_KEYS), where)
        full = {**defaults, **station}
        for key in ("x", "y"):
            if key not in full:
                raise check.fail(f"{where}{key}", "is missing", "Give every station x and y.")
        x, y = check.number(full, "x", where), check.number(full, "y", where)
        if not (0 <= x <= width and 0 <= y <= height):
            raise check.fail(
                f"stations[{i}]",
                f"at ({x:g}, {y:g}) lies outside the {width:g} x {height:g} map",
                f"Move it inside 0 <= x <= {width:g}, 0 <= y <= {height:g}, or enlarge the map.",
            )
        check.number(full, "bandwidth", where, 0)
        check.number(full, "frequency", where, 0)
        check.number(full, "height", where, 0)
        check.number(full, "tx_power", where)
        resolved.append({k: full[k] for k in _STATION_KEYS})
    data["stations"] = resolved
    for key in ("bandwidth", "frequency", "height"):
        check.number(defaults, key, "station_defaults.", 0)
    check.number(defaults, "tx_power", "station_defaults.")

    ues = data["ues"]
    if isinstance(ues["count"], int) and not isinstance(ues["count"], bool) and ues["count"] < 1:
        raise check.fail(
            "ues.count", f"is {ues['count']}: a scenario needs UEs", "Set ues.count >= 1."
        )
    check.integer(ues, "count", "ues.", 1)
    for key in ("snr_threshold", "noise", "height"):
        check.number(ues, key, "ues.", 0)
    check.number(ues, "velocity", "ues.", 0, strict=False)

    movement = data["movement"]
    if movement["model"] not in MOVEMENT_MODELS:
        raise check.fail(
            "movement.model",
            f"'{movement['model']}' is unknown",
            f"Use {', '.join(MOVEMENT_MODELS)}.",
        )
    movement["width"] = width if movement["width"] is None else movement["width"]
    movement["height"] = height if movement["height"] is None else movement["height"]
    check.number(movement, "width", "movement.", 0)
    check.number(movement, "height", "movement.", 0)

    _check_reachable(check, data)
    _check_fits(check, data)

    arrival = data["arrival"]
    if arrival["model"] not in ARRIVAL_MODELS:
        close = closest_first(str(arrival["model"]), ARRIVAL_MODELS)
        raise check.fail(
            "arrival.model",
            f"'{arrival['model']}' is unknown (did you mean '{close[0]}'?)",
            f"Use {' or '.join(ARRIVAL_MODELS)}.",
        )
    if arrival["model"] == "random":
        episode = data["episode_length"]
        check.integer(arrival, "window", "arrival.", 0)
        arrival["min_stay"] = 1 if arrival["min_stay"] is None else arrival["min_stay"]
        arrival["max_stay"] = episode if arrival["max_stay"] is None else arrival["max_stay"]
        check.integer(arrival, "min_stay", "arrival.", 1)
        check.integer(arrival, "max_stay", "arrival.", arrival["min_stay"])
        if arrival["window"] >= episode:
            raise check.fail(
                "arrival.window",
                f"is {arrival['window']}, not shorter than the episode ({episode} steps)",
                "Let UEs arrive before the episode ends.",
            )
    return data


def _check_reachable(check: _Checker, data: dict[str, Any]) -> None:
    """Refuse a layout in which no UE can ever be served: every point UEs move through
    (the movement area from (0, 0)) lies beyond every station's coverage (where a UE's SNR
    stays below its threshold, in mobile-env's channel). Such a layout trains nothing."""
    import numpy as np

    from mobrl.envs.channel import loss_terms, snr

    ues, movement = data["ues"], data["movement"]
    st = {k: np.array([s[k] for s in data["stations"]], dtype=float) for k in _STATION_KEYS}
    # the nearest point of the movement area to each station (1 m nearer still: mobile-env
    # measures distance between integer-truncated positions)
    dx = np.maximum(np.abs(st["x"] - np.clip(st["x"], 0, movement["width"])) - 1, 0)
    dy = np.maximum(np.abs(st["y"] - np.clip(st["y"], 0, movement["height"])) - 1, 0)
    t1, t2 = loss_terms(st["frequency"], st["height"], ues["height"])
    best = snr(t1, t2, st["tx_power"], ues["noise"], dx, dy)
    if not (best > ues["snr_threshold"]).any():
        area = f"{movement['width']:g} x {movement['height']:g} m"
        raise check.fail(
            "movement",
            f"keeps UEs in a {area} area that no station covers (no UE could ever connect)",
            "Enlarge movement.width/height, move stations near the UEs, or raise tx_power.",
        )


def _check_fits(check: _Checker, data: dict[str, Any]) -> None:
    """A layout whose one env copy would take more than half the machine's memory is refused
    before anything starts, naming the UE count that fits with its stations."""
    from mobrl.scenarios import memory

    stations, ues = len(data["stations"]), int(data["ues"]["count"])
    machine = memory.machine_bytes()
    need = memory.memory_bytes(stations, ues)
    if need <= memory.FIT_SHARE * machine:
        return
    fits = memory.fitting_ues(stations, machine)
    raise check.fail(
        "ues.count",
        f"is {ues:,} with {stations:,} stations: one env copy would need about "
        f"{need / 2**30:.1f} GiB, more than half of this machine's {machine / 2**30:.1f} GiB",
        f"Use at most {fits:,} UEs with {stations:,} stations, or fewer stations.",
    )


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """What `mobrl scenarios list` shows: sizes, the spaces each env mode exposes, memory."""
    from mobrl.scenarios import memory

    n_bs, n_ue = len(data["stations"]), data["ues"]["count"]
    return {
        "stations": n_bs,
        "ues": n_ue,
        "map": f"{data['width']:g} x {data['height']:g}",
        "ma_obs": f"{4 * n_bs + 1} per UE",
        "ma_act": f"Discrete({n_bs + 1}) x {n_ue}",
        "central_obs": str(n_ue * (2 * n_bs + 1)),
        "central_act": f"MultiDiscrete({n_ue} x {n_bs + 1})",
        "memory": f"{memory.memory_bytes(n_bs, n_ue) / 2**20:,.0f} MB",
    }


def build_config(data: dict[str, Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """mobile-env's stations, UEs and config (without handler) for a validated layout."""
    from mobile_env.core.arrival import NoDeparture
    from mobile_env.core.entities import BaseStation, UserEquipment

    from mobrl.scenarios.arrival import RandomArrival

    stations = [
        BaseStation(
            i,
            (s["x"], s["y"]),
            bw=s["bandwidth"],
            freq=s["frequency"],
            tx=s["tx_power"],
            height=s["height"],
        )
        for i, s in enumerate(data["stations"])
    ]
    ue = data["ues"]
    ue_params = {
        "velocity": ue["velocity"],
        "snr_tr": ue["snr_threshold"],
        "noise": ue["noise"],
        "height": ue["height"],
    }
    users = [UserEquipment(i, **ue_params) for i in range(ue["count"])]
    episode = data["episode_length"]
    arrival = data["arrival"]
    arrival_params: dict[str, Any] = {"ep_time": episode, "reset_rng_episode": False}
    if arrival["model"] == "random":
        arrival_params.update(
            window=arrival["window"], min_stay=arrival["min_stay"], max_stay=arrival["max_stay"]
        )
    movement = data["movement"]
    config = {
        "width": data["width"],
        "height": data["height"],
        "EP_MAX_TIME": episode,
        "seed": data["seed"],
        "arrival": RandomArrival if arrival["model"] == "random" else NoDeparture,
        "arrival_params": arrival_params,
        "movement_params": {
            "width": movement["width"],
            "height": movement["height"],
            "reset_rng_episode": False,
        },
        "bs": {
            "bw": data["station_defaults"]["bandwidth"],
            "freq": data["station_defaults"]["frequency"],
            "tx": data["station_defaults"]["tx_power"],
            "height": data["station_defaults"]["height"],
        },
        "ue": ue_params,
    }
    return stations, users, config
