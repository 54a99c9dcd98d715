"""The fast engine's radio model beyond mobile-env's: received powers at the UEs' positions
(the layout's channel, LOS state and shadowing), noise and thresholds, as (station, UE) arrays.

`RadioArrays` turns a layout's `radio:` section (mobrl.radio.config) and mobile-env's station
and UE objects into arrays once, then gives each step's received powers; the engine derives
SINRs and rates from them with mobrl.radio.links, the same functions the service arithmetic
of the references uses. A layout with mobile-env's model never builds one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl import radio
from mobrl.network import channel as hata
from mobrl.radio.config import RadioConfig
from mobrl.radio.fields import ShadowFields, StationFields
from mobrl.radio.links import RadioService, link_rates, reach_sinr

#: the radio RNG's stream, apart from mobile-env's own draws of the same seed
_STREAM = 38901
#: (station, UE) pairs per block of UEs whose received powers are computed together: each
#: block's temporaries (8 bytes a pair) stay in a core's cache, where numpy's element-wise
#: passes over the whole matrix would stream every temporary through memory
_BLOCK_PAIRS = 65536
#: the received powers' arithmetic: single precision, a relative 1e-6 (4e-6 dB, far below
#: shadowing's sigma) at half the memory and twice the lanes of double precision; the
#: engine, observations, rules and references all read the same array (`rx`), in float64
_F = np.float32


class RadioArrays:
    """A layout's radio model on arrays: `rx(x, y)` (mW) of every (station, UE) pair, `noise`
    (mW) and `thr` (linear SINR) broadcastable to (station, UE), and per station `bw`, the
    rate of one bit/s/Hz over all its resources (Hz; thermal-noise channels: MHz, i.e. rates
    in Mbit/s)."""

    def __init__(
        self,
        cfg: RadioConfig,
        stations: list[Any],
        ues: list[Any],
        seed: Any,
        area: tuple[float, float],
    ) -> None:
        self.cfg = cfg
        self.model = cfg.link_model()
        self.channel = radio.channel(cfg.channel)
        n_bs, n_ue = len(stations), len(ues)
        self.shape = (n_bs, n_ue)
        self.tx_dbm = np.array([b.tx_power for b in stations], dtype=float)[:, None]
        bw_hz = np.array([b.bw for b in stations], dtype=float)[:, None]
        # rates in mobile-env's own units (its bandwidth times log2(1 + SNR)); under the
        # thermal-noise channels in Mbit/s, the unit mobile-env's utility is scaled for
        # (10 log10(rate) in [-20, 20]: 0.01 to 100 Mbit/s)
        self.bw = bw_hz / 1e6 if cfg.thermal else bw_hz
        freq_mhz = np.array([b.frequency for b in stations], dtype=float)[:, None]
        bs_height = np.array([b.height for b in stations], dtype=float)[:, None]
        ue_height = np.array([ue.height for ue in ues], dtype=float)[None, :]
        if cfg.thermal:
            self.bx = np.array([float(b.x) for b in stations])[:, None]
            self.by = np.array([float(b.y) for b in stations])[:, None]
            self.noise = np.broadcast_to(cfg.noise_mw(bw_hz), self.shape)
            self.thr = np.full((1, n_ue), cfg.sinr_threshold)
        else:  # mobile-env's Okumura-Hata on integer-truncated positions, its noise and threshold
            self.bx = np.array([float(int(b.x)) for b in stations])[:, None]
            self.by = np.array([float(int(b.y)) for b in stations])[:, None]
            t1, t2 = hata.loss_terms(freq_mhz, bs_height, ue_height)
            self.t1, self.t2 = np.broadcast_to(t1, self.shape), np.broadcast_to(t2, self.shape)
            self.noise = np.broadcast_to(
                np.array([ue.noise for ue in ues], dtype=float)[None, :], self.shape
            )
            self.thr = np.array([ue.snr_threshold for ue in ues], dtype=float)[None, :]
        self.fc_ghz, self.h_bs, self.h_ue = freq_mhz / 1000.0, bs_height, ue_height
        self.rng = np.random.default_rng([int(seed or 0), _STREAM])
        self.los_field, self.sf_fields = None, None
        if cfg.thermal:
            self._setup_thermal(area)

    def _setup_thermal(self, area: tuple[float, float]) -> None:
        """A thermal-noise channel's path-loss terms, LOS and shadowing fields over the
        `area` (width, height) and blocks of UEs."""
        cfg, ch = self.cfg, self.channel
        n_bs, n_ue = self.shape
        self.terms = ch.loss_terms(self.fc_ghz, self.h_bs, self.h_ue)
        self.min_d2 = ch.min_distance_2d_m**2
        width, height = area
        if ch.has_los_state:
            self.los_field = StationFields(
                ch.los_decorrelation_m, n_bs, width, height, uniform=True
            )
        if cfg.shadowing:
            self.sf_fields = ShadowFields(
                ch.sf_decorrelation_los_m, ch.sf_decorrelation_nlos_m,
                ch.sigma_los_db, ch.sigma_nlos_db, n_bs, width, height,
            )  # fmt: skip
        # the per-pair arithmetic in single precision (_F): distances, LOS probabilities,
        # path losses and dBm -> mW as one exp, 10 ** (v / 10) = exp(v * ln(10) / 10)
        self._db = _F(np.log(10.0) / 10.0)
        self._at = (self.bx.astype(_F), self.by.astype(_F), self.tx_dbm.astype(_F))
        terms = self.terms.astype(_F)
        self._terms, self._h_ue = terms, self.h_ue.astype(_F)
        per_block = max(1, _BLOCK_PAIRS // max(n_bs, 1))
        self._blocks = [
            (cols, terms.columns(cols), self._h_ue[:, cols])
            for cols in (slice(s, s + per_block) for s in range(0, n_ue, per_block))
        ]

    def reset(self) -> None:
        """A new episode: new realisations of the LOS and shadowing fields."""
        for field in self._fields():
            field.redraw(self.rng)

    def _fields(self) -> list[Any]:
        return [f for f in (self.los_field, self.sf_fields) if f is not None]

    def rx(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(station, UE) received power in mW at the UEs' positions x, y."""
        if not self.cfg.thermal:
            return 10 ** ((self.tx_dbm - self.hata_loss_db(x, y)) / 10)
        out = np.empty(self.shape)
        x, y = x.astype(_F), y.astype(_F)
        for cols, terms, h_ue in self._blocks:  # the same numbers as one pass, sooner
            rx_dbm = self._rx_dbm(x[cols], y[cols], terms, h_ue)[0]
            out[:, cols] = np.exp(rx_dbm * self._db)
        return out

    def hata_loss_db(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(station, UE) path loss of mobile-env's Okumura-Hata (its operations: distances
        between integer-truncated positions, metres where Hata expects km)."""
        dx, dy = self.bx - np.trunc(x)[None, :], self.by - np.trunc(y)[None, :]
        return self.t1 + self.t2 * np.log10(np.sqrt(dx * dx + dy * dy) + hata.EPSILON)

    def rx_dbm(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        """(received power dBm, path loss dB, shadowing dB, LOS) of every (station, UE) pair
        at the UEs' positions, under a thermal-noise channel: the engine's numbers (`rx`),
        computed as it does in single precision, in float64 arrays."""
        x, y = np.asarray(x, dtype=_F), np.asarray(y, dtype=_F)
        out = self._rx_dbm(x, y, self._terms, self._h_ue)
        return tuple(v if v.dtype == bool else v.astype(float) for v in map(np.asarray, out))

    def _rx_dbm(self, x: np.ndarray, y: np.ndarray, terms: Any, h_ue: Any) -> tuple[Any, ...]:
        """`rx_dbm` of the UEs at x, y, whose path-loss terms and heights are `terms`, `h_ue`."""
        bx, by, tx_dbm = self._at
        dx, dy = bx - x[None, :], by - y[None, :]
        # below the model's smallest distance the formula is read at that distance
        d2 = np.maximum(dx * dx + dy * dy, self.min_d2)
        if self.los_field is not None:
            p_los = self.channel.los_probability_of(np.sqrt(d2), h_ue)
            los: Any = self.los_field.at(x, y) < p_los
        else:
            los = True
        loss = terms.loss_db_sq(d2, los)
        if self.sf_fields is not None:
            sf = self.sf_fields.at(x, y, los)
            return tx_dbm - loss - sf, loss, sf, los
        return tx_dbm - loss, loss, np.zeros(loss.shape, dtype=_F), los


class RadioSteps:
    """Mixin of `FastEngine`: the step's SINRs and rates under a layout's radio model, and UE
    movement by a model of mobrl.network.mobility, where the layout asks for them."""

    _radio: RadioArrays | None = None
    _mobility: Any = None
    _off: np.ndarray | None = None

    def _setup_radio(self, config: dict[str, Any]) -> None:
        extra = config.get("mobrl") or {}
        seed = int(getattr(self, "seed", 0) or 0)
        cfg = RadioConfig.of(extra.get("radio"))
        if not cfg.is_stock:
            area = (float(self.width), float(self.height))
            self._radio = RadioArrays(cfg, self._bs_list, self._ue_list, seed, area)
            self._grid = None  # interference couples every pair: the dense arrays
        movement = extra.get("movement") or {}
        if movement.get("model", "random_waypoint") != "random_waypoint":
            from mobrl.network.mobility import model_class

            params = {k: v for k, v in movement.items() if k not in ("model", "width", "height")}
            cls = model_class(movement["model"])
            self._mobility = cls(
                params, float(movement["width"]), float(movement["height"]), self._velocity
            )
            self._mobility_rng = np.random.default_rng([seed, _STREAM + 1])

    def _reset_radio(self) -> None:
        """At reset, after mobile-env's own draws: new fields, the mobility model's start."""
        if self._radio is not None:
            self._radio.reset()
        if self._mobility is not None:
            x, y = self._mobility.reset(self._mobility_rng)
            for ue, nx, ny in zip(self._ue_list, x.tolist(), y.tolist()):
                ue.x, ue.y = nx, ny

    def _radio_snr(self) -> None:
        """Received powers at the current positions; each link's SINR with the stations that
        transmit now; reach: SINR above the UE's threshold."""
        r = self._radio
        self._rx = r.rx(self._x, self._y)
        if self._off is not None:  # stations asleep are off the air (mobrl.network.power_engine)
            self._rx_all = self._rx
            self._rx = self._mask_off(self._rx)
        self._snr = reach_sinr(r.model, self._rx, r.noise, self._conn)
        self._reach = self._snr > r.thr

    def _radio_rates(self) -> np.ndarray:
        if self._off is None:
            return self.radio_service().link_rates(self._conn)
        # cells that sleep, demand: each link's rate with all its station's resources, too
        r = self._radio
        self._caps_now = np.empty(self._conn.shape)
        return link_rates(r.model, self._rx, r.noise, r.bw, r.thr, self._conn, self._caps_now)

    def radio_service(self) -> RadioService | None:
        """What the service arithmetic needs to recompute this step's rates for other links
        (None: mobile-env's model)."""
        r = self._radio
        if r is None:
            return None
        return RadioService(r.model, self._rx, r.noise, r.bw, r.thr)

    def _move_model(self, sel: Any) -> None:
        ids = self._active_idx
        x, y = self._mobility.step(self._x, self._y, ids, int(self.time), self._mobility_rng)
        self._x[ids], self._y[ids] = x, y
        ues = self._ue_list
        for i, nx, ny in zip(ids.tolist(), x.tolist(), y.tolist()):
            ues[i].x, ues[i].y = nx, ny
