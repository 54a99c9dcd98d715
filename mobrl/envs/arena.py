"""A two-agent grid arena: an explorer scores for each new cell it reaches, a chaser for
catching it. A small competitive multi-agent task that trains in minutes on a laptop.

Both agents see their own and the other's position and the map of visited cells; each moves
one cell per step (stay, up, down, left, right). A catch (same cell, or swapping cells) gives
the chaser +1 and the explorer -1, and sends the explorer to a random cell far from the chaser.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from mobrl.core import metrics
from mobrl.envs.arena_rules import AGENTS, CHASER, EXPLORER, MOVES, observation_size

_CELL_PX = 40


class GridArena(MultiAgentEnv):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(
        self,
        size: int = 8,
        episode_length: int = 100,
        seed: int | None = None,
        render_mode: str | None = None,
    ):
        super().__init__()
        if size < 3 or episode_length < 1:
            raise ValueError("the arena needs size >= 3 and episode_length >= 1")
        self.size, self.episode_length = size, episode_length
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        obs = gym.spaces.Box(0.0, 1.0, shape=(observation_size(size),), dtype=np.float32)
        self.observation_spaces = {a: obs for a in AGENTS}
        self.action_spaces = {a: gym.spaces.Discrete(len(MOVES)) for a in AGENTS}
        self._rng = np.random.default_rng(seed)
        self._reset_state()

    def _reset_state(self) -> None:
        self.pos = {EXPLORER: np.zeros(2, int), CHASER: np.zeros(2, int)}
        self.visited = np.zeros((self.size, self.size), dtype=bool)
        self.t = 0
        self.stats = {metrics.ARENA_NEW_CELLS: 0, metrics.ARENA_COLLISIONS: 0}

    def episode_stats(self) -> dict[str, float]:
        """This episode's counts so far (read by mobrl's metrics callback)."""
        return dict(self.stats)

    def _far_cell(self, other: np.ndarray) -> np.ndarray:
        cells = np.argwhere(np.ones((self.size, self.size), dtype=bool))
        distance = np.abs(cells - other).sum(axis=1)
        far = cells[distance >= max(2, distance.max() // 2)]
        return far[self._rng.integers(len(far))]

    def _obs(self) -> dict[str, np.ndarray]:
        scale = self.size - 1
        grid = self.visited.ravel().astype(np.float32)
        out = {}
        for agent, other in ((EXPLORER, CHASER), (CHASER, EXPLORER)):
            head = np.concatenate([self.pos[agent], self.pos[other]]) / scale
            out[agent] = np.concatenate([head.astype(np.float32), grid])
        return out

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._reset_state()
        self.pos[CHASER] = self._rng.integers(0, self.size, size=2)
        self.pos[EXPLORER] = self._far_cell(self.pos[CHASER])
        self.visited[tuple(self.pos[EXPLORER])] = True
        self.stats[metrics.ARENA_NEW_CELLS] = 1
        return self._obs(), {a: {} for a in AGENTS}

    def step(self, action_dict: dict[str, int]):
        before = {a: self.pos[a].copy() for a in AGENTS}
        for agent in AGENTS:
            move = MOVES[int(action_dict.get(agent, 0))]
            self.pos[agent] = np.clip(self.pos[agent] + move, 0, self.size - 1)
        swapped = np.array_equal(self.pos[EXPLORER], before[CHASER]) and np.array_equal(
            self.pos[CHASER], before[EXPLORER]
        )
        rewards = {EXPLORER: 0.0, CHASER: 0.0}
        if swapped or np.array_equal(self.pos[EXPLORER], self.pos[CHASER]):
            rewards[CHASER], rewards[EXPLORER] = 1.0, -1.0
            self.stats[metrics.ARENA_COLLISIONS] += 1
            self.pos[EXPLORER] = self._far_cell(self.pos[CHASER])
        cell = tuple(self.pos[EXPLORER])
        if not self.visited[cell]:
            self.visited[cell] = True
            rewards[EXPLORER] += 1.0
            self.stats[metrics.ARENA_NEW_CELLS] += 1
        self.t += 1
        done = self.t >= self.episode_length
        truncated = {a: done for a in AGENTS} | {"__all__": done}
        terminated = {a: False for a in AGENTS} | {"__all__": False}
        return self._obs(), rewards, terminated, truncated, {a: {} for a in AGENTS}

    def render(self) -> np.ndarray:
        """The arena as an RGB image: visited cells green, explorer blue, chaser red."""
        px = _CELL_PX
        image = np.full((self.size * px, self.size * px, 3), 255, dtype=np.uint8)
        for x, y in np.argwhere(self.visited):
            row = self.size - 1 - y  # y grows upwards in the arena, downwards in images
            image[row * px : (row + 1) * px, x * px : (x + 1) * px] = (198, 239, 206)
        for agent, colour in ((EXPLORER, (31, 119, 180)), (CHASER, (214, 39, 40))):
            x, y = self.pos[agent]
            row = self.size - 1 - y
            pad = px // 6
            image[row * px + pad : (row + 1) * px - pad, x * px + pad : (x + 1) * px - pad] = colour
        image[::px, :] = image[:, ::px] = 160  # grid lines
        return image

    def close(self) -> None:
        pass
