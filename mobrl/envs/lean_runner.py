"""An RLlib env runner that samples a vector env into arrays and makes its episodes at the end.

RLlib's `SingleAgentEnvRunner` keeps one `SingleAgentEpisode` per vector slot and, at every
step, appends each slot's observation, action, reward and model outputs to it, then runs its
env-to-module and module-to-env connector pipelines over all those episodes. With 1,000 UE
slots (`city`) or eight CartPole copies stepping a few microseconds each, that bookkeeping
costs more than the env and the policy together. `LeanEnvRunner` runs the same loop on arrays:
the batched observation goes to the RLModule as a tensor, actions are drawn from the module's
own action distribution (as RLlib's `GetActions` connector draws them), and the env steps with
Gymnasium's next-step autoreset. Only when the fragment is sampled does it cut the arrays into
`SingleAgentEpisode`s: the same columns (observations, actions, rewards, `action_logp`,
`action_dist_inputs`, the weights' sequence number), ids, `t_started`, terminated and truncated
flags as RLlib's runner returns, so RLlib's learner connectors, GAE, checkpoints, Tune and
remote env runners see nothing new.

The lean loop serves what it can serve exactly; everything else falls back to RLlib's own
`_sample` (`lean_reason` says why): a stateful module, connectors beyond RLlib's defaults, an
action space other than Discrete or MultiDiscrete, a non-array observation, callbacks that
want every episode step (`on_episode_step` and friends), random actions, or sampling whole
episodes (`num_episodes`).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_runner import ENV_STEP_FAILURE
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import RLMODULE_INFERENCE_TIMER, WEIGHTS_SEQ_NO

from mobrl.core.metrics import EPISODE_RETURNS

#: RLlib's default connectors; the lean loop does their work itself, and no other's
_DEFAULT_ENV_TO_MODULE = {
    "AddObservationsFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AddStatesFromEpisodesToBatch",
    "BatchIndividualItems",
    "NumpyToTensor",
}
_DEFAULT_MODULE_TO_ENV = {
    "GetActions",
    "TensorToNumpy",
    "UnBatchToIndividualItems",
    "ModuleToAgentUnmapping",
    "RemoveSingleTsTimeRankFromBatch",
    "NormalizeAndClipActions",  # rescales Box actions only, and the lean loop takes none
    "ListifyDataForVectorEnv",
}
_EPISODE_HOOKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


def _connector_names(pipeline: Any) -> set[str]:
    return {type(c).__name__ for c in getattr(pipeline, "connectors", [])} if pipeline else set()


class _Ongoing:
    """Each vector slot's episode between two fragments: its id (`id_of(base, slot, nth)`,
    `base` drawn once for this loop's run and `nth` the slot's episodes before this one), its
    steps so far, whether the env resets it at the next step (next-step autoreset), and its
    return and start time (for the episode metrics)."""

    def __init__(self, obs: np.ndarray, id_of: Any):
        n = len(obs)
        self.obs = obs
        self.base, self.id_of = uuid.uuid4().hex, id_of
        self.nth = np.zeros(n, dtype=np.int64)
        self.ids = [id_of(self.base, slot, 0) for slot in range(n)]
        self.t = np.zeros(n, dtype=np.int64)
        self.resets = np.zeros(n, dtype=bool)
        self.ret = np.zeros(n)
        self.started = np.full(n, time.perf_counter())

    def restart(self, slot: int) -> None:
        self.nth[slot] += 1
        self.ids[slot] = self.id_of(self.base, slot, int(self.nth[slot]))
        self.t[slot] = 0
        self.ret[slot] = 0.0
        self.started[slot] = time.perf_counter()


class _Fragment:
    """One `sample()`'s arrays, step by step, and the episode pieces they hold: (slot, first
    step, end step, terminated, truncated, id, t_started) where observations run from the
    first step to the end step included and the rest to the end step excluded."""

    def __init__(self, state: _Ongoing):
        self.obs = [state.obs]
        self.columns: dict[str, list[np.ndarray]] = {}
        self.pieces: list[tuple] = []
        self.first = np.zeros(len(state.obs), dtype=np.int64)  # where each slot's piece starts
        self.t0 = state.t.copy()  # and the piece's t_started

    @property
    def steps(self) -> int:
        return len(self.obs) - 1

    def add(self, out: dict[str, np.ndarray], obs: np.ndarray, rewards: np.ndarray) -> None:
        for key, value in out.items():
            self.columns.setdefault(key, []).append(value)
        self.columns.setdefault(Columns.REWARDS, []).append(rewards)
        self.obs.append(obs)

    def end_piece(self, slot: int, state: _Ongoing, terminated: bool, truncated: bool) -> None:
        first = int(self.first[slot])
        if self.steps > first:
            self.pieces.append(
                (slot, first, self.steps, terminated, truncated, state.ids[slot], self.t0[slot])
            )

    def restart(self, slot: int) -> None:
        """The slot was reset at the last step: its next piece starts with that step's obs."""
        self.first[slot] = self.steps
        self.t0[slot] = 0

    def episodes(self, spaces: tuple[gym.Space, gym.Space]) -> list[SingleAgentEpisode]:
        """The pieces as RLlib episodes (numpy), slot-major arrays so each piece is a view."""
        if not self.pieces:
            return []
        obs = np.stack(self.obs, axis=1)
        cols = {k: np.stack(v, axis=1) for k, v in self.columns.items()}
        rewards = cols.pop(Columns.REWARDS)
        actions = cols.pop(Columns.ACTIONS)
        out = []
        for slot, first, end, terminated, truncated, id_, t0 in self.pieces:
            out.append(
                SingleAgentEpisode(
                    id_=id_,
                    observations=obs[slot, first : end + 1],
                    infos=[{} for _ in range(end + 1 - first)],
                    actions=actions[slot, first:end],
                    rewards=rewards[slot, first:end],
                    extra_model_outputs={k: v[slot, first:end] for k, v in cols.items()},
                    terminated=terminated,
                    truncated=truncated,
                    t_started=int(t0),
                    len_lookback_buffer=0,
                    observation_space=spaces[0],
                    action_space=spaces[1],
                )
            )
        return out


