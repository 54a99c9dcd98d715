"""The layout file's optional energy sections: `power:` (a base-station power model and the
sleep states stations may enter, `mobrl.energy`), `traffic:` (each UE's demand and the load
over a day, `mobrl.traffic`) and `step_seconds` (a step's duration). A layout without them
keeps exactly the data, and the episodes, it had before they existed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError

#: the optional top-level keys, in the order they are checked
KEYS = ("power", "traffic", "step_seconds")


def check(data: dict[str, Any], path: Path) -> None:
    """Check and complete the energy sections of `data` in place; a one-line `UserError`
    naming the file and the key."""
    from mobrl import energy, traffic

    try:
        if "power" in data:
            data["power"] = energy.check(data["power"])
        if "traffic" in data:
            data["traffic"] = traffic.check(data["traffic"], Path(path).parent)
            joint = (data.get("radio") or {}).get("joint_transmission", "sum_rates")
            finite = data["traffic"]["demand"]["model"] != "full_buffer"
            if finite and joint != "sum_rates":
                raise UserError(
                    f"traffic.demand {data['traffic']['demand']['model']} with "
                    f"radio.joint_transmission: {joint} is not modelled: use sum_rates, or "
                    "demand: full_buffer."
                )
        if "step_seconds" in data:
            data["step_seconds"] = energy.check_step_seconds(data["step_seconds"])
    except UserError as err:
        raise UserError(f"scenario file '{path}': {err}") from None


def energy_config(data: dict[str, Any]) -> dict[str, Any]:
    """What the fast engine reads of the sections ({}: none of them)."""
    out = {key: data[key] for key in KEYS if key in data}
    if out and "step_seconds" not in out:
        out["step_seconds"] = 1.0
    return out
