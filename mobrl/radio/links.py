"""A step's service under a radio model: each link's SINR given who transmits, and each
link's rate given the links up (interference, joint transmission and the scheduler).

Everything works on dense (station, UE) arrays of received powers `rx` and noise powers
`noise` (both mW), so the fast engine, the service arithmetic the references search with
(mobrl.network.service.LinkState) and `mobrl radio budget` compute the same numbers with the same
operations.

- Who transmits (`interference`): `none`, nobody interferes (mobile-env's model);
  `full_buffer`, every station always transmits (the calibration assumption of 38.901 system
  simulations); `active`, the stations serving at least one UE transmit, an idle one is silent.
- A link's SINR is its received power over the noise plus the received power of every other
  transmitting station. Under `sum_rates` every link of a UE carries its own data, so a UE's
  other stations interfere with it too; under `noncoherent` joint transmission the powers of a
  UE's stations add (TR 36.819 §5.1.3, non-coherent JT) and only the others interfere.
- A link carries data when its SINR (noncoherent: the UE's joint SINR) is above the UE's
  threshold; its rate with all of its station's resources is bandwidth × log2(1 + SINR),
  capped at the layout's highest spectral efficiency when it has one.
- The scheduler (mobrl.radio.schedulers) gives each link its share. Under `noncoherent` the
  UE's stations send on the same resources, so the UE gets the smallest of its stations'
  shares (in Hz), at its joint SINR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mobrl.radio.schedulers import Scheduler, scheduler


@dataclass(frozen=True)
class LinkModel:
    """The parts of a radio model a step's service depends on, besides the powers."""

    interference: str
    scheduler: str
    joint_transmission: str
    spectral_cap: float | None

    @property
    def separable(self) -> bool:
        """Whether rates are mobile-env's arithmetic on per-link capacities: no interference,
        resource-fair shares, rates summed over a UE's links."""
        return (
            self.interference == "none"
            and self.scheduler == "resource_fair"
            and self.joint_transmission == "sum_rates"
        )

    def sched(self) -> Scheduler:
        return scheduler(self.scheduler)


def transmitting(model: LinkModel, conn: np.ndarray) -> np.ndarray | None:
    """Which stations transmit with the links `conn` up (None: interference is off)."""
    on = _transmitting_sets(model, conn[None])
    return None if on is None else on[0]


def _heard(rx: np.ndarray, on: np.ndarray) -> np.ndarray:
    """The received powers of the stations `on`, 0 from the others."""
    return rx if on.all() else np.where(on[:, None], rx, 0.0)


def interference_sum(rx: np.ndarray, on: np.ndarray) -> np.ndarray:
    """Each UE's summed received power from the stations `on` (station order, no BLAS: the
    same sum whatever kernel OpenBLAS picks)."""
    return _heard(rx, on).sum(axis=0)


def link_sinr(rx: np.ndarray, noise: np.ndarray, on: np.ndarray | None) -> np.ndarray:
    """(station, UE) SINR of every link when the stations `on` transmit (None: SNR)."""
    if on is None:
        return rx / noise
    own = _heard(rx, on)
    return rx / (noise + (own.sum(axis=0)[None, :] - own))


def reach_sinr(model: LinkModel, rx: np.ndarray, noise: np.ndarray, conn: np.ndarray) -> np.ndarray:
    """(station, UE) SINR that decides where a UE may link, with the stations transmitting
    under the links `conn`: `link_sinr`; under non-coherent joint transmission a UE's own
    linked stations send its data, so they do not interfere with its links."""
    on = transmitting(model, conn)
    if on is None or model.joint_transmission != "noncoherent":
        return link_sinr(rx, noise, on)
    heard = _heard(rx, on)
    total = heard.sum(axis=0)
    linked = np.where(conn, heard, 0.0).sum(axis=0)
    return rx / (noise + (total - linked)[None, :] - np.where(conn, 0.0, heard))