class LeanEnvRunner(SingleAgentEnvRunner):
    """RLlib's single-agent env runner with a sampling loop on arrays (see the module)."""

    def __init__(self, *, config: Any, **kwargs: Any):
        self._ongoing_lean: _Ongoing | None = None
        self._recorders: list[Any] = []
        self._recording = False
        self._lean_reason: str | None = "not built yet"
        super().__init__(config=config, **kwargs)
        self._lean_reason = self._why_not_lean() if self.env is not None else "no env"
        # mobrl's episode metrics (`callbacks.EpisodeMetricsCallback`), recorded in the loop
        self._recording = any(getattr(c, "records_in_lean_loop", False) for c in self._callbacks)

    @property
    def lean_reason(self) -> str | None:
        """Why this runner samples with RLlib's own loop, or None when it samples lean."""
        return self._lean_reason

    @property
    def logs_episode_returns(self) -> bool:
        """Whether this runner logs each episode's return itself, so that
        `callbacks.log_episode_return` skips it: the lean loop does, RLlib's does not."""
        return self._lean_reason is None

    def make_env(self) -> None:
        super().make_env()
        self._ongoing_lean = None  # a new env (first, or after a failure) starts afresh

    def _why_not_lean(self) -> str | None:
        if self.module is None:
            return "no RLModule"
        if self.module.is_stateful():
            return "a stateful RLModule"
        extra = _connector_names(self._env_to_module) - _DEFAULT_ENV_TO_MODULE
        extra |= _connector_names(self._module_to_env) - _DEFAULT_MODULE_TO_ENV
        if extra:
            return f"connectors {sorted(extra)}"
        if not isinstance(
            self.env.single_action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)
        ):
            return "an action space other than Discrete or MultiDiscrete"
        if not isinstance(self.env.single_observation_space, gym.spaces.Box):
            return "an observation space other than Box"
        for callback in self._callbacks:
            if getattr(callback, "records_in_lean_loop", False):
                continue  # mobrl's episode metrics: recorded by the lean loop itself
            for hook in _EPISODE_HOOKS:
                if getattr(type(callback), hook) is not getattr(RLlibCallback, hook):
                    return f"{type(callback).__name__}.{hook}"
        for hook in _EPISODE_HOOKS:
            functions = getattr(self.config, f"callbacks_{hook}", None)
            functions = functions if isinstance(functions, (list, tuple)) else [functions]
            if any(f is not None and not getattr(f, "lean_safe", False) for f in functions):
                return f"a callbacks_{hook} function"
        return None

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list:
        if self._lean_reason is not None or num_timesteps is None or random_actions:
            # RLlib's loop owns the env from here: it starts afresh where the lean loop left off
            force_reset = force_reset or self._ongoing_lean is not None
            self._ongoing_lean = None
            return super()._sample(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        return self._sample_lean(num_timesteps, explore, force_reset)

    # --- the loop on arrays -----------------------------------------------------------------

    def _reset_lean(self) -> _Ongoing:
        obs, _ = self._try_env_reset(seed=self._seed if self._needs_initial_reset else None)
        self._needs_initial_reset = False
        self._ongoing_lean = _Ongoing(np.asarray(obs), self._episode_id)
        self._recorders = [self._new_recorder(i) for i in range(len(obs))]
        return self._ongoing_lean

    def _episode_id(self, base: str, slot: int, nth: int) -> str:
        """The id of `slot`'s `nth` episode in the loop's run `base`: a uuid of its own, as
        RLlib's runner gives each episode."""
        return uuid.uuid4().hex

    def _new_recorder(self, slot: int) -> Any:
        """mobrl's episode recorder of a slot's new episode, where the config records episode
        metrics (`callbacks.EpisodeMetricsCallback`), as its `on_episode_start` makes one."""
        if not self._recording:
            return None
        from mobrl.envs.netstats import EpisodeRecorder

        return EpisodeRecorder(self.env.unwrapped, slot)

    def _act(self, obs: np.ndarray, explore: bool, t: int) -> dict[str, np.ndarray]:
        """The module's actions on a batch of observations, with the columns RLlib's
        connectors would keep in the episode (`action_logp`, `action_dist_inputs`, ...)."""
        import torch

        with torch.no_grad():
            tensor = torch.from_numpy(obs)
            if tensor.is_floating_point() and tensor.dtype != torch.float16:
                tensor = tensor.float()  # as RLlib's NumpyToTensor connector converts it
            batch = {Columns.OBS: tensor.to(self._device)}
            with self.metrics.log_time(RLMODULE_INFERENCE_TIMER):
                if explore:
                    out = self.module.forward_exploration(batch, t=t)
                else:
                    out = self.module.forward_inference(batch)
            if Columns.ACTIONS not in out:  # as RLlib's GetActions connector draws them
                dist_cls = (
                    self.module.get_exploration_action_dist_cls()
                    if explore
                    else self.module.get_inference_action_dist_cls()
                )
                dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                if not explore:
                    dist = dist.to_deterministic()
                out[Columns.ACTIONS] = dist.sample()
                if Columns.ACTION_LOGP not in out:
                    out[Columns.ACTION_LOGP] = dist.logp(out[Columns.ACTIONS])
        arrays = {
            k: v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
            for k, v in out.items()
            if k not in (Columns.EMBEDDINGS, Columns.STATE_OUT)
        }
        arrays[WEIGHTS_SEQ_NO] = np.full(len(obs), self._weights_seq_no)
        return arrays

    def _sample_lean(self, num_timesteps: int, explore: bool, force_reset: bool) -> list:
        state = self._ongoing_lean
        if state is None or force_reset or self._needs_initial_reset:
            state = self._reset_lean()
        spaces = (self.env.single_observation_space, self.env.single_action_space)
        fragment, done = _Fragment(state), []
        ts = finished = 0
        runners = self.config.num_env_runners or 1
        while ts < num_timesteps:
            t = (self.num_env_steps_sampled_lifetime // runners + ts) * runners
            out = self._act(state.obs, explore, t)
            results = self._try_env_step(out[Columns.ACTIONS])
            if isinstance(results, str) and results == ENV_STEP_FAILURE:
                # as RLlib's loop: keep the finished episodes, start the rest afresh
                done += fragment.episodes(spaces)
                state, ts = self._reset_lean(), 0
                fragment = _Fragment(state)
                continue
            obs, rewards, terminated, truncated, _ = results
            obs = np.asarray(obs)
            rewards = np.asarray(rewards)
            stepped = ~state.resets
            ts += int(stepped.sum())
            fragment.add(out, obs, rewards)
            state.ret += np.where(stepped, rewards, 0.0)
            state.t += stepped
            ended = stepped & (np.asarray(terminated) | np.asarray(truncated))
            self._record(stepped)
            for slot in np.flatnonzero(ended):
                fragment.end_piece(slot, state, bool(terminated[slot]), bool(truncated[slot]))
                self._lean_episode_done(
                    int(state.t[slot]),
                    float(state.ret[slot]),
                    time.perf_counter() - state.started[slot],
                )
                self._record_end(slot)
                finished += 1
            for slot in np.flatnonzero(state.resets):
                state.restart(slot)
                fragment.restart(slot)
                self._recorders[slot] = self._new_recorder(slot)
            state.resets = ended
            state.obs = obs
        for slot in range(len(state.obs)):  # the ongoing pieces, cut here
            if not state.resets[slot]:
                fragment.end_piece(slot, state, False, False)
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=ts)
        self._increase_sampled_metrics(ts, finished)
        return done + fragment.episodes(spaces)

    def _record(self, stepped: np.ndarray) -> None:
        """mobrl's episode recorders take the step each stepped slot just made."""
        if not self._recording:
            return  # nothing records (UE slots record in their env, Gym tasks not at all)
        for slot, recorder in enumerate(self._recorders):
            if recorder is not None and stepped[slot]:
                recorder.step()

    def _record_end(self, slot: int) -> None:
        recorder = self._recorders[slot]
        if recorder is not None:
            from mobrl.envs.callbacks import log_episode_summary

            log_episode_summary(self.metrics, recorder.summary())
            self._recorders[slot] = None

    def _lean_episode_done(self, length: int, ret: float, seconds: float) -> None:
        """One episode ended: RLlib's episode metrics and mobrl's training return."""
        self._log_episode_metrics(length, ret, seconds)
        self.metrics.log_value(EPISODE_RETURNS, ret, reduce="item_series")
