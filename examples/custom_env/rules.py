"""A user's rule for `mobrl evaluate --baselines rules:BestGain`: called with the step's
per-agent observations, it returns the per-agent actions (here: each transmitter takes its
strongest channel, ignoring the others, as a greedy scheduler would)."""

from __future__ import annotations

import numpy as np


class BestGain:
    def __call__(self, observations: dict[str, np.ndarray]) -> dict[str, int]:
        return {agent: int(np.argmax(obs[: len(obs) // 2])) for agent, obs in observations.items()}
