"""`mobrl scenarios list | show | plot`: what scenarios there are, their parameters, a map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mobrl import scenarios
from mobrl.core.errors import UserError
from mobrl.scenarios.kinds import kind_of


def _other_scenarios() -> dict[str, dict[str, Any]]:
    """The scenario group's options that are not layout files (Gymnasium tasks, the arena)."""
    from importlib import resources

    folder = Path(str(resources.files("mobrl.conf").joinpath("scenario")))
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}


def list_scenarios(console: Any) -> None:
    """Print every scenario: layouts with their sizes and spaces per env mode, then others."""
    from rich.table import Table

    table = Table(title="mobile-env layouts (env=ma: an agent per UE; env=central: one agent)")
    columns = ("name", "stations", "UEs", "map (m)", "ma obs", "ma act", "central obs")
    for col in (*columns, "central act", "memory"):
        table.add_column(col, justify="right" if col in ("stations", "UEs", "memory") else "left")
    # a user's file is shown whole, folded over lines if need be, not cut short
    table.add_column("file", min_width=24, overflow="fold")
    builtin = scenarios.builtin_dir()
    for name, path in scenarios.discover().items():
        info = scenarios.summary(scenarios.load(path))
        where = "built-in" if path.parent == builtin else str(path)
        table.add_row(
            name, str(info["stations"]), str(info["ues"]), info["map"], info["ma_obs"],
            info["ma_act"], info["central_obs"], info["central_act"], info["memory"], where,
        )  # fmt: skip
    console.print(table)
    others = Table(title="other scenarios")
    for col in ("name", "kind", "spaces"):
        others.add_column(col)
    for name, conf in _other_scenarios().items():
        others.add_row(name, f"{conf['kind']} {conf['id']}", kind_of(conf).spaces(conf))
    console.print(others)
    console.print(
        f"Add your own: a YAML file in ./{scenarios.USER_DIR}/ (copy `mobrl scenarios show small`), "
        "then mobrl train scenario=<file name>."
    )


