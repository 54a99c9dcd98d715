"""The dashboard of a mobile-env network drawn from recorded states (mobrl.rendering.frames):
`DashboardRenderer` draws `FrameState`s of one `Scene` on one reused figure whose static parts
(base stations, coverage isolines or the SINR map, axes) are drawn once, as the background the
moving parts are drawn on each frame."""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from mobrl.rendering.scene import RATE_UNIT, REACH_RATE, FrameState, Scene
from mobrl.scenarios.sinr_maps import SinrMap

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
        if state.note:  # the network agent's decision above the cells
            title += f"   {state.note}"
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
