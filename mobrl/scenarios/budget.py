"""One position's link budget per station, on the engine's arrays (`mobrl scenarios budget`);
the radio model at any points of the map (`point_arrays`), which the SINR maps also read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from mobrl.core.errors import UserError

#: what --transmitting accepts besides station ids
TRANSMITTING_WORDS = ("all", "none")


def parse_at(text: str) -> tuple[float, float]:
    """`--at X,Y` as two finite numbers (metres), or a one-line error."""
    parts = text.split(",")
    try:
        x, y = (float(p) for p in parts)
    except ValueError:
        x = y = math.nan
    if not (math.isfinite(x) and math.isfinite(y)):
        raise UserError(
            f"--at '{text}' is not a position X,Y in metres. Write two numbers, e.g. --at 120,80."
        )
    return x, y


def check_on_map(x: float, y: float, data: dict[str, Any], layout: str) -> None:
    """A one-line error unless (x, y) lies on the layout's map (edges included)."""
    width, height = float(data["width"]), float(data["height"])
    if not (0.0 <= x <= width and 0.0 <= y <= height):
        raise UserError(
            f"--at {x:g},{y:g} is off the map of {layout} ({width:g} x {height:g} m). "
            f"Choose 0 <= X <= {width:g} and 0 <= Y <= {height:g}."
        )


def parse_transmitting(text: str | None, n_stations: int, layout: str) -> str | list[int] | None:
    """`--transmitting`: None (the layout's default), "all", "none" or sorted station ids;
    a one-line error for anything else or an id the layout does not have."""
    if text is None:
        return None
    word = text.strip().lower()
    if word in TRANSMITTING_WORDS:
        return word
    try:
        ids = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise UserError(
            f"--transmitting '{text}' is neither all, none nor station ids. Write e.g. "
            "--transmitting all, --transmitting none or --transmitting 0,3,5."
        ) from None
    unknown = [i for i in ids if not 0 <= i < n_stations]
    if unknown:
        raise UserError(
            f"--transmitting names station {unknown[0]}, which {layout} does not have (its "
            f"stations are 0 to {n_stations - 1}). Give ids from 0 to {n_stations - 1}, "
            "or all or none."
        )
    return ids


def _stations(core: Any) -> list[Any]:
    return [core.stations[b] for b in sorted(core.stations)]


def point_arrays(core: Any, n_points: int) -> Any:
    """The radio model of `core`'s layout for `n_points` UEs like its own (height, noise,
    threshold: a layout gives every UE the same), anywhere on the map, reading the LOS and
    shadowing fields of the core's current episode: a UE of the core at those positions gets
    the same received powers, and SINRs and rates from them with `mobrl.radio.links` (the
    engine's functions) are the engine's. mobile-env's model (no radio section) is its
    Okumura-Hata arrays."""
    from mobrl.network.radio_engine import RadioArrays
    from mobrl.radio.config import RadioConfig

    live = getattr(core, "_radio", None)
    cfg = live.cfg if live is not None else RadioConfig()
    ue = core.users[min(core.users)]
    like = SimpleNamespace(height=ue.height, noise=ue.noise, snr_threshold=ue.snr_threshold)
    area = (float(core.width), float(core.height))
    arrays = RadioArrays(cfg, _stations(core), [like] * n_points, getattr(core, "seed", 0), area)
    if live is not None:
        # the fields depend on the stations and the map only, not on the UEs: share the live
        # episode's windows instead of drawing new ones
        arrays.los_field, arrays.sf_fields = live.los_field, live.sf_fields
    return arrays


def _on_mask(choice: str | list[int] | None, interference: str, n: int) -> np.ndarray | None:
    """Which stations transmit (None: nobody interferes, the SNR)."""
    if choice is None:  # the layout's own: full buffer where it has interference
        choice = "none" if interference == "none" else "all"
    if choice == "none":
        return None
    if choice == "all":
        return np.ones(n, dtype=bool)
    on = np.zeros(n, dtype=bool)
    on[choice] = True
    return on


def _db(value: Any) -> Any:
    return 10.0 * np.log10(value)


def _distinct(values: Any) -> list[float]:
    """The distinct values of a per-station array, as plain floats in order."""
    return sorted({float(v) for v in np.ravel(values)})


