"""`mobrl scenarios generate | import`: city-scale layout files from a site generator or a CSV.

Sites come from a hexagonal grid (`hex:N`, the N sites nearest the grid's centre: a round
cluster; `hex:COLSxROWS`, a rectangular block that fills its map), random
placement (`poisson:DENSITY` stations per km², `uniform:N` exactly N) or a CSV of station
positions (`mobrl.scenarios.sitefile`). They are centred on the map, which is their bounding
box plus a margin unless `--size` fixes it (the generators and the centring:
`mobrl.scenarios.sites`). Stations take mobile-env's parameters
(`DEFAULTS['station_defaults']`) unless overridden; UEs mobile-env's, moving over the whole map.
The file written records the command that made it in its header, so running that command
again reproduces it.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from mobrl import scenarios
from mobrl.core.errors import UserError
from mobrl.scenarios.sites import hex_block, hex_sites, nearest_distances, place, random_sites

#: the inter-site distance of hex sites unless --isd is given (m): mobile-env's large layout
#: has 13 stations on 300 x 300 m (144 per km²; a hexagonal grid 90 m apart has 143). With
#: mobile-env's default station and UE parameters a station reaches about 69 m, so every
#: point is covered (the farthest point of a hexagonal cell is ISD / sqrt(3) = 52 m away)
#: and neighbouring cells overlap
DEFAULT_ISD = 90.0
#: the margin around sites whose spacing is unknown (a single imported station), in metres
DEFAULT_MARGIN = 50.0
_PER_KM2 = ("/km2", "/km²", "/km^2")


@dataclass
class Options:
    """What `generate` and `import` share: UEs, map, seed, station parameters, output."""

    ues: str
    out: Path
    size: str | None = None
    margin: float | None = None
    seed: int = 0
    force: bool = False
    station: dict[str, float] = field(default_factory=dict)  # overrides of station_defaults
    radio: dict[str, Any] = field(default_factory=dict)  # the radio section's keys
    movement: dict[str, Any] = field(default_factory=dict)  # the movement section's keys
    power: dict[str, Any] = field(default_factory=dict)  # the power section's keys
    traffic: dict[str, Any] = field(default_factory=dict)  # the traffic section's keys
    step_seconds: float | None = None

    def flags(self) -> list[str]:
        """These options as command-line flags, in a fixed order."""
        out = ["--ues", self.ues]
        if self.size is not None:
            out += ["--size", self.size]
        if self.margin is not None:
            out += ["--margin", f"{self.margin:g}"]
        out += ["--seed", str(self.seed)]
        for key, flag in STATION_FLAGS.items():
            if key in self.station:
                out += [flag, f"{self.station[key]:g}"]
        sections = (
            ("--radio", self.radio),
            ("--movement", self.movement),
            ("--power", self.power),
            ("--traffic", self.traffic),
        )
        for flag, pairs in sections:
            for key, value in pairs.items():
                out += [flag, f"{key}={_flag_value(value)}"]
        if self.step_seconds is not None:
            out += ["--step-seconds", f"{self.step_seconds:g}"]
        return out


def _flag_value(value: Any) -> str:
    """A section's value as `parse_pairs` reads it back (YAML: a mapping in flow style)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
    return f"{value}"


#: an example of each section's flag, for messages
_EXAMPLES = {"--radio": "channel=uma", "--power": "model=tr38864", "--traffic": "profile=diurnal"}


def parse_pairs(items: list[str], flag: str) -> dict[str, Any]:
    """`KEY=VALUE` options as a dict, each value read as YAML reads it (numbers, true/false);
    the layout's validation checks the keys and values."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(
                f"{flag} '{item}' is not KEY=VALUE. Write e.g. "
                f"{flag} {_EXAMPLES.get(flag, 'model=gauss_markov')}."
            )
        out[key.strip()] = yaml.safe_load(value) if value.strip() else None
    return out


#: station_defaults keys settable from the command line, and their flags
STATION_FLAGS = {
    "bandwidth": "--bandwidth",
    "frequency": "--frequency",
    "tx_power": "--tx-power",
    "height": "--station-height",
}


def _number(text: str, what: str, example: str) -> float:
    """`text` as a positive number; else an error naming `what` (the option and its value)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{what}: '{text}' is not a positive number. Write e.g. {example}.")
    return value


def _count(text: str, what: str, example: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"{what}: '{text}' is not a whole number >= 1. Write e.g. {example}.")
    return int(text)


