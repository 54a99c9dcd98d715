"""UEs that arrive and leave during an episode (mobile-env itself only has UEs that stay)."""

from __future__ import annotations

from typing import Any

from mobile_env.core.arrival import Arrival


class RandomArrival(Arrival):
    """Each UE arrives at a uniformly drawn step in [0, window] and stays for a uniformly drawn
    number of steps in [min_stay, max_stay] (at most until the episode ends). UE 0 always
    arrives at step 0, so every episode starts with a UE to act. Draws come from mobile-env's
    seeded arrival RNG, so episodes are reproducible from the scenario seed."""

    def __init__(
        self, window: int = 0, min_stay: int = 1, max_stay: int | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.window = window
        self.min_stay = min_stay
        self.max_stay = self.ep_time if max_stay is None else max_stay

    def arrival(self, ue: Any) -> int:
        start = int(self.rng.integers(0, self.window + 1))
        return 0 if ue.ue_id == 0 else start

    def departure(self, ue: Any) -> int:
        stay = int(self.rng.integers(self.min_stay, self.max_stay + 1))
        return min(ue.stime + stay, self.ep_time)