def rx_from_sinr(
    model: LinkModel, sinr: np.ndarray, noise: np.ndarray, conn: np.ndarray
) -> np.ndarray:
    """The received powers (mW) behind `reach_sinr`'s SINRs, its inverse: what a controller
    that measures SINRs (not received powers) gives, with the links `conn` that decide who
    transmits and the noise `noise` (mW), both as `reach_sinr` takes them.

    Per UE, let I be the power of the transmitting stations that interfere with its links
    (all that transmit; under noncoherent joint transmission all but the UE's own). A station
    that interferes has SINR s = rx / (noise + I − rx), so rx = s / (1 + s) · (noise + I); any
    other has s = rx / (noise + I), so rx = s · (noise + I). Summing the first over the
    interferers gives I = Σ s/(1+s) · noise / (1 − Σ s/(1+s)). A UE whose interferers' shares
    Σ s/(1+s) reach 1 has no such powers: its column is NaN."""
    noise = np.broadcast_to(noise, sinr.shape)
    on = transmitting(model, conn)
    if on is None:
        return sinr * noise
    interferes = np.broadcast_to(on[:, None], sinr.shape)
    if model.joint_transmission == "noncoherent":
        interferes = interferes & ~conn
    share = np.where(interferes, sinr / (1.0 + sinr), 0.0)
    left = 1.0 - share.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        interference = np.where(left > 0, (share * noise).sum(axis=0) / left, np.nan)
    return np.where(interferes, share, sinr) * (noise + interference[None, :])


def spectral_efficiency(sinr: np.ndarray, cap: float | None) -> np.ndarray:
    se = np.log2(1 + sinr)
    return se if cap is None else np.minimum(se, cap)


def carried_rate(
    model: LinkModel,
    signal: np.ndarray,
    noise: np.ndarray,
    interference: np.ndarray | None,
    thr: np.ndarray,
    bw: np.ndarray,
) -> np.ndarray:
    """A link's rate with all of its station's resources: `bw` × the spectral efficiency at
    SINR signal / (noise + interference) (None: no interference), 0 where that SINR is not
    above the UE's threshold `thr` (the link carries nothing)."""
    sinr = signal / (noise if interference is None else noise + interference)
    return np.where(sinr > thr, bw * spectral_efficiency(sinr, model.spectral_cap), 0.0)


def link_rates(
    model: LinkModel,
    rx: np.ndarray,
    noise: np.ndarray,
    bw: np.ndarray,
    thr: np.ndarray,
    conn: np.ndarray,
    caps: np.ndarray | None = None,
) -> np.ndarray:
    """(station, UE) rate of every link up in `conn` (0 elsewhere and where a link carries
    nothing); leading axes of `conn` are several link sets, computed at once as one network of
    disjoint copies (the same operations per set as alone). `noise` (mW) broadcastable to
    (station, UE), `bw` (station, 1), `thr` (1, UE) linear SINR thresholds. `caps`, an array
    shaped as `conn` (links carrying their own data), receives each link's `carried_rate`."""
    shape = conn.shape
    sets = conn.reshape(-1, *shape[-2:])
    n_sets, n_bs, n_ue = sets.shape
    on = _transmitting_sets(model, sets)
    k, u, b = np.nonzero(sets.transpose(0, 2, 1))  # links sorted by set, UE, station
    gb, gu = k * n_bs + b, k * n_ue + u  # every set's stations and UEs as one network
    noise = np.broadcast_to(noise, (n_bs, n_ue))
    total = None if on is None else _interference_sets(rx, on)
    cap = model.spectral_cap
    out = np.zeros(sets.shape)
    if model.joint_transmission == "noncoherent":
        sinr = _joint_sinr_sets(rx, noise, sets, total)
        se = np.where(sinr > thr, spectral_efficiency(sinr, cap), 0.0)
        full = bw[b, 0] * se[k, u]
        share = _joint_scheduler(model).shares(gb, gu, full, n_sets * n_bs, n_sets * n_ue)
        # the UE's stations send on common resources: the smallest of its shares (in rate
        # units per bit/s/Hz), at the UE's joint SINR, counted on its links in equal parts
        least = np.full(n_sets * n_ue, np.inf)
        np.minimum.at(least, gu, share * bw[b, 0])
        links = np.bincount(gu, minlength=n_sets * n_ue)
        ue_rate = np.where(links > 0, np.where(links > 0, least, 0.0) * se.ravel(), 0.0)
        out[k, b, u] = ue_rate[gu] / links[gu]
        return out.reshape(shape)
    signal = rx[b, u]
    others = None if total is None else total[k, u] - np.where(on[k, b], signal, 0.0)
    full = carried_rate(model, signal, noise[b, u], others, thr[0, u], bw[b, 0])
    share = model.sched().shares(gb, gu, full, n_sets * n_bs, n_sets * n_ue)
    out[k, b, u] = share * full
    if caps is not None:  # each link's rate with all its station's resources, too
        caps[...] = 0.0
        caps.reshape(sets.shape)[k, b, u] = full
    return out.reshape(shape)


