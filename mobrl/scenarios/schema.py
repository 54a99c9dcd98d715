"""The layout file's schema as dataclasses, and the walk of a layout by it.

Each section of a layout file is a dataclass: its fields are the keys the section may hold,
their defaults are mobile-env's (None: required, or filled in from another key), their types
say whether a value is a number or a whole number, and each field's `Rule` (its metadata)
says what else a value must satisfy (a lower bound, one of some models, where a missing value
comes from). `check_keys`, `check_required` and `check_values` walk these;
`mobrl.scenarios.layout_checks.validate` runs them in order, with the checks of what relates
several keys (a station on the map, UEs that some station covers, a layout that fits the
machine's memory). The optional `classes:` section (mobile-env's own classes by import path)
has no defaults: it is `mobrl.scenarios.classes`'s to check. Every problem is a one-line error
naming the file, the key and the fix (`Checker`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, closest_first
from mobrl.radio.config import (
    CHANNEL_CHOICES,
    INTERFERENCE_CHOICES,
    JOINT_CHOICES,
    NOISE_FIGURE_DB,
    SCHEDULER_CHOICES,
    SINR_THRESHOLD_DB,
)
from mobrl.scenarios import energy_sections

#: random_waypoint is mobile-env's own; the others are mobrl.network.mobility's models
MOVEMENT_MODELS = ("random_waypoint", "gauss_markov", "trace")
ARRIVAL_MODELS = ("always", "random")


@dataclass(frozen=True)
class Rule:
    """What a layout value must satisfy besides its type (number or whole number)."""

    #: the lower bound: a number, or the name of a key of the same section holding it
    low: float | str | None = None
    #: whether the bound itself is refused (value > low) or allowed (value >= low)
    strict: bool = True
    #: the fix named when a required value is missing (None: the value is optional)
    missing: str | None = None
    #: the models a value must be one of
    choices: tuple[str, ...] = ()
    #: what a value that is None becomes: a top-level key of the layout (str) or this number
    fallback: str | int | None = None
    #: the section's model for which the value is checked and filled in (None: always)
    when: str | None = None
    #: why a whole number below the bound is refused, said instead of the general message
    below: str | None = None
    #: None is a value (the key is optional and has no fallback)
    optional: bool = False


def _key(default: Any = dataclasses.MISSING, **rule: Any) -> Any:
    """A layout key: its default and its `Rule`."""
    return field(default=default, metadata={"rule": Rule(**rule)})


def _section(schema: type) -> Any:
    """A nested section of a layout, with its own schema's defaults."""
    return field(default_factory=schema)


@dataclass
class StationDefaults:
    """Radio parameters of every station that does not give its own (units: Hz, MHz, dBm, m)."""

    bandwidth: float = _key(9e6, low=0)
    frequency: float = _key(2500, low=0)
    tx_power: float = _key(30)  # dBm may be negative
    height: float = _key(50, low=0)


@dataclass
class Station:
    """One base station: where it stands on the map; it may also give any `StationDefaults`
    key for itself."""

    x: float = _key(missing="Give every station x and y.")
    y: float = _key(missing="Give every station x and y.")


@dataclass
class Ues:
    """How many UEs there are and their radio and motion parameters."""

    count: int = _key(
        None, low=1, strict=False, missing="Add ues: {count: N}.", below="a scenario needs UEs"
    )
    snr_threshold: float = _key(2e-8, low=0)
    noise: float = _key(1e-9, low=0)
    height: float = _key(1.5, low=0)
    velocity: float = _key(1.5, low=0, strict=False)


