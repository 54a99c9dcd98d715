"""Link budgets from Python: path loss, LOS probability, shadowing and noise of radio channels.

`path_loss_db`, `los_probability` and `shadowing_sigma_db` take a channel model by name
(`CHANNELS`: 3GPP TR 38.901 `uma` and `umi`, `free_space`, and mobile-env's default
`okumura_hata`) and broadcast over numpy arrays of distances, frequencies and heights;
`thermal_noise_dbm` completes the budget. Only numpy and `mobrl.core` are imported here, so the
package is cheap to use from scripts, notebooks and any layer of mobrl. docs/radio.md has the
formulas and their sources.
"""

from __future__ import annotations

from mobrl.radio.budget import los_probability, path_loss_db, shadowing_sigma_db, thermal_noise_dbm
from mobrl.radio.channels import CHANNELS, Channel, channel
from mobrl.radio.channels.base import SPEED_OF_LIGHT

__all__ = [
    "CHANNELS",
    "SPEED_OF_LIGHT",
    "Channel",
    "channel",
    "los_probability",
    "path_loss_db",
    "shadowing_sigma_db",
    "thermal_noise_dbm",
]
