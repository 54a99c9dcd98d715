"""Load profiles over a day, one module each, named in `_MODULES`: `flat` (the same load at
every hour), `diurnal` (a published daily traffic curve) and `file` (the user's 24 values)."""

from __future__ import annotations

from mobrl.core.registry import load_registry
from mobrl.traffic.base import Profile

_MODULES = ("flat", "diurnal", "file")

#: every load profile by name
PROFILES: dict[str, Profile] = load_registry(__name__, _MODULES, "PROFILE")