@dataclass(frozen=True)
class LinkBudget:
    """A position's budget: `header` (what applies to every station), `rows` (one per
    station, strongest received power first; key names carry their units), `notes`."""

    header: dict[str, Any]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def thermal(self) -> bool:
        return self.header["channel"] != "okumura_hata" and not self.header.get("own_class")

    @property
    def rate_key(self) -> str:
        return "rate_mbit_s" if self.thermal else "rate_bit_s"

    def as_json(self) -> dict[str, Any]:
        return {"header": self.header, "rows": self.rows, "notes": self.notes}


def link_budget(
    core: Any, x: float, y: float, transmitting: str | list[int] | None = None
) -> LinkBudget:
    """The link budget of a UE of `core` (after its reset) at (x, y) to every station, with
    the stations `transmitting` ("all", "none", ids; None: the layout's default, full buffer
    under interference) as interferers."""
    from mobrl.radio.links import RadioService, link_sinr

    if own_channel(core):
        return _own_channel_budget(core, x, y, transmitting)
    arrays = point_arrays(core, 1)
    cfg = arrays.cfg
    stations = _stations(core)
    xs, ys = np.array([float(x)]), np.array([float(y)])
    on = _on_mask(transmitting, cfg.interference, len(stations))
    # the engine's arithmetic: received powers (mW), SINR with the stations `on`, the rate
    # of a link with all of its station's resources above the threshold
    rx = arrays.rx(xs, ys)
    sinr = link_sinr(rx, arrays.noise, on)
    service = RadioService(arrays.model, rx, arrays.noise, arrays.bw, arrays.thr)
    # the budget's terms: (station, 1) arrays and the values every station shares
    terms: dict[str, Any] = {
        "rx": rx,
        "sinr": sinr,
        "rate": service.capacity(sinr, sinr > arrays.thr),
        "bw_hz": np.array([b.bw for b in stations], dtype=float)[:, None],
        "h_ue": float(arrays.h_ue[0, 0]),
        "figure": None,  # the thermal-noise channels' only
    }
    notes: list[str] = []
    if cfg.thermal:
        terms.update(_thermal_terms(arrays, xs, ys, terms, notes))
    else:
        terms.update(_hata_terms(arrays, xs, ys, notes))
    rows = [
        _budget_row(stations[b], b, on, terms, arrays)
        for b in np.argsort(-rx[:, 0], kind="stable").tolist()
    ]
    return LinkBudget(_budget_header(core, x, y, arrays, on, terms), rows, notes)


