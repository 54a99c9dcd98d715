"""`POST /v1/decide`: network measurements in, link decisions out, for a controller that does
not compute mobrl's observations. Per UE, what it hears of every station (the SNR in dB on
mobile-env's model; under a layout's radio model the received power in dBm, or the SINR in dB,
from which the layout's model inverted gives the received powers), its links and its rate over
the last period; per station, its load. The service puts them in the (station, UE)
arrays the fast engine holds (`MeasuredNetwork`) and builds the policy's slot observation
(`topk`, `topk_gain`, `topk_impact`, `topk_intent`) with the engine's own code
(`mobrl.envs.observations`'s handler `rows`), acts, and reads each slot action back as a
station with the handler's own `topk_station_actions`.

Rates follow the model the policy was trained in. On mobile-env's, a link's rate is the
station's bandwidth share times log2(1 + SNR), a UE's utility mobile-env's bounded log of its
summed rate, and the layout's UE threshold says which stations a UE can link to. Under a
layout's `radio:` section, the received powers give each link's SINR with the stations that
transmit under the UEs' links, and rates follow the layout's scheduler and joint transmission
(`mobrl.radio.links`, the functions the engine steps with), with the layout's noise (thermal
noise over each station's bandwidth plus its noise figure under the 3GPP channels) and SINR
threshold."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mobrl.serve.policy import BadRequest, ServedPolicy

if TYPE_CHECKING:
    from mobrl.radio.config import RadioConfig
    from mobrl.radio.links import LinkModel, RadioService


@dataclass(frozen=True)
class Radio:
    """What the measurements do not carry, from the policy's layout: mobile-env's utility
    model, the UE threshold (linear SNR, or SINR under a radio model) and the stations'
    bandwidth (None: they differ); under a layout's radio model also the model (`config`, its
    `LinkModel`) and, under mobile-env's Okumura-Hata, the UEs' noise (mW); under the
    thermal-noise channels rates are in Mbit/s, the unit the utility is scaled for there."""

    lower: float
    upper: float
    coeffs: tuple[float, float, float]
    idle: float
    threshold: float
    bandwidth: float | None
    config: RadioConfig | None = None
    model: LinkModel | None = None
    ue_noise: float | None = None

    @classmethod
    def of_layout(cls, env_config: dict[str, Any]) -> Radio:
        """The constants of the env the policy plays in (built once, not stepped)."""
        from mobrl.envs.factory import make_env
        from mobrl.envs.wrappers import find_core
        from mobrl.radio.config import RadioConfig

        cfg = RadioConfig.of((env_config.get("layout") or {}).get("radio"))
        env = make_env({**env_config, "render_mode": None})
        try:
            core = find_core(env)
            utility = core.utility
            thresholds = {float(ue.snr_threshold) for ue in core.users.values()}
            bandwidths = {float(bs.bw) for bs in core.stations.values()}
            noises = {float(ue.noise) for ue in core.users.values()}
        finally:
            env.close()
        radio: dict[str, Any] = {}
        if not cfg.is_stock:  # as the engine: mobrl.network.radio_engine.RadioArrays
            radio.update(config=cfg, model=cfg.link_model())
            if cfg.thermal:
                thresholds = {cfg.sinr_threshold}
            else:
                radio["ue_noise"] = min(noises)
        return cls(
            lower=float(utility.lower),
            upper=float(utility.upper),
            coeffs=tuple(float(c) for c in utility.coeffs),  # type: ignore[arg-type]
            idle=float(utility.scale(utility.lower)),
            threshold=min(thresholds),
            bandwidth=bandwidths.pop() if len(bandwidths) == 1 else None,
            **radio,
        )

    @property
    def rate_unit(self) -> float:
        """Bit/s per unit of the model's rates."""
        return 1e6 if self.config is not None and self.config.thermal else 1.0

    @property
    def measured(self) -> str:
        """What a UE reports of each station it hears."""
        return "snr_db" if self.model is None else "rsrp_dbm"


