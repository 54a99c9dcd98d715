"""Link-budget terms by model name: path loss, LOS probability, shadowing sigma, thermal noise."""

from __future__ import annotations

import numpy as np

from mobrl.radio.channels import Channel, channel
from mobrl.radio.channels.base import ArrayLike, FloatResult

#: thermal noise density at 290 K, dBm/Hz (10 log10(k T0 / 1 mW) = -173.98, rounded as usual)
NOISE_DENSITY_DBM_HZ = -174.0


def _model(model: str | Channel) -> Channel:
    return model if isinstance(model, Channel) else channel(model)


def path_loss_db(
    model: str | Channel,
    distance_2d_m: ArrayLike,
    frequency_ghz: ArrayLike,
    bs_height_m: ArrayLike | None = None,
    ue_height_m: ArrayLike = 1.5,
    los: ArrayLike = True,
) -> FloatResult:
    """Deterministic path loss in dB (no shadowing) of `model` (a name of `CHANNELS` or a
    `Channel`), broadcast over every argument. `bs_height_m` None is the model's default BS
    height; `los` (a bool or bool array) is ignored by models without a LOS state."""
    ch = _model(model)
    h_bs = ch.default_bs_height_m if bs_height_m is None else bs_height_m
    return ch.path_loss_db(distance_2d_m, frequency_ghz, h_bs, ue_height_m, los)


def los_probability(
    model: str | Channel, distance_2d_m: ArrayLike, ue_height_m: ArrayLike = 1.5
) -> FloatResult:
    """The LOS probability of `model` at a 2D distance (m) and UE height (m), broadcast; a
    `ValueError` for a model without a LOS state (okumura_hata)."""
    return _model(model).los_probability(distance_2d_m, ue_height_m)


def shadowing_sigma_db(model: str | Channel, los: ArrayLike = True) -> FloatResult:
    """The shadow-fading standard deviation (dB) of `model` in LOS or NLOS (a bool or bool
    array); a `ValueError` for a model without shadowing (`Channel.has_shadowing` False)."""
    ch = _model(model)
    if ch.sigma_los_db is None or ch.sigma_nlos_db is None:
        raise ValueError(f"{ch.name} has no shadowing sigma (see Channel.has_shadowing)")
    return np.where(np.asarray(los, dtype=bool), ch.sigma_los_db, ch.sigma_nlos_db)[()]


def thermal_noise_dbm(bandwidth_hz: ArrayLike, noise_figure_db: ArrayLike = 0.0) -> FloatResult:
    """Thermal noise power in dBm over `bandwidth_hz`: -174 + 10 log10(B) + NF."""
    bandwidth = np.asarray(bandwidth_hz, dtype=np.float64)
    if np.any(bandwidth <= 0):
        raise ValueError("bandwidth_hz must be > 0 (Hz)")
    noise_figure = np.asarray(noise_figure_db, dtype=np.float64)
    return (NOISE_DENSITY_DBM_HZ + 10.0 * np.log10(bandwidth) + noise_figure)[()]
