"""Which checkpoints of a trial stay on disk: the best `run.checkpoint.keep` by the run's
metric (`tune.metric`, ordered by `tune.mode`) and always the latest, as Tune keeps them.

A NaN, missing or non-numeric score ranks below every number; of equal scores the later
checkpoint ranks higher; without a metric checkpoints rank by age. `keep=None` keeps all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobrl.core import metrics


@dataclass(frozen=True, eq=False)
class Kept:
    """One registered checkpoint: its dir, the result it was saved with, its place in time."""

    path: Path
    result: dict[str, Any]
    order: int


class KeepPolicy:
    """Registers checkpoints as they are written and says which to delete."""

    def __init__(self, keep: int | None, metric: str | None = None, mode: str = "max"):
        if keep is not None and keep < 1:
            raise ValueError(f"run.checkpoint.keep must be >= 1 (null: keep all), got {keep}")
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        self.keep, self.metric, self.mode = keep, metric, mode
        #: ascending by rank: the best last (the latest may rank below the best `keep`)
        self._ranked: list[Kept] = []
        self._latest: Kept | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> KeepPolicy:
        """The policy of a run's config: `run.checkpoint.keep` by `tune.metric`/`tune.mode`."""
        keep = cfg.run.checkpoint.keep
        return cls(keep, cfg.tune.metric if keep else None, cfg.tune.mode)

    def score(self, result: dict[str, Any]) -> tuple[bool, float]:
        """The rank key of a result: (has a number, the number, negated for `min`)."""
        if self.metric is None:
            return (True, 0.0)
        value = metrics.result_value(result, self.metric)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return (False, -math.inf)
        return (True, float(value) if self.mode == "max" else -float(value))

    def _rank(self, entry: Kept) -> tuple[tuple[bool, float], int]:
        return (self.score(entry.result), entry.order)

    def register(self, path: Path | str, result: dict[str, Any]) -> list[Path]:
        """Add the checkpoint just written (the latest now); return the dirs that are no
        longer kept, which the caller deletes."""
        order = self._latest.order + 1 if self._latest is not None else 0
        entry = Kept(Path(path), dict(result), order)
        self._latest = entry
        self._ranked.append(entry)
        self._ranked.sort(key=self._rank)
        if self.keep is None:
            return []
        dropped = [e for e in self._ranked[: -self.keep] if e is not entry]
        self._ranked = [e for e in self._ranked if e not in dropped]
        return [e.path for e in dropped]

    def best(self) -> list[Kept]:
        """The best `keep` checkpoints (all with `keep=None`), the best last."""
        return list(self._ranked if self.keep is None else self._ranked[-self.keep :])

    def latest(self) -> Kept | None:
        return self._latest

    def kept(self) -> list[dict[str, Any]]:
        """Every checkpoint on disk as the driver's state records them: dir name and
        iteration, by dir name."""
        entries = self.best()
        if self._latest is not None and self._latest not in entries:
            entries.append(self._latest)
        return sorted(
            ({"dir": e.path.name, "iteration": e.result.get(metrics.ITERATION)} for e in entries),
            key=lambda c: c["dir"],
        )