def _thermal_terms(
    arrays: Any, xs: np.ndarray, ys: np.ndarray, terms: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """The per-station (station, 1) terms of a thermal-noise channel at the point (`terms`:
    its `bw_hz` and `h_ue`), and its notes appended to `notes`."""
    from mobrl import radio

    n = arrays.bx.shape[0]
    rx_dbm, loss, sf, los = (np.broadcast_to(v, (n, 1)) for v in arrays.rx_dbm(xs, ys))
    dx, dy = arrays.bx - xs[None, :], arrays.by - ys[None, :]
    d2d = np.sqrt(dx * dx + dy * dy)
    ch = arrays.channel
    # the engine reads the formulas at the model's smallest distance below it
    d_model = np.sqrt(np.maximum(dx * dx + dy * dy, arrays.min_d2))
    if ch.has_los_state:
        p_los = np.broadcast_to(ch.los_probability_of(d_model, arrays.h_ue), (n, 1))
    else:
        p_los = np.ones((n, 1))
    d3d = np.sqrt(d2d * d2d + (arrays.h_bs - terms["h_ue"]) ** 2)
    figure = arrays.cfg.noise_figure_db
    noise_dbm = np.broadcast_to(radio.thermal_noise_dbm(terms["bw_hz"], figure), (n, 1))
    if (d2d < ch.min_distance_2d_m).any():
        notes.append(
            f"closer than {ch.min_distance_2d_m:g} m (2D) to a station: its path loss and "
            f"LOS probability are read at {ch.min_distance_2d_m:g} m, as the engine does"
        )
    if not ch.has_los_state:
        notes.append(f"{ch.name} has no LOS state: every link is LOS")
    return {
        "rx_dbm": rx_dbm, "loss": loss, "sf": sf, "los": los, "d2d": d2d, "d3d": d3d,
        "p_los": p_los, "figure": figure, "noise_dbm": noise_dbm,
    }  # fmt: skip


def _hata_terms(arrays: Any, xs: np.ndarray, ys: np.ndarray, notes: list[str]) -> dict[str, Any]:
    """The per-station (station, 1) terms of mobile-env's Okumura-Hata on integer-truncated
    positions, and its note appended to `notes`."""
    n = arrays.bx.shape[0]
    dx, dy = arrays.bx - np.trunc(xs)[None, :], arrays.by - np.trunc(ys)[None, :]
    loss = arrays.hata_loss_db(xs, ys)
    notes.append(
        "okumura_hata is mobile-env's channel: distances between integer-truncated "
        "positions, in metres where Hata's formula expects km; rates in mobile-env's unit, "
        "bandwidth (Hz) x log2(1 + SNR), i.e. bit/s"
    )
    return {
        "d2d": np.sqrt(dx * dx + dy * dy),
        "loss": loss,
        "rx_dbm": arrays.tx_dbm - loss,
        "noise_dbm": np.broadcast_to(_db(arrays.noise[:, :1]), (n, 1)),
    }


def _budget_row(
    s: Any, b: int, on: np.ndarray | None, terms: dict[str, Any], arrays: Any
) -> dict[str, Any]:
    """The budget's row of station `s`, index `b` of the (station, 1) `terms`."""
    thermal = arrays.cfg.thermal
    row: dict[str, Any] = {"station": int(s.bs_id), "transmits": bool(on is not None and on[b])}
    row["distance_2d_m"] = float(terms["d2d"][b, 0])
    if thermal:
        row["distance_3d_m"] = float(terms["d3d"][b, 0])
        row["los_probability"] = float(terms["p_los"][b, 0])
        row["los"] = bool(terms["los"][b, 0])
    row["path_loss_db"] = float(terms["loss"][b, 0])
    if thermal:
        row["shadowing_db"] = float(terms["sf"][b, 0])
    row["rx_power_dbm"] = float(terms["rx_dbm"][b, 0])
    row["rx_power_mw"] = float(terms["rx"][b, 0])
    row["sinr_db"] = float(_db(terms["sinr"][b, 0]))
    row["above_threshold"] = bool(terms["sinr"][b, 0] > arrays.thr[0, 0])
    row["rate_mbit_s" if thermal else "rate_bit_s"] = float(terms["rate"][b, 0])
    row.update(
        tx_power_dbm=float(s.tx_power), frequency_mhz=float(s.frequency),
        bs_height_m=float(s.height), bandwidth_hz=float(s.bw),
        noise_dbm=float(terms["noise_dbm"][b, 0]),
    )  # fmt: skip
    return row


def _budget_header(
    core: Any, x: float, y: float, arrays: Any, on: np.ndarray | None, terms: dict[str, Any]
) -> dict[str, Any]:
    """What applies to every station of the budget at (x, y)."""
    cfg = arrays.cfg
    return {
        "x_m": float(x),
        "y_m": float(y),
        "seed": int(getattr(core, "seed", 0) or 0),
        "channel": cfg.channel,
        "channel_source": arrays.channel.source,
        "shadowing": bool(cfg.shadowing),
        "interference": cfg.interference,
        "transmitting": _transmitting_value(on),
        "tx_power_dbm": _distinct(arrays.tx_dbm),
        "frequency_mhz": _distinct(arrays.fc_ghz * 1000.0),
        "bs_height_m": _distinct(arrays.h_bs),
        "ue_height_m": terms["h_ue"],
        "bandwidth_hz": _distinct(terms["bw_hz"]),
        "noise_figure_db": terms["figure"],
        "noise_dbm": _distinct(terms["noise_dbm"]),
        "threshold_db": float(_db(arrays.thr[0, 0])),
        "max_spectral_efficiency": arrays.model.spectral_cap,
        "rate_unit": "Mbit/s" if cfg.thermal else "bit/s (mobile-env's unit)",
    }


def own_channel(core: Any) -> bool:
    """Whether `core` computes its SNRs with a channel class its layout names (`classes:`),
    which mobrl's arrays do not reimplement."""
    from mobile_env.core.channels import OkumuraHata

    return getattr(core, "_radio", None) is None and type(core.channel) is not OkumuraHata


def _own_channel_budget(
    core: Any, x: float, y: float, transmitting: str | list[int] | None
) -> LinkBudget:
    """`link_budget` through the layout's own channel class, with mobile-env's Channel API
    as mobile-env's step calls it: `power_loss`, `snr` and `datarate` of a UE like the
    layout's at (x, y)."""
    import copy

    if transmitting not in (None, "none"):
        raise UserError(
            f"--transmitting {_transmitting_text(transmitting)}: this layout computes SNRs "
            "with its own channel class, in mobile-env's model without interference. Leave "
            "--transmitting out."
        )
    ue = copy.copy(core.users[min(core.users)])
    ue.x, ue.y = float(x), float(y)
    stations = _stations(core)
    channel = core.channel
    loss = np.array([float(channel.power_loss(bs, ue)) for bs in stations])
    snr = np.array([float(channel.snr(bs, ue)) for bs in stations])
    rate = [float(channel.datarate(bs, ue, v)) for bs, v in zip(stations, snr.tolist())]
    noise_dbm = float(_db(ue.noise))
    rows = []
    for b in np.argsort(-snr, kind="stable").tolist():
        s = stations[b]
        rows.append(
            {
                "station": int(s.bs_id), "transmits": False,
                "distance_2d_m": float(np.hypot(s.x - ue.x, s.y - ue.y)),
                "path_loss_db": float(loss[b]), "rx_power_dbm": float(s.tx_power - loss[b]),
                "rx_power_mw": float(10 ** ((s.tx_power - loss[b]) / 10)),
                "sinr_db": float(_db(snr[b])), "above_threshold": bool(snr[b] > ue.snr_threshold),
                "rate_bit_s": rate[b], "tx_power_dbm": float(s.tx_power),
                "frequency_mhz": float(s.frequency), "bs_height_m": float(s.height),
                "bandwidth_hz": float(s.bw), "noise_dbm": noise_dbm,
            }
        )  # fmt: skip
    notes = [
        "the layout's own channel class: path loss from its power_loss, the SNR from its snr "
        "and the rate from its datarate, as mobile-env's step calls them"
    ]
    return LinkBudget(_own_channel_header(core, x, y, ue, stations), rows, notes)


def _own_channel_header(
    core: Any, x: float, y: float, ue: Any, stations: list[Any]
) -> dict[str, Any]:
    """What applies to every station of `_own_channel_budget` at (x, y), for a UE `ue` there."""
    cls = type(core.channel)
    noise_dbm = float(_db(ue.noise))
    return {
        "x_m": float(x),
        "y_m": float(y),
        "seed": int(getattr(core, "seed", 0) or 0),
        "channel": f"{cls.__module__}:{cls.__qualname__}",
        "channel_source": " ".join((cls.__doc__ or "").split()).split(". ")[0].rstrip("."),
        "own_class": True,
        "shadowing": False,
        "interference": "none",
        "transmitting": "none",
        "tx_power_dbm": _distinct([s.tx_power for s in stations]),
        "frequency_mhz": _distinct([s.frequency for s in stations]),
        "bs_height_m": _distinct([s.height for s in stations]),
        "ue_height_m": float(ue.height),
        "bandwidth_hz": _distinct([s.bw for s in stations]),
        "noise_figure_db": None,
        "noise_dbm": [noise_dbm],
        "threshold_db": float(_db(ue.snr_threshold)),
        "max_spectral_efficiency": None,
        "rate_unit": "bit/s (mobile-env's unit)",
    }


def _transmitting_text(choice: str | list[int]) -> str:
    return choice if isinstance(choice, str) else ",".join(map(str, choice))


def _transmitting_value(on: np.ndarray | None) -> str | list[int]:
    if on is None:
        return "none"
    return "all" if on.all() else np.flatnonzero(on).tolist()


def budget_at(
    data: dict[str, Any],
    x: float,
    y: float,
    seed: int | None = None,
    transmitting: str | list[int] | None = None,
    layout: str = "layout",
) -> LinkBudget:
    """`link_budget` of validated layout `data` in the first episode of `seed` (None: the
    layout's seed), as `mobrl evaluate` and `mobrl render` play the episode of that seed."""
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    check_on_map(x, y, data, layout)
    core = make_mobile_core(data, "ma", "fast", None if seed is None else {"seed": int(seed)})
    core.reset()
    return link_budget(core, x, y, transmitting)
