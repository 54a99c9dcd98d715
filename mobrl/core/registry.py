"""Registries of variants, one module each (channels, schedulers, mobility and power models):
the modules a package names, each defining one variant under a fixed attribute."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any


def load_registry(package: str, modules: Sequence[str], attribute: str) -> dict[str, Any]:
    """{name: variant} for each module of `package` in `modules`, in that order: the module's
    `attribute` (`CHANNEL`, `MODEL`, ...), whose `name` must be the module's own name."""
    found: dict[str, Any] = {}
    for module in modules:
        variant = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        assert variant.name == module, f"{package}.{module}.{attribute} is named '{variant.name}'"
        found[module] = variant
    return found