class MeasuredNetwork:
    """One step of a measured network behind the arrays the engine's observation code reads
    (`StationArrays`: `topk_state`, `ue_columns`; `LinkArrays`: `link_state`), UEs in the
    request's order. `power`: (station, UE) linear SNR on mobile-env's model, received power
    (mW) under a radio model; `bandwidth` in Hz; `rate` in the model's units (`rate_unit`)."""

    def __init__(
        self,
        radio: Radio,
        power: np.ndarray,
        conn: np.ndarray,
        bandwidth: np.ndarray,
        rate: np.ndarray,
        load: np.ndarray,
    ) -> None:
        from mobrl.network.service import LinkState

        self.radio = radio
        # C order, as the engine's arrays: sums over stations then add in the engine's order
        power, conn = np.ascontiguousarray(power, dtype=float), np.ascontiguousarray(conn)
        self.conn = conn
        self.active = np.ones(power.shape[1], dtype=bool)
        self.bandwidth = bandwidth
        service = None
        if radio.model is None:
            self.snr = power
            self.reach = power > radio.threshold
            cap = np.where(self.reach, bandwidth[:, None] * np.log2(1 + power), 0.0)
        else:  # the engine's arithmetic (mobrl.network.radio_engine): SINRs with who transmits
            from mobrl.radio.links import reach_sinr

            service = _service(radio, power, bandwidth)
            self.snr = reach_sinr(radio.model, power, service.noise, conn)
            self.reach = self.snr > service.thr
            cap = service.capacity(self.snr, self.reach)
            if radio.model.separable:
                service = None
        self._links = LinkState(
            cap=cap,
            reach=self.reach & self.active[None, :],
            conn=conn & self.reach,
            active=self.active,
            lower=radio.lower,
            upper=radio.upper,
            coeffs=radio.coeffs,
            radio=service,
        )
        # each UE's utility over the last period, each station's UE count and mean utility
        # (its broadcast), as the engine keeps them after a step
        self.util = self._links.utility(rate)
        counts = conn.sum(axis=1)
        sums = (conn * self.util).sum(axis=1)
        self.bs_util = np.where(counts > 0, sums / np.maximum(counts, 1), radio.idle)
        self.counts = load.astype(float)

    def topk_state(self) -> dict[str, Any]:
        return {
            "snr": self.snr,
            "conn": self.conn,
            "reach": self.reach,
            "counts": self.counts,
            "bs_util": self.bs_util,
            "util": self.util,
            "idle": self.radio.idle,
        }

    def ue_columns(self) -> dict[int, int]:
        return {i: i for i in range(self.snr.shape[1])}

    def link_state(self) -> Any:
        return self._links


def _service(radio: Radio, rx: np.ndarray, bandwidth: np.ndarray) -> RadioService:
    """The radio state of received powers `rx` (mW) at stations of `bandwidth` (Hz), with the
    layout's noise and threshold, in the engine's operations."""
    from mobrl.radio.links import RadioService

    assert radio.config is not None and radio.model is not None
    bw_hz = bandwidth.astype(float)[:, None]
    bw = bw_hz / 1e6 if radio.config.thermal else bw_hz
    thr = np.full((1, rx.shape[1]), radio.threshold)
    return RadioService(radio.model, rx, _noise(radio, bandwidth, rx.shape), bw, thr)


