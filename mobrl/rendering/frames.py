"""mobile-env's network dashboard as video frames: record each step, draw frames on one figure.

mobile-env's own `render()` builds a new matplotlib figure for every frame and reads the live
simulation, so frames can only be drawn one after another while stepping (0.2-0.6 s each).
Here a rollout records what the dashboard shows (`FrameState`, a few numbers per UE), and a
`DashboardRenderer` draws frames on one reused figure whose static parts (base stations,
coverage isolines, axes) are drawn once; frames can then be drawn in parallel processes.
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
import string
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mobrl.envs.channel import isolines
from mobrl.scenarios.sinr_maps import SinrMap, shows_sinr_map, sinr_map

#: the unit of mobile-env's data rates: bandwidth [Hz] * log2(1 + SNR) [bit/s/Hz]
RATE_UNIT = "bit/s"
#: the rate that the black isoline marks, in RATE_UNIT (mobile-env's dashboard draws the same
#: isoline, `bs_isolines(1.0)`, and calls it "1 MB/s")
REACH_RATE = 1.0
#: the utility scale of the colour bar, the table's column and the plot's axis
UTILITY_SCALE = "(scaled)"
MEAN_UTILITY_LABEL = f"Avg. utility\n{UTILITY_SCALE}"
#: the unit of the time axis and of the title's t
TIME_LABEL = "Time [env steps]"
#: the SINR map's colours and its colour bar's label (radio layouts)
SINR_CMAP = "viridis"
SINR_LABEL = "best SINR [dB]\nevery station transmitting"
#: dashboard table cells: current and history of mean data rate and mean utility
_CELLS = ((1, 0), (1, 1), (2, 0), (2, 1))


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
    """The engine's power model (mobrl.envs.power_engine), None without one."""
    model = getattr(core, "power_model", None)
    return model() if model is not None else None


def rate_unit_of(core: Any) -> str:
    """The unit of `core`'s data rates: Mbit/s under a thermal-noise channel (bandwidths in
    MHz: mobrl.envs.radio_engine), mobile-env's bit/s otherwise."""
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
    )