@dataclass
class Radio:
    """The radio model: mobile-env's (Okumura-Hata, no shadowing, no interference,
    resource-fair shares, summed rates) unless given; docs/radio.md has every formula. Units:
    dB, bit/s/Hz; None: the channel's default (mobrl.radio.config)."""

    channel: str = _key("okumura_hata", choices=CHANNEL_CHOICES)
    shadowing: bool = _key(False)
    interference: str = _key("none", choices=INTERFERENCE_CHOICES)
    scheduler: str = _key("resource_fair", choices=SCHEDULER_CHOICES)
    joint_transmission: str = _key("sum_rates", choices=JOINT_CHOICES)
    noise_figure_db: float = _key(NOISE_FIGURE_DB, low=0, strict=False)
    sinr_threshold_db: float = _key(SINR_THRESHOLD_DB)  # dB may be negative
    max_spectral_efficiency: float | None = _key(None, low=0, optional=True)


@dataclass
class Movement:
    """How UEs move, and the area they move in (the map unless given)."""

    model: str = _key("random_waypoint", choices=MOVEMENT_MODELS)
    width: float = _key(None, low=0, fallback="width")
    height: float = _key(None, low=0, fallback="height")


@dataclass
class Arrival:
    """When UEs arrive and how long they stay (`random`), or all of them all the time."""

    model: str = _key("always", choices=ARRIVAL_MODELS)
    window: int = _key(0, low=0, strict=False, when="random")
    min_stay: int | None = _key(None, low=1, strict=False, fallback=1, when="random")
    max_stay: int | None = _key(
        None, low="min_stay", strict=False, fallback="episode_length", when="random"
    )


@dataclass
class Layout:
    """A layout file: the map, the episode, the stations, the UEs and how they move and arrive."""

    description: str = _key("")
    width: float = _key(None, low=0, missing="Add width: (see small.yaml).")
    height: float = _key(None, low=0, missing="Add height: (see small.yaml).")
    episode_length: int = _key(100, low=1, strict=False)
    seed: int = _key(0, low=0, strict=False)
    station_defaults: StationDefaults = _section(StationDefaults)
    stations: list[Station] = _key(None, missing="Add stations: (see small.yaml).")
    ues: Ues = _section(Ues)
    radio: Radio = _section(Radio)
    movement: Movement = _section(Movement)
    arrival: Arrival = _section(Arrival)


@functools.cache
def _hints(schema: type) -> dict[str, Any]:
    return typing.get_type_hints(schema)


def _type(schema: type, name: str) -> Any:
    """The type of a schema's field, without its `| None`."""
    hint = _hints(schema)[name]
    if isinstance(hint, types.UnionType):
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


def _rule(spec: dataclasses.Field) -> Rule:
    return spec.metadata.get("rule", Rule())


def _sections(schema: type) -> list[str]:
    """The names of a schema's nested sections, in the file's order."""
    return [
        f.name
        for f in dataclasses.fields(schema)
        if dataclasses.is_dataclass(_type(schema, f.name))
    ]


def _check_order(schema: type) -> list[dataclasses.Field]:
    """A schema's fields in the order their values are checked: the file's order, except that
    numbers without a bound (a station's tx_power in dBm) come after the bounded ones."""
    fields = dataclasses.fields(schema)
    return sorted(fields, key=lambda f: _type(schema, f.name) is float and _rule(f).low is None)


#: every key a layout file may hold, with its default (mobile-env's defaults); None: required
DEFAULTS: dict[str, Any] = dataclasses.asdict(Layout())
#: the optional section of mobile-env classes by import path (`mobrl.scenarios.classes`): not
#: in `DEFAULTS`, so a layout without it keeps the same data
OPTIONAL = "classes"
#: every key a station may hold: its position, then its own radio parameters
STATION_KEYS = tuple(
    f.name for f in (*dataclasses.fields(Station), *dataclasses.fields(StationDefaults))
)


