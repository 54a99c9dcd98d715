"""A layout's validation: the walk by its schema (`mobrl.scenarios.schema`) in order, and the
checks of what relates several keys: a station on the map, the radio's channel and shadowing,
a mobility model's own keys, UEs that some station covers, a layout that fits the machine's
memory, arrivals within the episode. Every problem is a one-line error naming the file, the
key and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.scenarios import classes, energy_sections
from mobrl.scenarios.schema import (
    DEFAULTS,
    OPTIONAL,
    STATION_KEYS,
    Arrival,
    Checker,
    Layout,
    Movement,
    Radio,
    Station,
    StationDefaults,
    Ues,
    check_keys,
    check_required,
    check_values,
    merged,
)

#: the sections whose values are checked after the stations, in this order
_SECTIONS = (
    ("station_defaults", StationDefaults),
    ("ues", Ues),
    ("radio", Radio),
    ("movement", Movement),
)


def validate(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """Check every key and value of a layout; return it with defaults filled in. Each value is
    checked once, in the order below: a station before the defaults it took (so the error names
    the station), and what UEs can reach and the memory before arrival."""
    check = Checker(path)
    check_keys(check, raw)
    data = merged(DEFAULTS, raw)
    check_required(check, data, Layout, "")
    check_values(check, data, Layout, "", data)
    _check_stations(check, data)
    for name, schema in _SECTIONS:
        check_values(check, data[name], schema, f"{name}.", data)
    _check_radio(check, data)
    _check_movement(check, data)
    if OPTIONAL in data:
        classes.check(check, data)
    _check_reachable(check, data)
    _check_fits(check, data)
    check_values(check, data["arrival"], Arrival, "arrival.", data)
    _check_window(check, data)
    energy_sections.check(data, path)
    return data


def _check_stations(check: Checker, data: dict[str, Any]) -> None:
    """Check every station, each with the station defaults filled in, and keep them so."""
    stations = data["stations"]
    if not isinstance(stations, list) or not stations:
        raise check.fail("stations", "must be a non-empty list", "Add - {x: ..., y: ...} items.")
    data["stations"] = [_station(check, data, i, station) for i, station in enumerate(stations)]


def _station(check: Checker, data: dict[str, Any], i: int, station: Any) -> dict[str, Any]:
    """Station `i` with every key, its own values over the defaults, on the map."""
    where = f"stations[{i}]."
    if not isinstance(station, dict):
        raise check.fail(f"stations[{i}]", "must be a mapping", "Write - {x: 10, y: 20}.")
    check.keys(station, list(STATION_KEYS), where)
    full = {**data["station_defaults"], **station}
    check_required(check, full, Station, where)
    check_values(check, full, Station, where, data)
    x, y, width, height = full["x"], full["y"], data["width"], data["height"]
    if not (0 <= x <= width and 0 <= y <= height):
        raise check.fail(
            f"stations[{i}]",
            f"at ({x:g}, {y:g}) lies outside the {width:g} x {height:g} map",
            f"Move it inside 0 <= x <= {width:g}, 0 <= y <= {height:g}, or enlarge the map.",
        )
    check_values(check, full, StationDefaults, where, data)
    return {k: full[k] for k in STATION_KEYS}


def _check_window(check: Checker, data: dict[str, Any]) -> None:
    """With random arrival, UEs must arrive before the episode ends."""
    arrival, episode = data["arrival"], data["episode_length"]
    if arrival["model"] == "random" and arrival["window"] >= episode:
        raise check.fail(
            "arrival.window",
            f"is {arrival['window']}, not shorter than the episode ({episode} steps)",
            "Let UEs arrive before the episode ends.",
        )


def _check_radio(check: Checker, data: dict[str, Any]) -> None:
    """What relates the radio keys: shadowing needs a channel with a shadowing sigma."""
    from mobrl import radio

    section = data["radio"]
    model = radio.channel(section["channel"])
    if section["shadowing"] and not model.has_shadowing:
        with_sigma = [n for n, c in radio.CHANNELS.items() if c.has_shadowing]
        raise check.fail(
            "radio.shadowing",
            f"is true, but channel {section['channel']} has no shadowing sigma",
            f"Use channel {' or '.join(with_sigma)}, or shadowing: false.",
        )


def _check_movement(check: Checker, data: dict[str, Any]) -> None:
    """A mobility model's own keys and values (mobrl.network.mobility); a trace file's name
    becomes absolute (relative names are read from the layout file's folder)."""
    from mobrl.network.mobility import MODELS, MovementError

    movement = data["movement"]
    model = movement["model"]
    params = {k: v for k, v in movement.items() if k not in DEFAULTS["movement"]}
    if model == "random_waypoint":
        if params:
            key = next(iter(params))
            owners = [n for n, cls in MODELS.items() if key in cls.PARAMS]
            raise check.fail(
                f"movement.{key}",
                f"belongs to model {' or '.join(owners)}, not random_waypoint",
                f"Set movement.model: {owners[0]}, or drop {key}.",
            )
        return
    cls = MODELS[model]
    base = check.path.parent if check.path.suffix else Path.cwd()
    try:
        cls.check(params, movement["width"], movement["height"], data["ues"]["count"], base)
    except MovementError as err:
        raise check.fail(err.key, err.problem, err.fix) from None
    for key, default in cls.PARAMS.items():
        movement.setdefault(key, default)
    if "file" in movement and movement["file"] is not None:
        movement["file"] = str((base / str(movement["file"])).resolve())


def _check_reachable(check: Checker, data: dict[str, Any]) -> None:
    """Refuse a layout in which no UE can ever be served: every point UEs move through
    (the movement area from (0, 0)) lies beyond every station's coverage (where a UE's SNR
    stays below its threshold, in mobile-env's channel). Such a layout trains nothing. A
    layout whose own classes move UEs or compute SNRs is the classes' to judge."""
    if set(classes.named(data.get("classes"))) & {"channel", "movement"}:
        return
    import numpy as np

    from mobrl.network.channel import loss_terms, snr

    ues, movement = data["ues"], data["movement"]
    st = {k: np.array([s[k] for s in data["stations"]], dtype=float) for k in STATION_KEYS}
    # the nearest point of the movement area to each station (1 m nearer still: mobile-env
    # measures distance between integer-truncated positions)
    dx = np.maximum(np.abs(st["x"] - np.clip(st["x"], 0, movement["width"])) - 1, 0)
    dy = np.maximum(np.abs(st["y"] - np.clip(st["y"], 0, movement["height"])) - 1, 0)
    section = data["radio"]
    if section["channel"] == "okumura_hata":
        t1, t2 = loss_terms(st["frequency"], st["height"], ues["height"])
        best = snr(t1, t2, st["tx_power"], ues["noise"], dx, dy)
        threshold = ues["snr_threshold"]
    else:  # the radio model's best case: line of sight, no shadowing, no interference
        best, threshold = best_snr(section, st, ues["height"], np.hypot(dx, dy))
    if not (best > threshold).any():
        area = f"{movement['width']:g} x {movement['height']:g} m"
        raise check.fail(
            "movement",
            f"keeps UEs in a {area} area that no station covers (no UE could ever connect)",
            "Enlarge movement.width/height, move stations near the UEs, or raise tx_power.",
        )


def best_snr(
    section: dict[str, Any], st: dict[str, Any], ue_height: float, d2d: Any
) -> tuple[Any, float]:
    """Each station's SNR at 2D distance `d2d` under a thermal-noise channel, with line of
    sight and no shadowing, and the layout's SINR threshold (both linear)."""
    import numpy as np

    from mobrl import radio
    from mobrl.radio.config import RadioConfig

    cfg = RadioConfig.of(section)
    model = radio.channel(cfg.channel)
    d2d = np.maximum(d2d, model.min_distance_2d_m)
    loss = model.path_loss_db(d2d, st["frequency"] / 1000.0, st["height"], ue_height, True)
    noise = radio.thermal_noise_dbm(st["bandwidth"], cfg.noise_figure_db)
    thr = cfg.sinr_threshold_db
    return 10 ** ((st["tx_power"] - loss - noise) / 10), 10 ** (thr / 10)


def _check_fits(check: Checker, data: dict[str, Any]) -> None:
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