class DashboardRenderer:
    """Draws `FrameState`s of one `Scene` into RGB arrays, reusing one figure."""

    def __init__(self, scene: Scene, dpi: int = 100):
        from matplotlib import colormaps
        from matplotlib.colors import Normalize
        from mobile_env.core.util import BS_SYMBOL

        self.scene = scene
        self.cmap = colormaps["RdYlGn"]
        self.norm = Normalize(*scene.scaled_range)
        sim, dash, qoe, conn = self._figure(scene, dpi)
        self.sinr_image, self.sinr_bar = None, None
        self._sinr: SinrMap | None = None
        if scene.sinr is not None:
            self._add_sinr_map(sim, scene.sinr)
        # moving parts are "animated": left out of the background, drawn on it each frame
        self._add_stations(sim, scene, BS_SYMBOL)
        self.power_unit = scene.power_unit
        for (cx, cy), (rx, ry) in zip(scene.conn_isolines, scene.rate_isolines):
            sim.scatter(cx, cy, color="gray", s=3)
            sim.scatter(rx, ry, color="black", s=3)
        self._legend(sim, BS_SYMBOL, isolines=scene.sinr is None)
        self._add_network(sim)
        for ax in (sim, dash):
            ax.get_xaxis().set_visible(False)
            ax.get_yaxis().set_visible(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
        sim.set_xlim([0, scene.width])
        sim.set_ylim([0, scene.height])
        self._add_table(dash, scene.rate_unit)
        self._add_plots(qoe, conn, scene)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        self.moving = [
            self.links,
            *self.stations,
            self.ue_dots,
            *self.station_names,
            self.title,
            *self.table_texts.values(),
            self.utility_line,
            self.connected_line,
        ]

    def _figure(self, scene: Scene, dpi: int) -> tuple[Any, Any, Any, Any]:
        """The figure and its axes: the map on the left; the table, the mean utility and the
        connected UEs over time on the right."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        # mobile-env's figure size, rounded to whole pixels of even size (video encoders)
        fx = max(3.0 / 2.0 * 1.25 * scene.width / dpi, 8.0)
        fy = max(1.25 * scene.height / dpi, 5.0)
        fx, fy = (2 * round(v * dpi / 2) / dpi for v in (fx, fy))
        self.fig = Figure(figsize=(fx, fy), dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        gs = self.fig.add_gridspec(
            ncols=2,
            nrows=3,
            width_ratios=(4, 2),
            height_ratios=(2, 3, 3),
            hspace=0.45,
            wspace=0.2,
            top=0.95,
            bottom=0.15,
            left=0.025,
            right=0.955,
        )
        sim = self.fig.add_subplot(gs[:, 0])
        dash = self.fig.add_subplot(gs[0, 1])
        qoe = self.fig.add_subplot(gs[1, 1])
        conn = self.fig.add_subplot(gs[2, 1])
        return sim, dash, qoe, conn

    def _add_stations(self, sim: Any, scene: Scene, bs_symbol: Any) -> None:
        """The base stations and their letters on the map, redrawn each frame: the stations
        over the links (as in mobile-env), their letters over UEs passing by."""
        self.stations = [
            sim.plot(
                x,
                y,
                marker=bs_symbol,
                markersize=30,
                markeredgewidth=0.1,
                color="black",
                animated=True,
            )[0]
            for _, x, y in scene.stations
        ]
        # on a light box, so that a letter stays readable over a UE
        self.station_names = [
            sim.annotate(
                string.ascii_uppercase[bs_id % 26],
                xy=(x, y),
                xytext=(0, -25),
                ha="center",
                va="bottom",
                textcoords="offset points",
                fontweight="bold",
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
                zorder=4,
                animated=True,
            )
            for bs_id, x, y in scene.stations
        ]

    def _add_sinr_map(self, sim: Any, smap: SinrMap) -> None:
        """The best-SINR map under everything else, its colour bar under the map's right end
        (the utility's is under its left end)."""
        low, high = smap.limits
        self.sinr_image = sim.imshow(
            smap.values_db, origin="lower", extent=smap.extent, cmap=SINR_CMAP, aspect="auto",
            interpolation="nearest", zorder=-3, vmin=low, vmax=high,
        )  # fmt: skip
        cax = sim.inset_axes([0.72, -0.075, 0.28, 0.022])
        self.sinr_bar = self.fig.colorbar(
            self.sinr_image, cax=cax, orientation="horizontal", extend=smap.extend
        )
        self.sinr_bar.set_label(SINR_LABEL, fontsize=7, labelpad=1)
        self.sinr_bar.ax.tick_params(labelsize=6, length=2, pad=1)
        self._sinr = smap

    def show_sinr(self, smap: SinrMap | None) -> None:
        """Show another episode's SINR map (the background is drawn again only when the map
        changes: once per episode)."""
        old = self._sinr
        if smap is None or old is None or smap is old:
            return
        if np.array_equal(smap.values_db, old.values_db):
            self._sinr = smap
            return
        self.sinr_image.set_data(smap.values_db)
        self.sinr_image.set_clim(*smap.limits)
        self._sinr = smap
        # the table draws its cells' texts itself, animated or not: blank them, or the
        # background would keep the last frame's values under every later frame's
        shown = {key: text.get_text() for key, text in self.table_texts.items()}
        for text in self.table_texts.values():
            text.set_text("")
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        for key, text in self.table_texts.items():
            text.set_text(shown[key])

    def _add_network(self, sim: Any) -> None:
        """What changes on the map each frame: the links, the UEs and the title."""
        import matplotlib.patheffects as pe
        from matplotlib.collections import LineCollection

        self.links = LineCollection(
            [],
            linewidths=3,
            zorder=-1,
            path_effects=[pe.SimpleLineShadow(shadow_color="black"), pe.Normal()],
            animated=True,
        )
        sim.add_collection(self.links)
        self.ue_dots = sim.scatter([], [], s=200, zorder=2, marker="o", animated=True)
        # UE ids as mathtext markers: drawn from a cached path, several times faster per frame
        # than a text artist (font layout and glyph rendering on every draw)
        self._sim = sim
        self.ue_labels: dict[int, Any] = {}
        self.title = sim.set_title("", fontsize=10, loc="left", animated=True)

    def _add_table(self, dash: Any, rate_unit: str = RATE_UNIT) -> None:
        """The table of the current and the episode's mean data rate and utility."""
        self.table = dash.table(
            [["", ""], ["", ""]],
            rowLabels=["Current", "History"],
            colLabels=[f"Avg. DR\n[{rate_unit}]", MEAN_UTILITY_LABEL],
            cellLoc="center",
            edges="B",
            loc="upper center",
            bbox=[0.0, -0.25, 1.0, 1.25],
        )
        self.table.auto_set_font_size(False)
        self.table.set_fontsize(11)
        self.table_texts = {key: self.table[key].get_text() for key in _CELLS}
        for text in self.table_texts.values():
            text.set_animated(True)

    def _add_plots(self, qoe: Any, conn: Any, scene: Scene) -> None:
        """The mean utility and the number of connected UEs over the episode's steps."""
        (self.utility_line,) = qoe.plot([], [], linewidth=1, color="black", animated=True)
        qoe.set_ylabel(MEAN_UTILITY_LABEL)
        qoe.set_xlim([0.0, scene.max_time])
        low, high = scene.scaled_range
        qoe.set_ylim([low - 0.05 * (high - low), high + 0.05 * (high - low)])
        (self.connected_line,) = conn.plot([], [], linewidth=1, color="black", animated=True)
        conn.set_xlabel(TIME_LABEL)
        conn.set_ylabel("#Conn. UEs")
        conn.set_xlim([0.0, scene.max_time])
        conn.set_ylim([0.0, scene.num_users])
        self.fig.align_ylabels((qoe, conn))

    def _legend(self, sim: Any, bs_symbol: Any, isolines: bool = True) -> None:
        """What the colours and marks mean, under the map: a colour bar of UE utility on the
        table's and plot's scale (a link is shaded by its share of its UE's utility) and a key
        of the other marks (the isolines' only where they are drawn)."""
        from matplotlib.cm import ScalarMappable
        from matplotlib.lines import Line2D

        cax = sim.inset_axes([0.0, -0.075, 0.32, 0.022])
        self.colorbar = bar = self.fig.colorbar(
            ScalarMappable(self.norm, self.cmap), cax=cax, orientation="horizontal"
        )
        bar.set_label(f"UE utility {UTILITY_SCALE}\nlink: its share", fontsize=7, labelpad=1)
        bar.ax.tick_params(labelsize=6, length=2, pad=1)
        dot = {"linestyle": "none", "markersize": 4}
        handles = [
            Line2D([], [], marker=bs_symbol, color="black", markersize=9, linestyle="none",
                   label="base station (A, B, ...)"),
            Line2D([], [], marker="o", color="gold", markersize=7, linestyle="none",
                   label="UE (its id; colour: utility)"),
            Line2D([], [], marker=".", color="gray", label="edge of coverage (SNR threshold)", **dot),
            Line2D([], [], marker=".", color="black", label=f"{REACH_RATE:g} {RATE_UNIT} reach",
                   **dot),
        ]  # fmt: skip
        if not isolines:  # the SINR map's colour bar takes the isolines' place
            handles = handles[:2]
        if self.power_unit is not None:  # cells that sleep
            handles.append(Line2D([], [], marker=bs_symbol, color="silver", markersize=9,
                                  linestyle="none", label="station asleep"))  # fmt: skip
        self.legend = sim.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(0.36, -0.005),
            ncol=2 if isolines else 1,
            fontsize=7, frameon=False, handletextpad=0.3, columnspacing=1.0,
        )  # fmt: skip

    def _ue_label(self, ue_id: int) -> Any:
        if ue_id not in self.ue_labels:
            text = str(ue_id)
            size = 7.5 * (1 + 0.45 * (len(text) - 1))  # mathtext markers scale to their width
            self.ue_labels[ue_id] = self._sim.scatter(
                [], [], marker=f"${text}$", s=size**2, c="black", linewidths=0,
                zorder=3, animated=True,
            )  # fmt: skip
        return self.ue_labels[ue_id]

    def draw(self, state: FrameState) -> np.ndarray:
        """The frame of `state` as an (height, width, 3) uint8 array."""
        ues = state.ues
        offsets = np.array([(x, y) for _, x, y, _ in ues]).reshape(-1, 2)
        self.ue_dots.set_offsets(offsets)
        self.ue_dots.set_facecolors([self.cmap(self.norm(u)) for *_, u in ues])
        labels = []
        for ue_id, x, y, _ in ues:
            label = self._ue_label(ue_id)
            label.set_offsets([(x, y)])
            labels.append(label)
        self.links.set_segments([[(bx, by), (ux, uy)] for bx, by, ux, uy, _ in state.links])
        self.links.set_colors([self.cmap(self.norm(share)) for *_, share in state.links])
        title = f"episode {state.episode}   t = {state.time}   return {state.episode_return:.2f}"
        if state.power is not None:  # cells that sleep: asleep grey, the network's power
            title += f"   power {state.power:.4g} ({self.power_unit})   asleep {len(state.asleep)}"
        self.title.set_text(title)
        asleep = set(state.asleep)
        for i, marker in enumerate(self.stations):
            marker.set_color("silver" if i in asleep else "black")

        steps = np.arange(len(state.mean_utility))
        self.utility_line.set_data(steps, state.mean_utility)
        self.connected_line.set_data(np.arange(len(state.connected)), state.connected)
        rate = state.mean_datarate
        util = state.mean_utility
        values = (
            rate[-1] if rate else None,
            util[-1] if util else None,
            np.mean(rate) if rate else None,
            np.mean(util) if util else None,
        )
        for key, value in zip(_CELLS, values):
            self.table_texts[key].set_text("-" if value is None else f"{value:.3f}")

        self.canvas.restore_region(self.background)
        for artist in self.moving:
            self.fig.draw_artist(artist)
            if artist is self.ue_dots:  # ids on top of their dots
                for label in labels:
                    self.fig.draw_artist(label)
        rgba = np.asarray(self.canvas.buffer_rgba())
        return rgba[:, :, :3].copy()


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
