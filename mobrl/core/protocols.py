"""What mobrl asks of objects it does not own, as `Protocol`s, and a fast check against them.

mobrl's fast engine offers its state as arrays; stock mobile-env cores are read through their
objects; some envs count things of their own per episode. Code asks `implements(obj, P)`
instead of probing for attribute names.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class MetricArrays(Protocol):
    """A mobile-env core that hands over its last step as `EpisodeTracker`'s arrays itself
    (mobrl's fast engine): utilities, rates, links and SNRs, UEs in id order."""

    def metric_arrays(self) -> tuple[Any, Any, Any, Any]: ...


@runtime_checkable
class StationArrays(Protocol):
    """A core that holds the (BS, UE) state `env.obs=topk` reads as arrays already."""

    def topk_state(self) -> dict[str, Any]: ...

    def ue_columns(self) -> dict[int, int]: ...


@runtime_checkable
class SnrArrays(Protocol):
    """A core that holds this step's SNRs as a (BS, UE) array."""

    def snr_matrix(self) -> Any: ...

    def signal_matrix(self) -> Any: ...

    def reach_matrix(self) -> Any: ...

    def ue_column(self, ue: Any) -> int: ...


@runtime_checkable
class LinkArrays(Protocol):
    """A core that builds the `mobrl.network.service.LinkState` of its step from arrays."""

    def link_state(self) -> Any: ...


@runtime_checkable
class EpisodeStats(Protocol):
    """An env that counts things of its own per episode (e.g. the arena's cells and catches)."""

    def episode_stats(self) -> dict[str, float]: ...


@cache
def _class_implements(cls: type, protocol: type) -> bool:
    return issubclass(cls, protocol)


def implements(obj: Any, protocol: type) -> bool:
    """`isinstance(obj, protocol)` for a method-only runtime protocol, decided once per class
    (Python's own check costs ~10 µs per call, too slow for code run every env step)."""
    return _class_implements(type(obj), protocol)