def find(name: str) -> Path:
    """The layout file of scenario `name` (or a .yaml path), or a one-line error."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    if name in _other_scenarios() and name not in scenarios.discover():
        raise UserError(
            f"scenario '{name}' is not a mobile-env layout (it has no base stations to show). "
            "Choose a layout from `mobrl scenarios list`."
        )
    return scenarios.path_of(name)


def show(name: str) -> str:
    """The layout with every default filled in, as YAML."""
    path = find(name)
    data = scenarios.load(path)
    header = f"# {name}: {path}\n# every key, defaults filled in (units: m, Hz, MHz, dBm)\n"
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def budget(
    name: str,
    at: str,
    seed: int | None,
    transmitting: str | None,
    json_out: Path | None,
    console: Any,
) -> Any:
    """`mobrl scenarios budget`: print the link budget of a UE at `at` ("X,Y") to every
    station of layout `name` in the first episode of `seed`, and write it as JSON to
    `json_out`; returns the `LinkBudget` (its header with the layout's name and file)."""
    import dataclasses

    from mobrl.core.files import atomic_write_json, check_writable
    from mobrl.scenarios import budget as lb
    from mobrl.scenarios.budget_table import print_budget

    x, y = lb.parse_at(at)
    if json_out is not None:
        json_out = Path(json_out).expanduser().absolute()
        if json_out.is_dir():
            raise UserError(
                f"--json '{json_out}' is a directory. Give a file name, e.g. {json_out}/budget.json."
            )
        check_writable(json_out.parent, "--json", example="./budget.json")
    path = find(name)
    data = scenarios.load(path)
    lb.check_on_map(x, y, data, name)
    choice = lb.parse_transmitting(transmitting, len(data["stations"]), name)
    result = lb.budget_at(data, x, y, seed, choice, name)
    result = dataclasses.replace(
        result, header={"layout": name, "file": str(path), **result.header}
    )
    print_budget(console, result, len(data["stations"]) <= LABELLED_STATIONS)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(json_out, result.as_json())
        console.print(f"json: {json_out}", markup=False)
    return result


#: layouts with more stations than this are drawn without each station's range outline
OUTLINED_STATIONS = 30
#: and with more than this, without station letters (A to Z)
LABELLED_STATIONS = 26
#: the SINR map's colours and colour-bar label
SINR_CMAP = "viridis"
SINR_LABEL = "best SINR (dB), every station transmitting"


def plot(name: str, out: Path, width_px: int, height_px: int, dpi: int = 100) -> Path:
    """A PNG of the layout: coverage depth, each station's range at the UE's SNR threshold,
    stations, and where the UEs start (first episode of the layout's seed). Large layouts
    (city scale) keep to what stays readable: smaller markers, no station letters, and the
    coverage depth alone instead of an outline per station. A layout whose radio section
    changes the SINR (another channel, interference) shows its best SINR instead, with the
    LOS and shadowing of that first episode."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from mobrl.scenarios.kinds.mobile import make_mobile_core
    from mobrl.scenarios.sinr_maps import shows_sinr_map, sinr_map

    out = _plot_target(out, width_px, height_px)
    data = scenarios.load(find(name))
    core = make_mobile_core(data, "ma", "fast")  # the UEs start where they do with central
    core.reset()
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    ax = fig.add_subplot()
    if shows_sinr_map(core):  # mobile-env's coverage would be its channel's, not this one's
        _draw_sinr_map(fig, ax, sinr_map(core))
    else:
        _draw_coverage(fig, ax, data, core)
    station_size = _draw_stations(ax, data)
    _draw_ues(ax, core, data["ues"]["count"])
    _label_map(ax, name, data, station_size)
    fig.tight_layout()
    _save_png(fig, out)
    return out


def _plot_target(out: Path, width_px: int, height_px: int) -> Path:
    """The absolute path of the PNG to write, after checking the size, the name and that its
    folder can be written."""
    from mobrl.core.files import check_writable

    if width_px < 100 or height_px < 100:
        raise UserError(f"--size {width_px}x{height_px} is too small. Use at least 100x100.")
    out = Path(out).expanduser().absolute()
    if out.suffix.lower() != ".png":
        raise UserError(f"--out '{out.name}' is not a .png file. End the name with .png.")
    check_writable(out.parent, "--out", example="./layout.png")
    return out


#: grid points per side of the coverage map under a layout's own channel class (each point a
#: call of its `snr` per station)
OWN_CHANNEL_POINTS = 150


def _coverage_depth(data: dict[str, Any], core: Any) -> Any:
    """How many stations cover each point of a grid over the map (at most 600 x 600 points):
    where a UE's SNR in mobile-env's channel (or the layout's own channel class) exceeds its
    threshold."""
    import numpy as np

    from mobrl.network import channel
    from mobrl.scenarios.budget import own_channel

    if own_channel(core):
        return _own_channel_depth(data, core)

    w, h = data["width"], data["height"]
    ue = data["ues"]
    xs = np.linspace(0, w, min(int(w) + 1, 600))
    ys = np.linspace(0, h, min(int(h) + 1, 600))
    gx, gy = np.meshgrid(xs, ys)
    in_range = np.zeros_like(gx, dtype=int)
    for s in data["stations"]:
        t1, t2 = channel.loss_terms(s["frequency"], s["height"], ue["height"])
        # only the grid points within the station's range (+2 m for the truncated positions)
        reach = 10 ** ((s["tx_power"] - t1 - 10 * np.log10(ue["snr_threshold"] * ue["noise"])) / t2)
        cols = slice(*np.searchsorted(xs, [s["x"] - reach - 2, s["x"] + reach + 2]))
        rows = slice(*np.searchsorted(ys, [s["y"] - reach - 2, s["y"] + reach + 2]))
        snr = channel.snr(
            t1,
            t2,
            s["tx_power"],
            ue["noise"],
            int(s["x"]) - np.trunc(gx[rows, cols]),
            int(s["y"]) - np.trunc(gy[rows, cols]),
        )
        in_range[rows, cols] += snr > ue["snr_threshold"]
    return in_range


def _draw_coverage(fig: Any, ax: Any, data: dict[str, Any], core: Any) -> None:
    """The coverage depth with its colour bar, and each station's range outlined (but in
    layouts with many stations, where the outlines would hide the depth)."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    from mobrl.network.channel import isolines

    in_range = _coverage_depth(data, core)
    depth = ax.imshow(
        in_range, origin="lower", extent=(0, data["width"], 0, data["height"]), cmap="Blues",
        vmin=0, vmax=max(int(in_range.max()), 1), alpha=0.8, aspect="equal",
    )  # fmt: skip
    # a colour bar as tall as the map, also for long thin layouts such as the highway
    bar_ax = make_axes_locatable(ax).append_axes("right", size="3%", pad=0.1)
    top = max(int(in_range.max()), 1)
    fig.colorbar(depth, cax=bar_ax, label="stations in range", ticks=range(top + 1))
    if len(data["stations"]) <= OUTLINED_STATIONS:
        for lx, ly in isolines(core, 0.0):
            ax.plot([*lx, lx[0]], [*ly, ly[0]], color="gray", linewidth=0.8)


def _own_channel_depth(data: dict[str, Any], core: Any) -> Any:
    """`_coverage_depth` through the layout's own channel class: its `snr` for a UE like the
    layout's at each point of a coarser grid (OWN_CHANNEL_POINTS a side)."""
    import copy

    import numpy as np

    ue = copy.copy(core.users[min(core.users)])
    xs = np.linspace(0, data["width"], min(int(data["width"]) + 1, OWN_CHANNEL_POINTS))
    ys = np.linspace(0, data["height"], min(int(data["height"]) + 1, OWN_CHANNEL_POINTS))
    depth = np.zeros((len(ys), len(xs)), dtype=int)
    for bs in core.stations.values():
        for i, y in enumerate(ys.tolist()):
            for j, x in enumerate(xs.tolist()):
                ue.x, ue.y = x, y
                depth[i, j] += core.channel.snr(bs, ue) > ue.snr_threshold
    return depth


def _draw_sinr_map(fig: Any, ax: Any, smap: Any) -> None:
    """The best SINR (dB) over the map with its colour bar, and the UEs' threshold as a
    contour where the map crosses it: where a UE could link to some station with every
    station transmitting."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    values, threshold = smap.values_db, smap.threshold_db
    low, high = smap.limits
    image = ax.imshow(
        values, origin="lower", extent=smap.extent, cmap=SINR_CMAP, aspect="equal",
        interpolation="nearest", vmin=low, vmax=high,
    )  # fmt: skip
    bar_ax = make_axes_locatable(ax).append_axes("right", size="3%", pad=0.1)
    bar = fig.colorbar(image, cax=bar_ax, label=SINR_LABEL, extend=smap.extend)
    if values.min() < threshold < values.max():
        ax.contour(
            values, levels=[threshold], extent=smap.extent, origin="lower", colors="red",
            linewidths=0.8,
        )  # fmt: skip
        if low <= threshold <= high:
            bar.ax.axhline(threshold, color="red", linewidth=1.0)
        # a legend entry for the contour (contour sets take no label)
        ax.plot([], [], color="red", linewidth=0.8, label=f"SINR threshold ({threshold:.4g} dB)")


def _draw_stations(ax: Any, data: dict[str, Any]) -> float:
    """The stations as triangles, lettered A to Z in small layouts; returns the marker size
    (points), which shrinks with the count beyond the small layouts'."""
    import numpy as np

    n_bs = len(data["stations"])
    station_size = 9 * min(1.0, (OUTLINED_STATIONS / n_bs) ** 0.5)
    xy = np.array([(s["x"], s["y"]) for s in data["stations"]])
    ax.plot(*xy.T, linestyle="none", marker="^", color="black", markersize=max(station_size, 2),
            label="station" if n_bs > LABELLED_STATIONS else None)  # fmt: skip
    if n_bs <= LABELLED_STATIONS:
        for i, (x, y) in enumerate(xy):
            ax.annotate(chr(ord("A") + i), (x, y), xytext=(5, 5), textcoords="offset points",
                        fontsize=8)  # fmt: skip
    return station_size


def _draw_ues(ax: Any, core: Any, n_ue: int) -> None:
    """Where the UEs start: filled if they are present from the start, hollow if they arrive
    later; the dots shrink with the count beyond the small layouts' (pt²)."""
    import numpy as np

    ue_area = 18 * min(1.0, (100 / n_ue) ** 0.5)
    starts = np.array([(u.x, u.y) for u in core.users.values()])
    active = {u.ue_id for u in core.active}
    present = np.array([u.ue_id in active for u in core.users.values()])
    ax.scatter(*starts[present].T, s=max(ue_area, 5), color="tab:orange", linewidths=0,
               label="UE (at start)", zorder=3)  # fmt: skip
    if (~present).any():
        ax.scatter(*starts[~present].T, s=max(ue_area, 5), facecolors="none",
                   edgecolors="tab:orange", label="UE (arrives later)", zorder=3)  # fmt: skip


def _label_map(ax: Any, name: str, data: dict[str, Any], station_size: float) -> None:
    """The map's extent, axis labels, title (the layout's size) and legend; the legend's
    station marker is enlarged to stay visible when the stations are drawn small."""
    ax.set_xlim(0, data["width"])
    ax.set_ylim(0, data["height"])
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(
        f"{name}: {len(data['stations'])} stations, {data['ues']['count']} UEs", fontsize=10
    )
    ax.legend(loc="upper right", fontsize=7, markerscale=max(1.0, 6 / max(station_size, 2)))


def _save_png(fig: Any, out: Path) -> None:
    """Write the figure to `out` whole or not at all (a partial file is renamed when done)."""
    import os

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.partial.png")
    try:
        FigureCanvasAgg(fig).print_png(str(tmp))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