class Checker:
    """Builds one-line errors that name the file, the key and the fix."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str, fix: str) -> UserError:
        return UserError(f"scenario file '{self.path}': {key} {problem}. {fix}")

    def keys(self, given: dict, allowed: Any, where: str) -> None:
        """Refuse a key that is not `allowed`, naming the closest one."""
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
        """A number, at least (or above) `low`; a number YAML read as text becomes one."""
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

    def integer(
        self, data: dict, key: str, where: str, low: int, strict=False, below: str | None = None
    ) -> int:
        """A whole number, at least (or above) `low`; `below` says why a smaller one is wrong."""
        value = data.get(key)
        whole = isinstance(value, int) and not isinstance(value, bool)
        too_low = whole and (value <= low if strict else value < low)
        if too_low and below is not None:
            raise self.fail(f"{where}{key}", f"is {value}: {below}", f"Set {where}{key} >= {low}.")
        if not whole or too_low:
            bound = f"> {low}" if strict else f">= {low}"
            raise self.fail(
                f"{where}{key}", f"must be a whole number {bound}, got {value!r}", "Fix the value."
            )
        return value

    def flag(self, data: dict, key: str, where: str) -> bool:
        """true or false."""
        value = data.get(key)
        if not isinstance(value, bool):
            raise self.fail(
                f"{where}{key}", f"must be true or false, got {value!r}", "Fix the value."
            )
        return value

    def choice(self, data: dict, key: str, where: str, choices: tuple[str, ...]) -> None:
        """One of `choices`; the closest is named when there is more than one."""
        value = data[key]
        if value in choices:
            return
        hint = ""
        if len(choices) > 1:
            hint = f" (did you mean '{closest_first(str(value), choices)[0]}'?)"
        raise self.fail(
            f"{where}{key}", f"'{value}' is unknown{hint}", f"Use {' or '.join(choices)}."
        )


def merged(defaults: dict, given: dict) -> dict:
    """`given` over a copy of `defaults`, section by section."""
    out = copy.deepcopy(defaults)
    for key, value in given.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def check_keys(check: Checker, raw: dict[str, Any]) -> None:
    """Refuse an unknown key, at the top or in a section, and a section that is no mapping."""
    check.keys(raw, [*DEFAULTS, OPTIONAL, *energy_sections.KEYS], "")
    for name in _sections(Layout):
        if name in raw:
            if not isinstance(raw[name], dict):
                raise check.fail(name, "must be a mapping", f"See the {name} of small.yaml.")
            allowed = list(DEFAULTS[name])
            if name == "movement":  # and the keys of the models of mobrl.network.mobility
                allowed += [k for k in _model_keys() if k not in allowed]
            check.keys(raw[name], allowed, f"{name}.")


def check_required(check: Checker, values: dict, schema: type, where: str) -> None:
    """Refuse a required value that is missing (still its field's default, which stands for
    'not given'): a section's own keys first, then those of its sections."""
    for spec in dataclasses.fields(schema):
        fix = _rule(spec).missing
        if fix is not None and values.get(spec.name, spec.default) is spec.default:
            raise check.fail(f"{where}{spec.name}", "is missing", fix)
    for name in _sections(schema):
        check_required(check, values[name], _type(schema, name), f"{where}{name}.")


def check_values(
    check: Checker, values: dict, schema: type, where: str, layout: dict[str, Any]
) -> None:
    """Check each value of a section by its field's type and `Rule`, filling in a value that
    comes from elsewhere (`Rule.fallback`). Nested sections and lists are checked apart."""
    for spec in _check_order(schema):
        name, rule, kind = spec.name, _rule(spec), _type(schema, spec.name)
        if rule.when is not None and values.get("model") != rule.when:
            continue
        if rule.choices:
            check.choice(values, name, where, rule.choices)
            continue
        if rule.optional and values.get(name) is None:
            continue
        if rule.fallback is not None and values[name] is None:
            fallback = rule.fallback
            values[name] = layout[fallback] if isinstance(fallback, str) else fallback
        low = values[rule.low] if isinstance(rule.low, str) else rule.low
        if kind is float:
            check.number(values, name, where, low, rule.strict)
        elif kind is int:
            check.integer(values, name, where, low, rule.strict, rule.below)
        elif kind is bool:
            check.flag(values, name, where)


def _model_keys() -> list[str]:
    """The keys every mobility model of mobrl.network.mobility may take, in registry order."""
    from mobrl.network.mobility import MODELS

    return [k for cls in MODELS.values() for k in cls.PARAMS]
