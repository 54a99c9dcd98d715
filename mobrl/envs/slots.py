"""Copies of a mobile-env layout as one Gymnasium vector env with a slot per UE (no Ray here).

With one policy shared by every UE and every UE present for the whole episode (the built-in
`small`, `medium`, `large` and `highway` layouts), `env=ma` is the same learning problem as a
single-agent vector env in which each (env copy, UE) pair is one slot: each slot observes its
UE's features, acts for it and gets its reward, and every slot of a copy ends its episode
together. RLlib samples such a vector env with its single-agent env runner, batching the
policy's forward pass over all slots, at several times the speed of its multi-agent runner
(which keeps per-agent episode objects and dict observations for every UE). mobrl's env runner
for this layout (mobrl.envs.slot_runner) reports episodes per copy, as the multi-agent runner
would: the return is the sum over the copy's UEs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from mobrl.envs.netstats import EpisodeTracker, step_arrays
from mobrl.envs.wrappers import share_rewards

#: mobile-env seeds of training copies start here, far from the seeds `mobrl evaluate` uses
TRAIN_SEED_BASE = 1_000_000


#: between a UE slot's episode id and its UE: what precedes it names the copy's episode,
#: which every UE of the copy shares (`team_of`)
TEAM_SEP = "/"


def slot_episode_id(copy_episode: str, ue: int) -> str:
    """The episode id of UE `ue`'s slot in the copy episode `copy_episode`."""
    return f"{copy_episode}{TEAM_SEP}{ue}"


def team_of(episode_id: str) -> str | None:
    """The copy episode of a UE slot's episode id: the UEs of one copy that step together
    (their episodes start, step and end together), or None for an id of another runner."""
    head, sep, _ = str(episode_id).rpartition(TEAM_SEP)
    return head if sep else None


def uses_slots(env_config: dict[str, Any]) -> bool:
    """Whether RLlib samples this env as UE slots (`env.sampler` resolved to `ue_slots`)."""
    return env_config.get("sampler") == "ue_slots"


def copy_seed(run_seed: int, worker_index: int, copy: int) -> int:
    """The mobile-env config seed of env copy `copy` on env runner `worker_index`: distinct
    for every copy, runner and run seed, and never one of the small evaluation seeds."""
    return TRAIN_SEED_BASE + 10_000 * run_seed + 100 * worker_index + copy


class UESlotVectorEnv(gym.vector.VectorEnv):
    """`copies` fast-engine cores (multi-agent handler) with one vector slot per UE.

    Slot `c * n_ues + u` is UE `u` of copy `c`. Autoreset follows Gymnasium's next-step mode
    (what RLlib's single-agent runner expects): the step after a copy's episode ends resets
    that copy and ignores its slots' actions. Finished copy episodes (return, length, duration,
    per-UE returns and, with `track_metrics`, mobrl's UE and network metrics) queue up in
    `finished` until `pop_finished` takes them.
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        make_core: Callable[[int], Any],
        seeds: list[int],
        track_metrics: bool = True,
        team_reward: float = 0.0,
    ):
        self._make_core = make_core
        self.cores = [make_core(seed) for seed in seeds]
        core = self.cores[0]
        self.n_ues = len(core.users)
        self.copies = len(self.cores)
        self.num_envs = self.copies * self.n_ues
        self.single_observation_space = core.observation_space.spaces[min(core.users)]
        self.single_action_space = core.action_space.spaces[min(core.users)]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.track_metrics = track_metrics
        self.team_reward = team_reward
        self.finished: list[dict[str, Any]] = []
        self._obs = np.zeros((self.num_envs, *self.single_observation_space.shape), np.float32)
        self._needs_reset = np.zeros(self.copies, dtype=bool)
        self._returns = np.zeros((self.copies, self.n_ues))
        self._started = [0.0] * self.copies
        self._trackers: list[EpisodeTracker | None] = [None] * self.copies

    def reseed(self, seeds: list[int]) -> None:
        """Rebuild the copies with these mobile-env config seeds (before the first reset)."""
        assert len(seeds) == self.copies
        for core in self.cores:
            core.close()
        self.cores = [self._make_core(seed) for seed in seeds]

    def _slots(self, copy: int) -> slice:
        return slice(copy * self.n_ues, (copy + 1) * self.n_ues)

    def _start_episode(self, copy: int) -> None:
        core = self.cores[copy]
        core.reset()
        self._obs[self._slots(copy)] = core.observe_all()
        self._returns[copy] = 0.0
        self._started[copy] = time.perf_counter()
        self._trackers[copy] = (
            EpisodeTracker(core.NUM_STATIONS, sorted(core.users)) if self.track_metrics else None
        )

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        # mobile-env draws every episode from its config seed (see `copy_seed`); like
        # mobile-env's own reset, a seed given here does not change the episodes
        for copy in range(self.copies):
            self._start_episode(copy)
        self._needs_reset[:] = False
        return self._obs.copy(), {}

    def step(self, actions: Any):
        actions = np.asarray(actions, dtype=np.int64)
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        truncated = np.zeros(self.num_envs, dtype=bool)
        for copy, core in enumerate(self.cores):
            slots = self._slots(copy)
            if self._needs_reset[copy]:
                self._start_episode(copy)
                self._needs_reset[copy] = False
                continue
            reward, done = core.step_arrays(actions[slots])
            rewards[slots] = share_rewards(reward, self.team_reward)
            self._returns[copy] += reward
            tracker = self._trackers[copy]
            if tracker is not None:
                tracker.record(*step_arrays(core, tracker.ue_ids))
            self._obs[slots] = core.observe_all()
            if done:
                truncated[slots] = True
                self._needs_reset[copy] = True
                self._finish(copy)
        terminated = np.zeros(self.num_envs, dtype=bool)
        return self._obs.copy(), rewards, terminated, truncated, {}

    def _finish(self, copy: int) -> None:
        tracker = self._trackers[copy]
        core = self.cores[copy]
        self.finished.append(
            {
                "return": float(self._returns[copy].sum()),
                "length": int(core.time),
                "duration_s": time.perf_counter() - self._started[copy],
                "ue_returns": self._returns[copy].tolist(),
                "ue_ids": sorted(core.users),
                # with a layout's power: or traffic:, energy and demand served too
                "metrics": {**tracker.summary(), **core.energy_summary()}
                if tracker is not None
                else {},
            }
        )

    def pop_finished(self) -> list[dict[str, Any]]:
        """The copy episodes finished since the last call, oldest first."""
        out, self.finished = self.finished, []
        return out

    def close(self, **kwargs: Any) -> None:
        for core in self.cores:
            core.close()


def applies(env_config: dict[str, Any]) -> bool:
    """Whether `env_config` can be sampled as UE slots: a mobile-env layout in `env=ma` on the
    fast engine, one policy shared by every UE, and every UE present for the whole episode."""
    if env_config.get("mode") != "ma" or env_config.get("decide", "at_once") != "at_once":
        return False  # one agent, or UEs acting in turns (not every slot acts each step)
    if env_config.get("engine", "fast") != "fast" or not env_config.get("layout"):
        return False
    if len(set((env_config.get("policies") or {}).values())) != 1:
        return False
    if set(env_config.get("kwargs") or {}) - {"seed"}:
        return False  # mobile-env config entries that may change arrivals or models
    return env_config["layout"].get("arrival", {}).get("model") == "always"
