"""`mobrl scenarios list|show|plot|budget|power|generate|import`: layouts as files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mobrl.cli.app import app, interruptible
from mobrl.core.errors import UserError

scenarios_app = typer.Typer(
    help="List, inspect and plot scenarios (mobile-env layouts as YAML, Gymnasium tasks).",
    no_args_is_help=True,
)
app.add_typer(scenarios_app, name="scenarios")


@scenarios_app.command("list")
def scenarios_list() -> None:
    """Every scenario: stations, UEs, map size, and the spaces of each env mode."""
    from mobrl.core.console import make_console
    from mobrl.scenarios.commands import list_scenarios

    list_scenarios(make_console())


@scenarios_app.command("show")
def scenarios_show(
    name: Annotated[str, typer.Argument(help="Scenario name (or a .yaml file).")],
) -> None:
    """A layout with every parameter resolved (defaults filled in), as YAML."""
    from mobrl.scenarios.commands import show

    print(show(name), end="")


@scenarios_app.command("plot")
@interruptible
def scenarios_plot(
    name: Annotated[str, typer.Argument(help="Scenario name (or a .yaml file).")],
    out: Annotated[Path, typer.Option("--out", help="PNG file to write.")] = Path("layout.png"),
    size: Annotated[
        str, typer.Option("--size", help="Image size in pixels, WIDTHxHEIGHT.")
    ] = "900x700",
) -> None:
    """A map of a layout: stations, their coverage at the SNR threshold (or, with a radio
    section, the best SINR), UE start positions."""
    from mobrl.scenarios.commands import plot

    try:
        width, height = (int(v) for v in size.lower().split("x"))
    except ValueError:
        raise UserError(
            f"--size '{size}' is not WIDTHxHEIGHT. Write e.g. --size 900x700."
        ) from None
    written = plot(name, out, width, height)
    print(f"plot: {written} ({width}x{height} px)")


LayoutOut = Annotated[
    Path, typer.Option("--out", help="Layout file to write (.yaml; use it as scenario.path=).")
]
LayoutUes = Annotated[
    str,
    typer.Option("--ues", help="UEs: a count (1000) or a density over the map (800/km2)."),
]
LayoutSize = Annotated[
    str | None,
    typer.Option(
        "--size", help="Map WIDTHxHEIGHT in metres [default: the stations' extent + margin]."
    ),
]
LayoutMargin = Annotated[
    float | None,
    typer.Option(
        "--margin", min=0, help="Metres around the stations' extent [default: half the spacing]."
    ),
]
LayoutSeed = Annotated[
    int, typer.Option("--seed", min=0, help="Seed of random placement and of the layout.")
]
LayoutForce = Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")]
StationBandwidth = Annotated[
    float | None, typer.Option("--bandwidth", min=0, help="Station bandwidth (Hz).")
]
StationFrequency = Annotated[
    float | None, typer.Option("--frequency", min=0, help="Station frequency (MHz).")
]
StationPower = Annotated[float | None, typer.Option("--tx-power", help="Station power (dBm).")]
StationHeight = Annotated[
    float | None, typer.Option("--station-height", min=0, help="Station height (m).")
]


LayoutRadio = Annotated[
    list[str] | None,
    typer.Option(
        "--radio",
        help="A key of the layout's radio section, KEY=VALUE (repeat it): e.g. --radio "
        "channel=uma --radio interference=active (docs/radio.md).",
    ),
]
LayoutMovement = Annotated[
    list[str] | None,
    typer.Option(
        "--movement",
        help="A key of the movement section, KEY=VALUE (repeat it): e.g. --movement "
        "model=gauss_markov --movement alpha=0.75.",
    ),
]


LayoutPower = Annotated[
    list[str] | None,
    typer.Option(
        "--power",
        help="A key of the layout's power section, KEY=VALUE (repeat it): e.g. --power "
        "model=tr38864 --power category=1 (docs/energy.md).",
    ),
]
LayoutTraffic = Annotated[
    list[str] | None,
    typer.Option(
        "--traffic",
        help="A key of the traffic section, KEY=VALUE (repeat it): e.g. --traffic "
        "profile=diurnal --traffic 'demand={model: constant, mbps: 5}'.",
    ),
]
LayoutStep = Annotated[
    float | None,
    typer.Option("--step-seconds", help="A step's duration (s) [default: 1]."),
]


def _layout_options(
    out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, height, radio, movement,
    power=None, traffic=None, step_seconds=None,
):  # fmt: skip
    from mobrl.scenarios.generate import Options, parse_pairs

    given = {"bandwidth": bandwidth, "frequency": frequency, "tx_power": tx_power}
    station = {k: v for k, v in {**given, "height": height}.items() if v is not None}
    for key, value in station.items():
        if key != "tx_power" and value <= 0:
            flag = "--station-height" if key == "height" else f"--{key}"
            raise UserError(f"{flag} {value:g} must be > 0. Give a positive value.")
    return Options(
        ues, out, size, margin, seed, force, station,
        parse_pairs(radio or [], "--radio"), parse_pairs(movement or [], "--movement"),
        parse_pairs(power or [], "--power"), parse_pairs(traffic or [], "--traffic"),
        step_seconds,
    )  # fmt: skip


@scenarios_app.command("generate")
def scenarios_generate(
    sites: Annotated[
        str,
        typer.Option(
            "--sites",
            help="hex:N (hexagonal grid, the N sites nearest its centre), hex:COLSxROWS (a "
            "rectangular block of it), poisson:DENSITY (stations per km², needs --size) or "
            "uniform:N (N at random, needs --size).",
        ),
    ],
    out: LayoutOut,
    ues: LayoutUes,
    isd: Annotated[
        float | None,
        typer.Option("--isd", min=1, help="Inter-site distance of hex sites (m) [default: 90]."),
    ] = None,
    size: LayoutSize = None,
    margin: LayoutMargin = None,
    seed: LayoutSeed = 0,
    force: LayoutForce = False,
    bandwidth: StationBandwidth = None,
    frequency: StationFrequency = None,
    tx_power: StationPower = None,
    station_height: StationHeight = None,
    radio: LayoutRadio = None,
    movement: LayoutMovement = None,
    power: LayoutPower = None,
    traffic: LayoutTraffic = None,
    step_seconds: LayoutStep = None,
) -> None:
    """Write a layout file of generated stations (city scale), its command in its header."""
    from mobrl.scenarios.generate import generate_command

    opts = _layout_options(
        out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, station_height,
        radio, movement, power, traffic, step_seconds,
    )  # fmt: skip
    print(f"generate: {generate_command(sites, isd, opts)}")


@scenarios_app.command("import")
def scenarios_import(
    stations: Annotated[
        Path, typer.Argument(help="CSV with columns x,y (metres) or lat,lon (degrees).")
    ],
    out: LayoutOut,
    ues: LayoutUes,
    size: LayoutSize = None,
    margin: LayoutMargin = None,
    seed: LayoutSeed = 0,
    force: LayoutForce = False,
    bandwidth: StationBandwidth = None,
    frequency: StationFrequency = None,
    tx_power: StationPower = None,
    station_height: StationHeight = None,
    radio: LayoutRadio = None,
    movement: LayoutMovement = None,
    power: LayoutPower = None,
    traffic: LayoutTraffic = None,
    step_seconds: LayoutStep = None,
) -> None:
    """Write a layout file with the stations of a CSV (e.g. an OpenCelliD export)."""
    from mobrl.scenarios.generate import import_command

    opts = _layout_options(
        out, ues, size, margin, seed, force, bandwidth, frequency, tx_power, station_height,
        radio, movement, power, traffic, step_seconds,
    )  # fmt: skip
    print(f"import: {import_command(stations, opts)}")


@scenarios_app.command("budget")
def scenarios_budget(
    name: Annotated[str, typer.Argument(help="Scenario name (or a .yaml file).")],
    at: Annotated[
        str, typer.Option("--at", help="The UE's position X,Y in metres, e.g. --at 120,80.")
    ],
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            min=0,
            help="Episode seed, which fixes LOS and shadowing (default: the layout's seed).",
        ),
    ] = None,
    transmitting: Annotated[
        str | None,
        typer.Option(
            "--transmitting",
            help="The interferers: all (full buffer), none (SNR) or station ids, e.g. 0,3,5 "
            "(default: all if the layout has interference, else none).",
        ),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the rows and header as JSON.")
    ] = None,
) -> None:
    """A UE position's link budget per station: distances, LOS, path loss, shadowing,
    received power, SINR and rate, as the engine computes them."""
    from mobrl.core.console import make_console
    from mobrl.scenarios.commands import budget

    budget(name, at, seed, transmitting, json_out, make_console())


@scenarios_app.command("power")
def scenarios_power(
    model: Annotated[str, typer.Argument(help="Power model: tr38864 or earth.")],
    category: Annotated[
        int | None, typer.Option("--category", help="tr38864: BS category 1 or 2.")
    ] = None,
    config: Annotated[
        int | None,
        typer.Option("--config", help="tr38864: reference configuration set 1, 2 or 3."),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option("--kind", help="earth: macro, rrh, micro, pico or femto."),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the rows and settings as JSON.")
    ] = None,
) -> None:
    """A base station's power in each state of a power model, at loads 0, 0.5 and 1, and what
    waking from each sleep state takes (docs/energy.md)."""
    from mobrl.core.console import make_console
    from mobrl.scenarios.power import power

    params = {"category": category, "config": config, "kind": kind}
    power(model, params, json_out, make_console())
