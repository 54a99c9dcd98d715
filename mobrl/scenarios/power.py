"""`mobrl scenarios power`: a base station's power in each state of a power model
(`mobrl.energy`), at no load, half load and full load, and what waking from each sleep state
costs, as a table and optionally as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the loads the table shows (the share of a station's resources in use)
LOADS = (0.0, 0.5, 1.0)


def power_rows(name: str, params: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The model and one row per state: its power at each of `LOADS`, and its wake-up time
    (s) and extra energy (power unit x s)."""
    from mobrl.energy import model, station_power

    chosen = model(name)
    checked = chosen.check({k: v for k, v in params.items() if v is not None})
    rows = []
    for state in chosen.states:
        powers = station_power(name, state, list(LOADS), **checked)
        wake = chosen.transition(state, checked)
        rows.append(
            {
                "state": state,
                **{f"load {load:g}": float(p) for load, p in zip(LOADS, powers)},
                "wake s": wake.seconds,
                "wake energy": wake.energy,
            }
        )
    return chosen, rows


def power(name: str, params: dict[str, Any], json_out: Path | None, console: Any) -> None:
    """Print `power_rows` as a table (and write them, with the model's settings, as JSON)."""
    from rich.table import Table

    from mobrl.core.files import atomic_write_json

    chosen, rows = power_rows(name, params)
    checked = chosen.check({k: v for k, v in params.items() if v is not None})
    settings = ", ".join(f"{k}={v}" for k, v in checked.items())
    table = Table(title=f"{name} ({settings}): power in {chosen.unit}")
    for column in rows[0]:
        table.add_column(column, justify="left" if column == "state" else "right")
    for row in rows:
        table.add_row(*(row["state"], *(f"{v:g}" for k, v in row.items() if k != "state")))
    console.print(table)
    if json_out is not None:
        data = {"model": name, "unit": chosen.unit, "settings": checked, "rows": rows}
        atomic_write_json(json_out, data)
        console.print(f"written: {json_out}")
