"""RLlib env runner for `mobrl.envs.slots`: samples UE slots, reports episodes per env copy."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core import DEFAULT_AGENT_ID, DEFAULT_MODULE_ID
from ray.rllib.utils.metrics import (
    EPISODE_AGENT_RETURN_MEAN,
    EPISODE_AGENT_STEPS,
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)

from mobrl.core.metrics import EPISODE_RETURNS
from mobrl.envs.callbacks import log_episode_summary
from mobrl.envs.lean_runner import LeanEnvRunner
from mobrl.envs.slots import copy_seed, slot_episode_id


class UESlotEnvRunner(LeanEnvRunner):
    """mobrl's lean env runner (`lean_runner`: arrays, no per-step episode objects) over a
    `UESlotVectorEnv`, with four changes:

    - each env runner seeds its env copies differently (`copy_seed`);
    - env steps count steps of an env copy, not of a slot (a small-layout step is 5 slot
      steps), so `num_env_steps_sampled_lifetime`, the train batch size and the stop criteria
      mean what they mean for RLlib's multi-agent runner: one sample of an automatic
      rollout fragment covers `train_batch_size / num_env_runners` env steps;
    - episode metrics are those of whole env copies, as RLlib's multi-agent runner reports
      them: the return sums the copy's UEs, `agent_episode_returns_mean/ue_N` holds each UE's;
    - a slot's episode id names its copy's episode, so a learner can find the UEs of one env
      step together (algo=mappo's team, `slots.team_of`).
    """

    #: each env copy's episode return is logged here, whichever loop samples
    #: (`callbacks.log_episode_return` skips)
    logs_episode_returns = True

    def __init__(self, *, config: Any, **kwargs: Any):
        import torch

        # batches of a few dozen rows: more threads than the runner's CPUs only contend
        torch.set_num_threads(max(1, int(config.num_cpus_per_env_runner)))
        super().__init__(config=config, **kwargs)
        # this piece only rescales Box actions; UE slots act in a Discrete space
        if self.env is not None and self._module_to_env is not None:
            self._module_to_env.remove("NormalizeAndClipActions")

    def make_env(self) -> None:
        super().make_env()  # RLlib's vector entry point builds the copies of env runner 0
        if self.worker_index:
            slots = self.env.unwrapped
            run_seed = int(self.config.env_config.get("seed") or 0)
            slots.reseed([copy_seed(run_seed, self.worker_index, c) for c in range(slots.copies)])

    def _episode_id(self, base: str, slot: int, nth: int) -> str:
        """A slot's episode id names its copy's episode (the copy's UEs share it: the team an
        agent step belongs to, `slots.team_of`) and its UE. A copy's slots reset together,
        so its `nth` episode is the same for each of them."""
        copy, ue = divmod(slot, self.env.unwrapped.n_ues)
        return slot_episode_id(f"{base}.{copy}.{nth}", ue)

    def sample(
        self, *, num_timesteps: int | None = None, num_episodes: int | None = None, **kwargs: Any
    ) -> list:
        if (
            num_timesteps is None
            and num_episodes is None
            and self.config.rollout_fragment_length == "auto"
            and self.config.batch_mode == "truncate_episodes"
        ):
            num_timesteps = self._fragment_slot_steps()
        return super().sample(num_timesteps=num_timesteps, num_episodes=num_episodes, **kwargs)

    def _fragment_slot_steps(self) -> int:
        """Slot steps of one automatic rollout fragment: this runner's share of the train
        batch, counted in env steps (a slot step is 1/n_ues of an env step). RLlib's automatic
        fragment splits the batch over the slots and rounds up to one step per slot; where the
        batch has at least that many env steps its rounding is kept (as it always was), where
        it has fewer (a layout with more UEs than the batch has env steps, e.g. `city` with
        `run=smoke`) the share is rounded to whole steps of each env copy instead, so the
        sample stays the batch's size rather than n_ues env steps per copy.

        An algorithm whose automatic fragment is its own (DQN's and SAC's: their n-step
        horizon, in steps of each env) samples that many steps of every slot, which is that
        many env steps of every copy, as RLlib's multi-agent runner samples each env."""
        own = type(self.config).get_rollout_fragment_length
        if own is not AlgorithmConfig.get_rollout_fragment_length:
            return own(self.config, self.worker_index) * self.num_envs
        n_ues, copies = self.env.unwrapped.n_ues, self.env.unwrapped.copies
        batch, runners = self.config.total_train_batch_size, self.config.num_env_runners or 1
        if self.config.count_steps_by == "agent_steps":
            batch //= n_ues  # the batch counts rows (`algos.rows_per_batch_step`)
        if batch >= runners * self.num_envs:  # RLlib's fragment: at least one step per slot
            # RLlib's own rounding, applied to the batch in env steps
            env_steps_config = SimpleNamespace(
                rollout_fragment_length="auto",
                total_train_batch_size=batch,
                num_envs_per_env_runner=self.config.num_envs_per_env_runner,
                num_env_runners=self.config.num_env_runners,
            )
            fragment = AlgorithmConfig.get_rollout_fragment_length(
                env_steps_config, self.worker_index
            )
            return fragment * self.num_envs * n_ues
        return math.ceil(batch / (runners * copies)) * copies * n_ues

    def _lean_episode_done(self, length: int, ret: float, seconds: float) -> None:
        """A slot's episode is one UE's: the env copy's episode is logged in `get_metrics`."""

    def _increase_sampled_metrics(self, num_steps: int, num_episodes_completed: int) -> int:
        """RLlib's sampled counts, env steps and episodes as steps and episodes of env copies,
        agent and module steps as slot steps (one per UE and env step)."""
        n_ues = self.env.unwrapped.n_ues
        env_steps, episodes = num_steps // n_ues, num_episodes_completed // n_ues
        for key, value, reduce in (
            (NUM_ENV_STEPS_SAMPLED, env_steps, "sum"),
            ((NUM_AGENT_STEPS_SAMPLED, DEFAULT_AGENT_ID), num_steps, "sum"),
            ((NUM_MODULE_STEPS_SAMPLED, DEFAULT_MODULE_ID), num_steps, "sum"),
            (NUM_EPISODES, episodes, "sum"),
            ((NUM_AGENT_STEPS_SAMPLED_LIFETIME, DEFAULT_AGENT_ID), num_steps, "lifetime_sum"),
            ((NUM_MODULE_STEPS_SAMPLED_LIFETIME, DEFAULT_MODULE_ID), num_steps, "lifetime_sum"),
            (NUM_EPISODES_LIFETIME, episodes, "lifetime_sum"),
        ):
            self.metrics.log_value(key, value, reduce=reduce)
        self.metrics.log_value(
            NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum", with_throughput=True
        )
        return num_steps

    def get_metrics(self) -> dict:
        # RLlib would log every slot's episode as an episode of its own; drop those records
        for episode in self._done_episodes_for_metrics:
            self._ongoing_episodes_for_metrics.pop(episode.id_, None)
        self._done_episodes_for_metrics.clear()
        if self.env is not None:
            for episode in self.env.unwrapped.pop_finished():
                self._log_copy_episode(episode)
        return self.metrics.reduce()

    def _log_copy_episode(self, episode: dict[str, Any]) -> None:
        from mobrl.envs.factory import DEFAULT_POLICY
        from mobrl.envs.wrappers import agent_id

        win = max(
            1,
            math.ceil(
                self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)
            ),
        )
        length, ret = episode["length"], episode["return"]
        agents = [agent_id(u) for u in episode["ue_ids"]]
        self.metrics.log_dict(
            {
                EPISODE_LEN_MEAN: length,
                EPISODE_RETURN_MEAN: ret,
                EPISODE_DURATION_SEC_MEAN: episode["duration_s"],
                EPISODE_AGENT_RETURN_MEAN: dict(zip(agents, episode["ue_returns"])),
                EPISODE_AGENT_STEPS: dict.fromkeys(agents, length),
                EPISODE_MODULE_RETURN_MEAN: {DEFAULT_POLICY: ret},
            },
            window=win,
        )
        self.metrics.log_dict(
            {EPISODE_LEN_MIN: length, EPISODE_RETURN_MIN: ret}, reduce="min", window=win
        )
        self.metrics.log_dict(
            {EPISODE_LEN_MAX: length, EPISODE_RETURN_MAX: ret}, reduce="max", window=win
        )
        self.metrics.log_value(EPISODE_RETURNS, float(ret), reduce="item_series")
        log_episode_summary(self.metrics, episode["metrics"])
