"""Scenario definitions as data: mobile-env layouts in YAML, validated on load, found by name.

A layout file gives the map, the base stations, the UEs and how they move and arrive (see
`scenarios/small.yaml` at the top of the repository). Built-in layouts ship as the package
`mobrl.layouts`; a user's own live in `./scenarios/*.yaml` of the working directory (found by
name, shadowing a built-in of the same name) or anywhere (`scenario.path=my.yaml`). A
`./scenarios/` that is mobrl's own folder of built-ins (it holds `__init__.py`: mobrl's source
tree) is not a user's folder. Loading never imports mobile-env (but for a layout whose `classes:`
name subclasses of mobile-env's own); `build_config` turns a validated layout into the stations,
UEs and config of a mobile-env core.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from mobrl.core.errors import UserError, unknown_choice
from mobrl.scenarios.layout_checks import validate
from mobrl.scenarios.schema import ARRIVAL_MODELS, DEFAULTS, MOVEMENT_MODELS

#: the folder of a user's own scenario files, relative to the working directory
USER_DIR = Path("scenarios")

__all__ = [
    "ARRIVAL_MODELS",
    "DEFAULTS",
    "MOVEMENT_MODELS",
    "USER_DIR",
    "build_config",
    "builtin_dir",
    "discover",
    "load",
    "path_of",
    "summary",
    "user_dir",
    "validate",
]


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
    data = validate(raw, path)
    if data.get("classes"):  # the layout's own mobile-env classes, each built once
        from mobrl.scenarios.classes import check_built
        from mobrl.scenarios.schema import Checker

        check_built(Checker(path), data, build_config(data)[2])
    return data


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
    """mobile-env's stations, UEs and config (without handler) for a validated layout; its
    `classes:` (mobrl.scenarios.classes) replace mobile-env's classes, their parameters added
    to those mobrl sets (an arrival's episode length, a movement's area)."""
    from mobile_env.core.entities import BaseStation, UserEquipment

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
    config = _core_config(data, ue_params)
    extra = beyond_mobile_env(data)
    if extra:  # read by the fast engine (mobrl.network.radio_engine); mobile-env ignores it
        config["mobrl"] = extra
    if data.get("classes"):  # the layout's own mobile-env classes, over mobrl's parameters
        from mobrl.scenarios.classes import config_entries

        for key, value in config_entries(data["classes"]).items():
            config[key] = {**config.get(key, {}), **value} if key.endswith("_params") else value
    return stations, users, config


def _core_config(data: dict[str, Any], ue_params: dict[str, Any]) -> dict[str, Any]:
    """mobile-env's config of a validated layout: the map, the episode, arrivals, the movement
    area, the station defaults and the UEs' parameters."""
    from mobile_env.core.arrival import NoDeparture

    from mobrl.scenarios.arrival import RandomArrival

    episode = data["episode_length"]
    arrival = data["arrival"]
    arrival_params: dict[str, Any] = {"ep_time": episode, "reset_rng_episode": False}
    if arrival["model"] == "random":
        arrival_params.update(
            window=arrival["window"], min_stay=arrival["min_stay"], max_stay=arrival["max_stay"]
        )
    movement = data["movement"]
    return {
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


def beyond_mobile_env(data: dict[str, Any]) -> dict[str, Any]:
    """The parts of a validated layout mobile-env's own step does not model: a radio section
    other than mobile-env's model, a movement model other than random waypoint, the energy
    sections (power:, traffic:, step_seconds) ({}: none)."""
    from mobrl.radio.config import RadioConfig

    extra: dict[str, Any] = {}
    radio = data.get("radio")
    if radio and not RadioConfig.of(radio).is_stock:
        extra["radio"] = dict(radio)
    if data["movement"].get("model", "random_waypoint") != "random_waypoint":
        extra["movement"] = dict(data["movement"])
    from mobrl.scenarios.energy_sections import energy_config

    extra.update(energy_config(data))  # power:, traffic:, step_seconds
    return extra