def parse_size(size: str | None) -> tuple[float, float] | None:
    """`--size WxH` in metres, or None."""
    if size is None:
        return None
    parts = size.lower().replace("×", "x").split("x")
    if len(parts) != 2:
        raise UserError(
            f"--size '{size}' is not WIDTHxHEIGHT in metres. Write e.g. --size 1000x800."
        )
    w, h = (_number(p, f"--size '{size}'", "--size 1000x800") for p in parts)
    return w, h


def parse_sites(spec: str) -> tuple[str, Any]:
    """`--sites hex:N | hex:COLSxROWS | poisson:DENSITY[/km2] | uniform:N` as (generator,
    number); hex's number is N or (cols, rows)."""
    generator, _, value = spec.partition(":")
    fix = "Write --sites hex:N, hex:COLSxROWS, poisson:DENSITY (stations per km²) or uniform:N."
    if generator == "hex" and "x" in value:
        cols, _, rows = value.partition("x")
        what = f"--sites '{spec}'"
        return generator, tuple(_count(v, what, "--sites hex:10x10") for v in (cols, rows))
    if generator == "hex":
        return generator, _count(value, f"--sites '{spec}'", "--sites hex:100 or hex:10x10")
    if generator == "uniform":
        return generator, _count(value, f"--sites '{spec}'", "--sites uniform:100")
    if generator == "poisson":
        for unit in _PER_KM2:
            value = value.removesuffix(unit)
        return generator, _number(value, f"--sites '{spec}'", "--sites poisson:120 (per km²)")
    raise UserError(f"--sites '{spec}' is not a known site generator. {fix}")


def ue_count(spec: str, width: float, height: float) -> int:
    """`--ues N` (a count) or `--ues D/km2` (a density over the map), as a count >= 1."""
    for unit in _PER_KM2:
        if spec.endswith(unit):
            density = _number(spec.removesuffix(unit), f"--ues '{spec}'", "--ues 800/km2")
            return max(1, round(density * width * height / 1e6))
    return _count(spec, "--ues", "--ues 1000 (a count) or --ues 800/km2 (a density)")


def layout(
    positions: np.ndarray,
    width: float,
    height: float,
    options: Options,
    description: str,
    extra: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """A layout file's data: the stations at `positions`, mobile-env's other parameters."""
    ues = scenarios.DEFAULTS["ues"]
    stations = []
    for i, (x, y) in enumerate(positions.tolist()):
        station = {"x": x, "y": y}
        for key, column in (extra or {}).items():
            station[key] = float(column[i])
        stations.append(station)
    return {
        "description": description,
        "width": width,
        "height": height,
        "episode_length": scenarios.DEFAULTS["episode_length"],
        "seed": options.seed,
        "station_defaults": {**scenarios.DEFAULTS["station_defaults"], **options.station},
        "stations": stations,
        "ues": {**_ue_keys(ues, options.radio), "count": ue_count(options.ues, width, height)},
        **({"radio": dict(options.radio)} if options.radio else {}),
        "movement": {"model": "random_waypoint", **options.movement},
        "arrival": {"model": "always"},
        **({"power": dict(options.power)} if options.power else {}),
        **({"step_seconds": options.step_seconds} if options.step_seconds is not None else {}),
        **({"traffic": dict(options.traffic)} if options.traffic else {}),
    }


def _ue_keys(ues: dict[str, Any], radio: dict[str, Any]) -> dict[str, Any]:
    """The UE keys a layout file writes: under a thermal-noise channel noise and threshold come
    from the radio section, so mobile-env's `noise` and `snr_threshold` are left out."""
    if radio.get("channel", "okumura_hata") == "okumura_hata":
        return dict(ues)
    return {k: v for k, v in ues.items() if k not in ("noise", "snr_threshold")}


def coverage(data: dict[str, Any], samples: int = 200) -> float:
    """The share of the map within range of at least one station (SNR above the UEs'
    threshold; under a 3GPP channel its best case, the SNR with line of sight and no
    shadowing or interference), on a grid of `samples` x `samples` points."""
    from mobrl.network.channel import loss_terms, snr
    from mobrl.scenarios.layout_checks import best_snr

    ue = data["ues"]
    xs = (np.arange(samples) + 0.5) * data["width"] / samples
    ys = (np.arange(samples) + 0.5) * data["height"] / samples
    gx, gy = (g.ravel() for g in np.meshgrid(xs, ys))
    covered = np.zeros(gx.shape, dtype=bool)
    radio = data.get("radio") or {}
    for s in data["stations"]:
        if radio.get("channel", "okumura_hata") == "okumura_hata":
            t1, t2 = loss_terms(s["frequency"], s["height"], ue["height"])
            best = snr(t1, t2, s["tx_power"], ue["noise"], s["x"] - gx, s["y"] - gy)
            threshold = ue["snr_threshold"]
        else:  # line of sight, no shadowing, no interference: the best case
            params = {k: np.array([s[k]], dtype=float) for k in s}
            best, threshold = best_snr(
                radio, params, ue["height"], np.hypot(s["x"] - gx, s["y"] - gy)
            )
        covered |= best > threshold
    return float(covered.mean())


def write(data: dict[str, Any], options: Options, command: list[str], notes: list[str]) -> str:
    """Validate the layout, write it to `options.out` with its making in the header; return
    one line on what was written."""
    from mobrl.core.files import atomic_write_text, check_writable

    out = Path(options.out).expanduser()
    if out.suffix not in (".yaml", ".yml"):
        raise UserError(f"--out '{out}' is not a .yaml file. End the name with .yaml.")
    if out.exists() and not options.force:
        raise UserError(f"--out '{out}' already exists. Add --force to replace it.")
    check_writable(out.parent, "--out", example="./scenarios/mine.yaml")
    resolved = scenarios.validate(yaml.safe_load(yaml.safe_dump(data)), out)
    covered = coverage(resolved)
    header = [
        f"# {data['description']}",
        f"# {len(data['stations'])} stations, {data['ues']['count']} UEs on a "
        f"{data['width']:g} x {data['height']:g} m map; {covered:.1%} of it within a station's "
        "range (units: m, Hz, MHz, dBm, m per step)",
        *(f"# {note}" for note in notes),
        "# made by (run it again to reproduce this file):",
        f"#   {shlex.join(['mobrl', 'scenarios', *command])}",
    ]
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, "\n".join(header) + "\n" + body)
    return (
        f"{out}: {len(data['stations'])} stations, {data['ues']['count']} UEs, "
        f"{data['width']:g} x {data['height']:g} m map, {covered:.1%} covered"
    )