def _noise(radio: Radio, bandwidth: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """(station, UE) noise power (mW) under the layout's radio model at stations of
    `bandwidth` (Hz): thermal noise over the band plus the noise figure, or the UEs' noise
    of mobile-env's Okumura-Hata."""
    assert radio.config is not None
    if radio.config.thermal:
        return np.broadcast_to(radio.config.noise_mw(bandwidth.astype(float)[:, None]), shape)
    return np.full(shape, radio.ue_noise)


class Decider:
    """Measurements to the policy's observations and its actions back to stations."""

    def __init__(self, policy: ServedPolicy) -> None:
        self.policy = policy
        self._radio: Radio | None = None
        self._building = threading.Lock()
        self.refusal = _refusal(policy)

    @property
    def ready(self) -> bool:
        """Whether the layout's constants are known (the first request builds them)."""
        return self._radio is not None or self.refusal is not None

    def radio(self) -> Radio:
        with self._building:
            if self._radio is None:
                self._radio = Radio.of_layout(self.policy.env_config)
        return self._radio

    def decide(self, stations: list[Any], ues: dict[str, Any], explore: bool) -> dict:
        """Each UE's station to toggle (None: keep its links)."""
        if self.refusal is not None:
            raise BadRequest(self.refusal, 400)
        from mobrl.envs.observations import handler_for, topk_station_actions

        network = self.network(stations, ues)
        config = self.policy.env_config
        k = int(config["topk"])
        handler = handler_for(config["obs"], "ma", k)
        rows = handler.rows(network, np.arange(len(ues)))
        names = list(ues)
        if config.get("decide", "at_once") == "in_turns":
            from mobrl.envs.turns import StepTurns

            def turn(group: np.ndarray, extra: np.ndarray) -> np.ndarray:
                acting = [names[c] for c in group.tolist()]
                x = np.concatenate([rows[group], extra], axis=1)
                chosen = self.policy.act(dict(zip(acting, x)), explore)
                return np.array([chosen[ue] for ue in acting], dtype=np.int64)

            by_name = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=int)
            rounds = int(config.get("turn_rounds") or 1)
            view = config.get("turn_obs") or "gains"
            slots = StepTurns(network, k, by_name, rounds, view).play(turn)
        else:
            chosen = self.policy.act(dict(zip(names, rows)), explore)
            slots = np.array([chosen[ue] for ue in ues], dtype=np.int64)
        toggles = topk_station_actions(network.topk_state(), slots, k)
        ids = [s.id for s in stations]
        return {ue: (ids[t - 1] if t > 0 else None) for ue, t in zip(ues, toggles.tolist())}

    def network(self, stations: list[Any], ues: dict[str, Any]) -> MeasuredNetwork:
        """The measurements as arrays, or a `BadRequest` naming the first bad value."""
        radio = self.radio()
        if not stations or not ues:
            raise BadRequest(
                "give at least one station and one UE: "
                '{"stations": [{"id": "A", "load": 0}], "ues": {"ue_0": {"snr_db": {"A": 10}}}}.'
            )
        index: dict[str, int] = {}
        for i, station in enumerate(stations):
            if station.id in index:
                raise BadRequest(f"station id {station.id!r} is listed twice. List each once.")
            index[station.id] = i
        bandwidth = np.empty(len(stations))
        for i, station in enumerate(stations):
            given = station.bandwidth_hz if station.bandwidth_hz is not None else radio.bandwidth
            if given is None:
                raise BadRequest(
                    f"station {station.id!r} has no bandwidth_hz, and the policy's layout has "
                    "stations of different bandwidths. Give bandwidth_hz for every station."
                )
            bandwidth[i] = given
        heard_db = np.full((len(stations), len(ues)), -np.inf)  # not heard: no power
        by_sinr = np.zeros(len(ues), dtype=bool)
        conn = np.zeros(heard_db.shape, dtype=bool)
        rate = np.zeros(len(ues))
        for j, (ue, measured) in enumerate(ues.items()):
            field, heard = _heard(measured, radio.measured, ue)
            by_sinr[j] = field == "sinr_db"
            for station, value in heard.items():
                heard_db[_station(index, station, ue, field), j] = _finite(value, ue, station)
            for station in measured.links:
                conn[_station(index, station, ue, "links"), j] = True
            rate[j] = _finite(measured.rate_bps, ue, "rate_bps") / radio.rate_unit
        load = np.array(
            [s.load if s.load is not None else conn[i].sum() for i, s in enumerate(stations)]
        )
        # linear SNR, or received power in mW (from SINRs: the layout's model inverted)
        power = 10.0 ** (heard_db / 10.0)
        if by_sinr.any():
            power = _powers_from_sinr(radio, power, by_sinr, conn, bandwidth, list(ues))
        return MeasuredNetwork(radio, power, conn, bandwidth, rate, load)


