"""Demand models, one module each, named in `_MODULES`: `full_buffer` (mobile-env's model),
`constant` (a fixed bit rate) and `ftp3` (3GPP's FTP model 3: files arriving at random)."""

from __future__ import annotations

from mobrl.core.registry import load_registry
from mobrl.traffic.base import Demand

_MODULES = ("full_buffer", "constant", "ftp3")

#: every demand model by name
DEMANDS: dict[str, Demand] = load_registry(__name__, _MODULES, "DEMAND")
