"""The text of `mobrl scenarios budget`: a `LinkBudget` (mobrl.scenarios.budget) as header
lines (where, the channel, noise, threshold, power and interferers), a table of the stations,
strongest received power first, and notes."""

from __future__ import annotations

from typing import Any


def _values(values: list[float], unit: str, fmt: str = "g") -> str:
    """One value, or the distinct values of the stations, with the unit."""
    return ", ".join(format(v, fmt) for v in values) + f" {unit}"


def _budget_header(b: Any) -> list[str]:
    """The lines above the table: where, the channel, noise, threshold and interferers."""
    h = b.header
    where = (
        f"link budget of {h['layout']} ({h['file']}) at x={h['x_m']:g} m, y={h['y_m']:g} m, "
        f"episode seed {h['seed']}"
    )
    radio = _thermal_lines(h) if b.thermal else _stock_lines(h)
    minus = " - shadowing" if b.thermal else ""
    ratio = (
        "SNR = rx / noise"
        if h["transmitting"] == "none"
        else ("SINR = rx / (noise + rx of the other transmitting stations)")
    )
    power = (
        f"power: tx {_values(h['tx_power_dbm'], 'dBm')}; rx = tx - path loss{minus}; {ratio}, in mW"
    )
    return [where, *radio, power, _interferers(h)]


def _carrier(h: dict[str, Any]) -> tuple[str, str, str]:
    """The carrier frequencies, the heights, and the spectral-efficiency cap, as text."""
    freq = _values(h["frequency_mhz"], "MHz")
    heights = f"BS height {_values(h['bs_height_m'], 'm')}, UE height {h['ue_height_m']:g} m"
    cap = h["max_spectral_efficiency"]
    capped = (
        f"spectral efficiency capped at {cap:g} bit/s/Hz" if cap else "no spectral-efficiency cap"
    )
    return freq, heights, capped


def _thermal_lines(h: dict[str, Any]) -> list[str]:
    """Channel, carrier, noise and threshold under a thermal-noise channel."""
    freq, heights, capped = _carrier(h)
    fc = _values([f / 1000.0 for f in h["frequency_mhz"]], "GHz")
    shadowing = "shadowing on" if h["shadowing"] else "no shadowing"
    # one noise per distinct bandwidth, both sorted: the noise grows with the bandwidth
    noise = ", ".join(
        f"-174 dBm/Hz + 10 log10({bw:g} Hz) + {h['noise_figure_db']:g} dB NF = {n:.2f} dBm"
        for bw, n in zip(h["bandwidth_hz"], h["noise_dbm"])
    )
    return [
        f"channel: {h['channel']} ({h['channel_source']}), {shadowing}",
        f"carrier: fc {fc} ({freq}), {heights}",
        f"noise: {noise}",
        f"threshold: SINR {h['threshold_db']:g} dB; {capped}",
    ]


def _stock_lines(h: dict[str, Any]) -> list[str]:
    """Channel, carrier, noise and threshold under mobile-env's channel (or the layout's own
    channel class)."""
    freq, heights, capped = _carrier(h)
    source = "the layout's own class" if h.get("own_class") else "mobile-env's default"
    noise_mw = 10 ** (h["noise_dbm"][0] / 10)
    thr = 10 ** (h["threshold_db"] / 10)
    return [
        f"channel: {h['channel']} ({source}: {h['channel_source']}), no LOS state, no shadowing",
        f"carrier: {freq}, {heights}",
        f"noise: {noise_mw:.3g} mW = {h['noise_dbm'][0]:.2f} dBm (the layout's ues.noise: "
        "mobile-env's fixed noise power, not from the bandwidth)",
        f"threshold: SNR {thr:.3g} = {h['threshold_db']:.2f} dB (ues.snr_threshold); {capped}",
    ]


def _interferers(h: dict[str, Any]) -> str:
    """Which stations transmit, and the layout's own interference setting."""
    tx = h["transmitting"]
    if tx == "all":
        who = "every station (full buffer)"
    elif tx == "none":
        who = "none (the SNR)"
    else:
        who = "stations " + ", ".join(str(i) for i in tx)
    default = "none" if h["interference"] == "none" else "all"
    return (
        f"interferers: {who}; the layout's interference: {h['interference']} "
        f"(--transmitting all|none|IDS, default here: {default})"
    )


def print_budget(console: Any, b: Any, lettered: bool) -> None:
    """The header lines, the table (strongest received power first) and the notes."""
    from rich.table import Table

    for line in _budget_header(b):
        console.print(line, markup=False)
    snr = "SNR" if b.header["transmitting"] == "none" else "SINR"
    rate_head = "rate (Mbit/s)" if b.thermal else "rate (bit/s, mobile-env's unit)"
    columns = ["station", "d2D (m)"]
    if b.thermal:
        columns += ["d3D (m)", "P(LOS)", "LOS"]
    columns += ["path loss (dB)"]
    if b.thermal:
        columns += ["shadowing (dB)"]
    columns += ["rx (dBm)", f"{snr} (dB)", rate_head]
    listed = isinstance(b.header["transmitting"], list)
    if listed:
        columns.append("transmits")
    table = Table()
    for col in columns:
        table.add_column(col, justify="left" if col in ("LOS", "transmits") else "right")
    for r in b.rows:
        station = str(r["station"])
        if lettered:  # the letters of `mobrl scenarios plot` and the render dashboard
            station += f" ({chr(ord('A') + r['station'])})"
        cells = [station, f"{r['distance_2d_m']:.1f}"]
        if b.thermal:
            cells += [
                f"{r['distance_3d_m']:.1f}", f"{r['los_probability']:.3f}",
                "LOS" if r["los"] else "NLOS",
            ]  # fmt: skip
        cells.append(f"{r['path_loss_db']:.2f}")
        if b.thermal:
            cells.append(f"{r['shadowing_db']:.2f}")
        rate = r[b.rate_key]
        cells += [
            f"{r['rx_power_dbm']:.2f}", f"{r['sinr_db']:.2f}",
            f"{rate:.3f}" if b.thermal else f"{rate:.4g}",
        ]  # fmt: skip
        if listed:
            cells.append("yes" if r["transmits"] else "")
        table.add_row(*cells, style=None if r["above_threshold"] else "dim")
    console.print(table)
    notes = [
        "rate: the UE's from that station alone with all of its resources; 0 (dimmed) below "
        "the threshold. --json FILE writes every value unrounded.",
        *b.notes,
    ]
    for note in notes:
        console.print(note, markup=False)