def _powers_from_sinr(
    radio: Radio,
    power: np.ndarray,
    by_sinr: np.ndarray,
    conn: np.ndarray,
    bandwidth: np.ndarray,
    names: list[str],
) -> np.ndarray:
    """`power` with the columns of the UEs that gave SINRs (`by_sinr`, linear there) turned
    into received powers (mW) by the layout's model inverted (`rx_from_sinr`), with who
    transmits under the request's links and the layout's noise."""
    from mobrl.radio.links import rx_from_sinr

    assert radio.model is not None
    noise = _noise(radio, bandwidth, power.shape)
    rx = rx_from_sinr(radio.model, power, noise, conn)
    bad = np.flatnonzero(by_sinr & np.isnan(rx).any(axis=0))
    if bad.size:
        raise BadRequest(
            f"UE {names[bad[0]]!r} gives sinr_db values that no received powers give: the "
            "stations that interfere with it have SINRs s with s/(1 + s) summing to 1 or "
            "more. Send SINRs measured together, with the links they were measured under, "
            "or rsrp_dbm."
        )
    return np.where(by_sinr[None, :], rx, power)


def _heard(measured: Any, field: str, ue: str) -> tuple[str, dict[str, float]]:
    """What the UE reports of the stations it hears, in a field its policy's model reads
    (`field`, or under a radio model also `sinr_db`), and the field's name."""
    if field == "rsrp_dbm":
        given = [f for f in ("rsrp_dbm", "sinr_db") if getattr(measured, f) is not None]
        if len(given) == 1:
            return given[0], getattr(measured, given[0])
        if given:
            raise BadRequest(f"UE {ue!r} gives both rsrp_dbm and sinr_db. Give one of them per UE.")
        raise BadRequest(
            f"UE {ue!r} gives no rsrp_dbm, and this policy's layout has a radio model "
            "(interference, its own channel): give rsrp_dbm, the received power (dBm) of "
            "every station the UE hears (the service works out the SINRs), or sinr_db, "
            "their SINRs (dB) under the request's links."
        )
    values = getattr(measured, field)
    if values is not None:
        return field, values
    raise BadRequest(
        f"UE {ue!r} gives no snr_db, and this policy plays mobile-env's model: give snr_db, "
        "the SNR (dB) of every station the UE hears."
    )


def _station(index: dict[str, int], station: str, ue: str, field: str) -> int:
    if station not in index:
        from mobrl.core.errors import closest_first

        known = ", ".join(closest_first(station, index)[:6])
        raise BadRequest(
            f"UE {ue!r} names station {station!r} in {field}, which is not in stations "
            f"({known}). List every station in stations."
        )
    return index[station]


def _finite(value: float, ue: str, what: str) -> float:
    if not np.isfinite(value):
        raise BadRequest(f"UE {ue!r} has {value} for {what}. Send finite numbers only.")
    return float(value)


def _refusal(policy: ServedPolicy) -> str | None:
    """Why /v1/decide cannot serve this policy, or None."""
    config = policy.env_config
    obs = config.get("obs")
    if obs is None:
        return (
            "/v1/decide serves policies of UE agents on mobile-env layouts; this one plays "
            f"{policy.scenario}. Use /v1/act."
        )
    from mobrl.scenarios.kinds.mobile import TOPK_OBSERVATIONS

    if config.get("mode") != "ma" or obs not in TOPK_OBSERVATIONS:
        return (
            "/v1/decide builds the slot observations of UE agents "
            f"({', '.join(TOPK_OBSERVATIONS)}); "
            f"this policy observes env.obs={obs} (env={config.get('mode')}). Use /v1/act."
        )
    return None
