"""Registry of channel models: a name (`uma`, `umi`, `free_space`, `okumura_hata`) -> its `Channel`.

Each module named in `_MODULES` defines `CHANNEL`, an instance of a `Channel` subclass whose
`name` is the module's name. A new model is one module here and one line in `_MODULES`.
"""

from __future__ import annotations

from mobrl.core.errors import closest_first
from mobrl.core.registry import load_registry
from mobrl.radio.channels.base import Channel

__all__ = ["CHANNELS", "Channel", "channel"]

#: the modules that define a channel, in the order they are listed to users
_MODULES = ("uma", "umi", "free_space", "okumura_hata")


#: every channel model by name
CHANNELS: dict[str, Channel] = load_registry(__name__, _MODULES, "CHANNEL")


def channel(name: str) -> Channel:
    """The channel model called `name`; a one-line `ValueError` naming the closest ones if none
    is."""
    if isinstance(name, str) and name in CHANNELS:
        return CHANNELS[name]
    ordered = closest_first(str(name), CHANNELS)
    raise ValueError(
        f"unknown channel model '{name}'; the closest is '{ordered[0]}'. "
        f"Choose one of: {', '.join(ordered)}."
    )