def _joint_scheduler(model: LinkModel) -> Scheduler:
    """The scheduler under non-coherent joint transmission: a UE's stations serve it together
    on common resources, so it has no separate links to trade between them and proportional
    fair gives each station's UEs equal time, its allocation for UEs of one station."""
    if model.scheduler == "proportional_fair":
        return scheduler("resource_fair")
    return model.sched()


def _transmitting_sets(model: LinkModel, sets: np.ndarray) -> np.ndarray | None:
    """`transmitting` of each of several link sets (sets, station)."""
    if model.interference == "none":
        return None
    if model.interference == "full_buffer":
        return np.ones(sets.shape[:2], dtype=bool)
    return sets.any(axis=2)


def _interference_sets(rx: np.ndarray, on: np.ndarray) -> np.ndarray:
    """(sets, UE) summed received power from each set's transmitting stations `on` (sets,
    station), added in station order as `interference_sum` adds them."""
    return np.where(on[:, :, None], rx[None], 0.0).sum(axis=1)


def _joint_sinr_sets(
    rx: np.ndarray, noise: np.ndarray, sets: np.ndarray, total: np.ndarray | None
) -> np.ndarray:
    """(sets, UE) SINR under non-coherent joint transmission (see `joint_sinr`)."""
    signal = np.where(sets, rx[None], 0.0).sum(axis=1)
    floor = np.where(sets, noise[None], 0.0).max(axis=1)
    interf = 0.0 if total is None else total - signal
    linked = sets.any(axis=1)
    return np.where(linked, signal / np.where(linked, floor + interf, 1.0), 0.0)


def joint_sinr(model: LinkModel, rx: np.ndarray, noise: np.ndarray, conn: np.ndarray) -> np.ndarray:
    """Each UE's SINR under non-coherent joint transmission from its stations in `conn`: their
    powers add, the other transmitting stations interfere; the noise is that over the widest
    bandwidth of its stations (0 for a UE without links)."""
    sets = conn[None]
    on = _transmitting_sets(model, sets)
    total = None if on is None else _interference_sets(rx, on)
    return _joint_sinr_sets(rx, np.broadcast_to(noise, conn.shape), sets, total)[0]


@dataclass(frozen=True)
class RadioService:
    """One step's radio state for recomputing rates under other links: the model, received
    powers `rx` and `noise` (mW), bandwidths `bw` and thresholds `thr`."""

    model: LinkModel
    rx: np.ndarray
    noise: np.ndarray
    bw: np.ndarray
    thr: np.ndarray

    def link_rates(self, conn: np.ndarray) -> np.ndarray:
        """(..., station, UE) rate of each link under the links `conn`."""
        return link_rates(self.model, self.rx, self.noise, self.bw, self.thr, conn)

    def rates(self, conn: np.ndarray) -> np.ndarray:
        """Each UE's summed rate under the links `conn` (leading axes: several link sets), the
        links' rates added in station order as the engine adds them."""
        return self.link_rates(conn).sum(axis=-2)

    def capacity(self, sinr: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """(station, UE) rate of each link in range with all of its station's resources."""
        return np.where(reach, self.bw * spectral_efficiency(sinr, self.model.spectral_cap), 0.0)
