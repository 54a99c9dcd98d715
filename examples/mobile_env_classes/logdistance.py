"""A mobile-env channel of your own, named by a mobrl layout file (`logdistance.yaml`).

The log-distance path-loss model (T. S. Rappaport, *Wireless Communications*, 2nd ed.,
eq. 4.68): a reference loss PL0 at distance d0, then 10 n dB per decade of distance, n the
path-loss exponent (2 in free space, about 2.7 to 3.5 in urban cells, 4 to 6 behind
obstructions):

    PL(d) = PL0 + 10 n log10(d / d0)

PL0 is the free-space loss at d0 unless given, 20 log10(d0 / m) + 20 log10(f / MHz) - 27.55.
mobile-env's own channel (Okumura-Hata) is such a law too: for its default station (50 m high,
2.5 GHz) and UE (1.5 m) it is PL0 = 134.9 dB at 1 m and n = 3.38 (33.8 dB per decade), and
mobile-env's UE noise and SNR threshold are set for losses of that size.

mobile-env calls `power_loss(bs, ue)` for every link (its `Channel.snr` turns the loss into
the received power over the UE's noise); a station's frequency is in MHz, positions in m.
"""

from __future__ import annotations

import math

from mobile_env.core.channels import Channel
from mobile_env.core.entities import BaseStation, UserEquipment


class LogDistance(Channel):
    """Log-distance path loss with exponent `exponent` from `reference_loss_db` at
    `reference_m` metres (None: the free-space loss there); nearer UEs get the loss at
    `reference_m`."""

    def __init__(
        self,
        exponent: float = 3.0,
        reference_m: float = 1.0,
        reference_loss_db: float | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)  # mobile-env passes a seed too
        if exponent <= 0 or reference_m <= 0:
            raise ValueError(
                f"exponent and reference_m must be positive, got {exponent} and {reference_m}"
            )
        self.exponent = float(exponent)
        self.reference_m = float(reference_m)
        self.reference_loss_db = reference_loss_db

    def power_loss(self, bs: BaseStation, ue: UserEquipment) -> float:
        distance = max(bs.point.distance(ue.point), self.reference_m)
        loss0 = self.reference_loss_db
        if loss0 is None:  # free space at the reference distance
            loss0 = 20 * math.log10(self.reference_m) + 20 * math.log10(bs.frequency) - 27.55
        return loss0 + 10 * self.exponent * math.log10(distance / self.reference_m)
