"""A small multi-agent network task as a PettingZoo `ParallelEnv`, written without mobrl:
transmitters pick one of a few channels each step; a transmitter's rate is log2(1 + SINR)
on its channel, where every other transmitter on the same channel interferes.

Train and evaluate it with mobrl (from this folder, or with it on PYTHONPATH):

    mobrl train scenario=custom scenario.entry=channel_access:ChannelAccessEnv \
        scenario.metrics=[rate,collided:sum] run=smoke
    mobrl evaluate --checkpoint outputs/... --baselines random,rules:BestGain
"""

from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class ChannelAccessEnv(ParallelEnv):
    metadata = {"name": "channel_access_v0", "render_modes": ["rgb_array"]}

    def __init__(
        self,
        transmitters: int = 4,
        channels: int = 3,
        episode_length: int = 50,
        noise: float = 0.1,
        render_mode: str | None = None,
    ) -> None:
        self.possible_agents = [f"tx_{i}" for i in range(transmitters)]
        self.channels, self.episode_length, self.noise = channels, episode_length, noise
        self.render_mode = render_mode
        self.rng = np.random.default_rng()
        self.agents: list[str] = []

    @functools.cache  # noqa: B019 (PettingZoo's own examples cache the spaces this way)
    def observation_space(self, agent: str) -> spaces.Box:
        # this step's gain on each channel, and how many others used each channel last step
        return spaces.Box(0.0, np.inf, shape=(2 * self.channels,), dtype=np.float32)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(self.channels)

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.load = np.zeros(self.channels, dtype=np.float32)
        self.gains = self._draw_gains()
        return self._observations(), {a: {} for a in self.agents}

    def _draw_gains(self) -> np.ndarray:
        # Rayleigh fading: exponentially distributed power gains per (agent, channel)
        return self.rng.exponential(1.0, size=(len(self.agents), self.channels))

    def _observations(self) -> dict[str, np.ndarray]:
        return {
            a: np.concatenate([self.gains[i], self.load]).astype(np.float32)
            for i, a in enumerate(self.agents)
        }

    def step(self, actions: dict[str, int]):
        chosen = np.array([int(actions[a]) for a in self.agents])
        power = self.gains[np.arange(len(self.agents)), chosen]
        on_channel = np.zeros(self.channels)
        np.add.at(on_channel, chosen, power)
        interference = on_channel[chosen] - power
        rates = np.log2(1.0 + power / (self.noise + interference))
        collided = np.bincount(chosen, minlength=self.channels)[chosen] > 1
        self.load = np.bincount(chosen, minlength=self.channels).astype(np.float32)
        self.t += 1
        self.gains = self._draw_gains()
        done = self.t >= self.episode_length
        rewards = {a: float(r) for a, r in zip(self.agents, rates)}
        infos = {
            a: {"rate": float(r), "collided": int(c)}
            for a, r, c in zip(self.agents, rates, collided)
        }
        observations = self._observations()
        terminations = {a: False for a in self.agents}
        truncations = {a: done for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self):
        """Channels as columns, transmitters as rows: a cell is lit by last step's load."""
        if self.render_mode != "rgb_array":
            return None
        image = np.zeros((len(self.possible_agents) * 8, self.channels * 8, 3), dtype=np.uint8)
        for c, load in enumerate(self.load):
            image[: int(load) * 8, c * 8 : c * 8 + 7] = (40, 160, 255)
        return image

    def close(self) -> None:
        pass
