"""The arena's rules as data (agents, moves, observation size), importable without Ray."""

from __future__ import annotations

import numpy as np

EXPLORER, CHASER = "explorer", "chaser"
AGENTS = (EXPLORER, CHASER)
#: stay, up, down, left, right
MOVES = np.array([(0, 0), (0, 1), (0, -1), (-1, 0), (1, 0)])


def observation_size(size: int) -> int:
    """Own and other's (x, y), then the size x size map of visited cells."""
    return 4 + size * size
