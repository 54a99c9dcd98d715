"""The layout file's `radio:` section: its keys, their values and defaults, as one object.

mobile-env's model is the default (Okumura-Hata, no shadowing, no interference, resource-fair
shares, rates summed over a UE's links): a layout without a `radio:` section, or one whose
section only repeats these defaults, runs mobile-env's own arithmetic bit for bit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

CHANNEL_CHOICES = ("okumura_hata", "uma", "umi", "free_space")
INTERFERENCE_CHOICES = ("none", "full_buffer", "active")
SCHEDULER_CHOICES = ("resource_fair", "rate_fair", "proportional_fair")
JOINT_CHOICES = ("sum_rates", "noncoherent")

#: the UE's noise figure under the 3GPP channels and free space: 9 dB, the UE noise figure of
#: 38.901's calibration (TR 38.901 Table 7.8-1)
NOISE_FIGURE_DB = 9.0
#: the lowest SINR a link serves at under those channels: about where the lowest CQI of
#: TS 38.214 Table 5.2.2.1-2 (QPSK, code rate 78/1024) still decodes
SINR_THRESHOLD_DB = -7.0
#: the highest spectral efficiency under those channels: CQI 15 of TS 38.214 Table
#: 5.2.2.1-3 (256-QAM, code rate 948/1024), 7.4063 bit/s/Hz
MAX_SPECTRAL_EFFICIENCY = 7.4063


@dataclass(frozen=True)
class RadioConfig:
    """A layout's radio model. `noise_figure_db` and `sinr_threshold_db` apply to the 3GPP
    channels and free space; under `okumura_hata` the UEs' `noise` and `snr_threshold` keep
    mobile-env's meaning. `max_spectral_efficiency` None: the channel's default (capped at
    MAX_SPECTRAL_EFFICIENCY under the thermal-noise channels, not under okumura_hata)."""

    channel: str = "okumura_hata"
    shadowing: bool = False
    interference: str = "none"
    scheduler: str = "resource_fair"
    joint_transmission: str = "sum_rates"
    noise_figure_db: float = NOISE_FIGURE_DB
    sinr_threshold_db: float = SINR_THRESHOLD_DB
    max_spectral_efficiency: float | None = None

    @classmethod
    def of(cls, section: dict[str, Any] | None) -> RadioConfig:
        """From a validated layout's `radio` section (None or absent keys: the defaults)."""
        section = section or {}
        values = {f.name: section.get(f.name) for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if v is not None})

    @property
    def is_stock(self) -> bool:
        """Whether this is mobile-env's own model (the engine's stock arithmetic applies):
        its channel, scheduler and joint transmission, no shadowing, interference or cap (the
        noise figure and SINR threshold do not apply to its channel)."""
        stock = RadioConfig()
        return (
            replace(
                self,
                noise_figure_db=stock.noise_figure_db,
                sinr_threshold_db=stock.sinr_threshold_db,
            )
            == stock
        )

    @property
    def thermal(self) -> bool:
        """Whether noise is thermal noise over each station's bandwidth and the threshold an
        SINR in dB (every channel but mobile-env's Okumura-Hata)."""
        return self.channel != "okumura_hata"

    @property
    def spectral_cap(self) -> float | None:
        if self.max_spectral_efficiency is not None:
            return self.max_spectral_efficiency
        return MAX_SPECTRAL_EFFICIENCY if self.thermal else None

    def link_model(self) -> Any:
        """The parts of the model a step's service depends on (`mobrl.radio.links.LinkModel`)."""
        from mobrl.radio.links import LinkModel

        return LinkModel(
            self.interference, self.scheduler, self.joint_transmission, self.spectral_cap
        )

    @property
    def sinr_threshold(self) -> float:
        """The thermal-noise channels' SINR threshold, linear."""
        return 10 ** (self.sinr_threshold_db / 10)

    def noise_mw(self, bandwidth_hz: Any) -> Any:
        """The thermal-noise channels' noise (mW) over `bandwidth_hz`: thermal noise plus the
        noise figure."""
        from mobrl.radio.budget import thermal_noise_dbm

        return 10 ** (thermal_noise_dbm(bandwidth_hz, self.noise_figure_db) / 10)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: every key of the `radio:` section with its default (the schema's and the docs' list)
DEFAULTS: dict[str, Any] = RadioConfig().as_dict()
