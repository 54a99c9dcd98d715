"""mobile-env's network dashboard as video frames: record each step, draw frames on one figure.

mobile-env's own `render()` builds a new matplotlib figure for every frame and reads the live
simulation, so frames can only be drawn one after another while stepping (0.2-0.6 s each).
Here a rollout records what the dashboard shows (`FrameState`, a few numbers per UE: this
module), and a `DashboardRenderer` (mobrl.rendering.dashboard) draws frames on one reused
figure whose static parts (base stations, coverage isolines, axes) are drawn once; frames can
then be drawn in parallel processes.
A layout whose radio section changes the SINR (another channel, interference) shows, instead
of mobile-env's coverage isolines, a map of the best SINR under the episode's LOS and shadowing
(`mobrl.scenarios.sinr_maps.SinrMap`), computed once per episode (`episode_scene`).
The layout and colours follow mobile-env's dashboard, with units that agree with each other
and with mobile-env's definitions (its own dashboard calls one rate "GB/s" and another "MB/s",
and draws scaled utility beside an unscaled colour scale and axis):

- data rates in mobile-env's unit, bit/s: a link's rate is `bs.bw * log2(1 + snr)`
  (`mobile_env.core.channels.Channel.datarate`) with the bandwidth in Hz
  (`mobile_env.core.entities.BaseStation.bw`);
- utility on one scale everywhere, mobile-env's scaled utility in [-1, 1]
  (`BoundedLogUtility.scale`, what its rewards are built from and what its monitor records);
- time in env steps (`MComCore.time`, one per `step()`, up to `EP_MAX_TIME`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mobrl.network.channel import isolines
from mobrl.rendering.dashboard import (  # noqa: F401 (imported from here by others)
    _CELLS,
    MEAN_UTILITY_LABEL,
    SINR_CMAP,
    SINR_LABEL,
    TIME_LABEL,
    UTILITY_SCALE,
    DashboardRenderer,
)
from mobrl.rendering.scene import RATE_UNIT, REACH_RATE, FrameState, Scene
from mobrl.scenarios.sinr_maps import (  # noqa: F401 (SinrMap: imported from here by others)
    SinrMap,
    shows_sinr_map,
    sinr_map,
)


def scene_of(core: Any) -> Scene:
    """The static part of the dashboard of a mobile-env core (after reset)."""
    stations = sorted(core.stations.values(), key=lambda bs: bs.bs_id)
    smap = sinr_map(core) if shows_sinr_map(core) else None
    return Scene(
        width=core.width,
        height=core.height,
        stations=[(bs.bs_id, float(bs.point.x), float(bs.point.y)) for bs in stations],
        conn_isolines=isolines(core, 0.0) if smap is None else [],
        rate_isolines=isolines(core, REACH_RATE) if smap is None else [],
        lower=float(core.utility.lower),
        upper=float(core.utility.upper),
        max_time=int(core.EP_MAX_TIME),
        num_users=len(core.users),
        scaled_range=(
            float(core.utility.scale(core.utility.lower)),
            float(core.utility.scale(core.utility.upper)),
        ),
        sinr=smap,
        rate_unit=rate_unit_of(core),
        power_unit=_power_model(core).unit if _power_model(core) is not None else None,
    )


def _power_model(core: Any) -> Any:
    """The engine's power model (mobrl.network.power_engine), None without one."""
    model = getattr(core, "power_model", None)
    return model() if model is not None else None


def rate_unit_of(core: Any) -> str:
    """The unit of `core`'s data rates: Mbit/s under a thermal-noise channel (bandwidths in
    MHz: mobrl.network.radio_engine), mobile-env's bit/s otherwise."""
    live = getattr(core, "_radio", None)
    return "Mbit/s" if live is not None and live.cfg.thermal else RATE_UNIT


def episode_scene(core: Any, previous: Scene | None) -> Scene:
    """The scene of a new episode of the same layout (`core` after its reset): `previous`
    itself under mobile-env's model (nothing of it changes), with this episode's SINR map
    otherwise (its LOS and shadowing are the episode's). Once per episode, not per frame."""
    if previous is None:
        return scene_of(core)
    if previous.sinr is None:
        return previous
    return dataclasses.replace(previous, sinr=sinr_map(core))


def record_state(core: Any, episode: int, episode_return: float) -> FrameState:
    """Read what the dashboard shows from a mobile-env core right after a step."""
    scale, unscale = core.utility.scale, core.utility.unscale
    ues = [
        (ue.ue_id, float(int(ue.x)), float(int(ue.y)), float(u)) for ue, u in core.utilities.items()
    ]
    links = []
    macro, rates = core.macro, core.datarates
    for bs, connected in core.connections.items():
        for ue in connected:
            total = macro.get(ue, 0.0)
            share = rates.get((bs, ue), 0.0) / total if total else 0.0
            utility = unscale(core.utilities.get(ue, -1.0))
            links.append(
                (float(int(bs.x)), float(int(bs.y)), float(int(ue.x)), float(int(ue.y)))
                + (float(scale(share * utility)),)
            )
    results = core.monitor.scalar_results
    asleep, power = [], None
    if _power_model(core) is not None:
        states, _ = core.cell_states()
        asleep = np.flatnonzero(states > 0).tolist()
        power = float(core.cell_powers().sum())
    return FrameState(
        episode=episode,
        time=int(core.time),
        episode_return=float(episode_return),
        ues=ues,
        links=links,
        mean_utility=[float(v) for v in results["mean utility"]],
        mean_datarate=[float(v) for v in results["mean datarate"]],
        connected=[int(v) for v in results["number connected"]],
        asleep=asleep,
        power=power,
        note=getattr(core, "frame_note", None),
    )


_RENDERERS: dict[Any, DashboardRenderer] = {}


def draw_frames(scene: Scene, states: list[FrameState]) -> list[np.ndarray]:
    """Draw `states` in order (one renderer per scene and process, reused across calls)."""
    key = (
        scene.width,
        scene.height,
        tuple(scene.stations),
        scene.num_users,
        scene.sinr is None,
        scene.power_unit,
    )
    if key not in _RENDERERS:
        _RENDERERS.clear()
        _RENDERERS[key] = DashboardRenderer(scene)
    renderer = _RENDERERS[key]
    renderer.show_sinr(scene.sinr)
    return [renderer.draw(state) for state in states]