def generate_command(sites: str, isd: float | None, options: Options) -> str:
    """`mobrl scenarios generate`: a layout from a site generator, written to `--out`."""
    generator, number = parse_sites(sites)
    size = parse_size(options.size)
    command = ["generate", "--sites", sites]
    if generator == "hex":
        spacing = DEFAULT_ISD if isd is None else isd
        command += ["--isd", f"{spacing:g}"]
        margin = spacing / 2 if options.margin is None else options.margin
        if isinstance(number, tuple):
            points = hex_block(*number, spacing)
            shape = f"{number[0]} x {number[1]} block"
        else:
            points, shape = hex_sites(number, spacing), "round cluster"
        width, height, positions = place(points, size, margin)
        what = f"hexagonal grid of {len(points)} sites ({shape}), inter-site distance {spacing:g} m"
    else:
        if isd is not None or options.margin is not None:
            flag = "--isd" if isd is not None else "--margin"
            raise UserError(
                f"{flag} applies to hex sites; random stations fill the whole map. Drop {flag}."
            )
        if size is None:
            raise UserError(
                f"--sites {sites} needs --size WxH: the area to scatter stations over. "
                "Add e.g. --size 1000x1000."
            )
        width, height = size
        positions = random_sites(generator, number, size, options.seed)
        rule = f"{number:g} per km² (Poisson)" if generator == "poisson" else "uniform"
        what = f"{len(positions)} stations placed at random, {rule}, seed {options.seed}"
    command += [*options.flags(), "--out", str(options.out)]
    ues = ue_count(options.ues, width, height)
    data = layout(positions, width, height, options, f"{what}, {ues} UEs")
    return write(data, options, command, [])


def import_command(csv: Path, options: Options) -> str:
    """`mobrl scenarios import`: a layout with the stations of a CSV, written to `--out`."""
    from mobrl.scenarios.sitefile import read_sites

    sites = read_sites(Path(csv).expanduser())
    if options.margin is not None:
        margin = options.margin
    elif len(sites.xy) > 1:
        margin = float(np.median(nearest_distances(sites.xy))) / 2
    else:
        margin = DEFAULT_MARGIN
    width, height, positions = place(sites.xy, parse_size(options.size), margin)
    ues = ue_count(options.ues, width, height)
    data = layout(
        positions, width, height, options, f"{len(positions)} stations of {Path(csv).name}, "
        f"{ues} UEs", sites.columns,
    )  # fmt: skip
    command = ["import", str(csv), *options.flags(), "--out", str(options.out)]
    return write(data, options, command, sites.notes)
