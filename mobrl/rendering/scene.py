"""What the dashboard of a mobile-env network shows, as plain data: the `Scene` of an episode
(drawn once) and a `FrameState` per step (mobrl.rendering.frames records them, and
mobrl.rendering.dashboard draws them), picklable for drawing in worker processes."""

from __future__ import annotations

from dataclasses import dataclass, field

from mobrl.scenarios.sinr_maps import SinrMap

#: the unit of mobile-env's data rates: bandwidth [Hz] * log2(1 + SNR) [bit/s/Hz]
RATE_UNIT = "bit/s"
#: the rate that the black isoline marks, in RATE_UNIT (mobile-env's dashboard draws the same
#: isoline, `bs_isolines(1.0)`, and calls it "1 MB/s")
REACH_RATE = 1.0


@dataclass
class Scene:
    """What does not change during an episode: map, base stations and their coverage (all
    but a radio layout's SINR map stay for the whole rollout)."""

    width: float
    height: float
    stations: list[tuple[int, float, float]]
    #: per BS: isoline of connectivity (SNR threshold) and of REACH_RATE, as (xs, ys)
    conn_isolines: list[tuple[list[float], list[float]]]
    rate_isolines: list[tuple[list[float], list[float]]]
    lower: float
    upper: float
    max_time: int
    num_users: int
    #: the scaled utility's range: mobile-env's reward scale, that of the colour bar, the table
    #: and the plot (`lower`, `upper` are the unscaled bounds it maps from)
    scaled_range: tuple[float, float] = (-1.0, 1.0)
    #: the episode's best-SINR map where the radio model is not mobile-env's (then there are
    #: no isolines: they are mobile-env's channel's); None: mobile-env's model
    sinr: SinrMap | None = None
    #: the unit of the engine's rates: mobile-env's, or Mbit/s under a thermal-noise channel
    rate_unit: str = RATE_UNIT
    #: the unit of the layout's power model (None: the layout has no power: section)
    power_unit: str | None = None


@dataclass
class FrameState:
    """What one frame shows: the network after a step, and the episode's history so far."""

    episode: int
    time: int
    episode_return: float
    #: (ue_id, x, y, scaled utility) of the UEs active in the step
    ues: list[tuple[int, float, float, float]]
    #: (bs x, bs y, ue x, ue y, the link's share of its UE's utility, scaled): mobile-env's
    #: link colour, share * unscaled utility, on the scaled utility's scale
    links: list[tuple[float, float, float, float, float]]
    mean_utility: list[float] = field(default_factory=list)
    mean_datarate: list[float] = field(default_factory=list)
    connected: list[int] = field(default_factory=list)
    #: the stations asleep or waking (a layout with power:; drawn grey) and the network's
    #: power in the step (None: no power model)
    asleep: list[int] = field(default_factory=list)
    power: float | None = None
    #: what a controller above the cells decided (`frame_note`: the network agent's λ)
    note: str | None = None
