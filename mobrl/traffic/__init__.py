"""Traffic: how much each UE asks for (`demand`) and how the load changes over a day
(`profile`), the layout's `traffic:` section. Numbers only, beside `mobrl.radio` and
`mobrl.energy` (numpy and `mobrl.core`).

    traffic:
      demand: full_buffer            # | {model: constant, mbps: 5}
                                     # | {model: ftp3, file_mb: 0.5, mean_interval_s: 2}
      profile: flat                  # | diurnal | {file: PATH}
      hour: null                     # the hour of the day an episode starts at (null: drawn)

An episode is a stretch of one day: it starts at `hour` (drawn uniformly from [0, 24) for
each episode unless given) and its clock runs `step_seconds` per step. At each step a UE is
present when its own uniform draw (made at the episode's start) lies below the profile's
value at that time, so the profile is the share of the layout's UEs present, the same UEs
stay while the load holds and the lowest draws stay longest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError, unknown_choice
from mobrl.traffic.base import Demand, Profile, at_hour, check_hourly
from mobrl.traffic.demands import DEMANDS
from mobrl.traffic.profiles import PROFILES

__all__ = ["DEMANDS", "PROFILES", "Demand", "Profile", "at_hour", "check_hourly", "check"]

#: the keys of `traffic:` with their defaults
DEFAULTS: dict[str, Any] = {"demand": "full_buffer", "profile": "flat", "hour": None}


def check(section: Any, base: Any = None) -> dict[str, Any]:
    """A layout's `traffic:` section completed and checked: `demand` as {model, params...},
    `profile` as a name or {file: absolute path}, `hour`; or a one-line `UserError`."""
    if not isinstance(section, dict):
        raise UserError("traffic must be a mapping (demand:, profile:). See docs/energy.md.")
    unknown = sorted(set(section) - set(DEFAULTS))
    if unknown:
        raise unknown_choice("key traffic", unknown[0], DEFAULTS, "Remove it (docs/energy.md).")
    data = {**DEFAULTS, **section}
    out = {"demand": check_demand(data["demand"]), "profile": data["profile"], "hour": None}
    hourly(out["profile"], base)  # refuse a bad profile now
    profile = data["profile"]
    if isinstance(profile, dict):
        out["profile"] = {"file": str(_resolve(profile["file"], base))}
    hour = data["hour"]
    if hour is not None:
        if isinstance(hour, bool) or not isinstance(hour, int | float) or not 0 <= hour < 24:
            raise UserError(
                f"traffic.hour={hour!r} is not an hour of the day: give a number from 0 to "
                "below 24, or null to draw one per episode."
            )
        out["hour"] = float(hour)
    return out


def check_demand(spec: Any) -> dict[str, Any]:
    """`traffic.demand` as {"model": name, **params}, or a one-line `UserError`."""
    if isinstance(spec, str):
        spec = {"model": spec}
    if not isinstance(spec, dict) or "model" not in spec:
        raise UserError(
            f"traffic.demand={spec!r} is not a demand: give a model name (full_buffer) or a "
            "mapping such as {model: constant, mbps: 5}."
        )
    name = spec["model"]
    model = demand_model(name)
    params = model.check({k: v for k, v in spec.items() if k != "model"}, "traffic.demand")
    return {"model": name, **params}


def demand_model(name: Any) -> Demand:
    if isinstance(name, str) and name in DEMANDS:
        return DEMANDS[name]
    raise unknown_choice("traffic.demand model", str(name), DEMANDS, "Use one of mobrl's.")


def hourly(spec: Any, base: Any = None) -> np.ndarray:
    """The 24 hourly values of the profile `spec` (a name or {file: PATH})."""
    if isinstance(spec, dict):
        if set(spec) != {"file"}:
            raise UserError(
                f"traffic.profile={spec!r}: a profile of your own is {{file: PATH}}; "
                f"the others are named: {', '.join(n for n in PROFILES if n != 'file')}."
            )
        return PROFILES["file"].hourly(spec, base)
    if spec == "file" or not isinstance(spec, str) or spec not in PROFILES:
        raise unknown_choice(
            "traffic.profile",
            str(spec),
            [n for n in PROFILES if n != "file"],
            "Or give your own as {file: PATH}.",
        )
    return PROFILES[spec].hourly(spec, base)


def _resolve(path: Any, base: Any) -> Any:
    from pathlib import Path

    p = Path(str(path))
    return p if p.is_absolute() or base is None else (Path(base) / p).resolve()
