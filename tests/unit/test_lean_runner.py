"""mobrl's lean env runner samples the same episodes as RLlib's own loop, and knows when not to.

Each test builds real RLlib env runners in this process (no Ray cluster) with the same seed,
samples several fragments with the lean loop and with RLlib's `_sample`, and compares every
column of every episode piece, the pieces' ids across fragments, and the metrics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
import torch  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402

from mobrl.envs.lean_runner import LeanEnvRunner  # noqa: E402

FRAGMENTS = 3


def _sample(runner: Any, lean: bool, steps: int) -> tuple[list[list], dict]:
    if not lean:
        runner._lean_reason = "RLlib's loop, for the comparison"
    assert runner.lean_reason is None if lean else runner.lean_reason
    torch.manual_seed(0)
    fragments = [runner.sample(num_timesteps=steps, explore=True) for _ in range(FRAGMENTS)]
    return fragments, runner.get_metrics()


def _key(episode: Any) -> tuple:
    return (episode.t_started, len(episode), episode.get_observations(0).tobytes())


def _assert_same_episodes(ours: list[list], rllib: list[list]) -> None:
    """The same pieces (matched by start, length and first observation), column by column,
    in the same order of done pieces first; ids continue across fragments as RLlib's do."""
    for mine, theirs in zip(ours, rllib):
        assert len(mine) == len(theirs)
        assert [e.is_done for e in mine] == sorted((e.is_done for e in mine), reverse=True)
        by_key = {_key(e): e for e in theirs}
        assert set(by_key) == {_key(e) for e in mine}
        for episode in mine:
            other = by_key[_key(episode)]
            assert (episode.is_terminated, episode.is_truncated) == (
                other.is_terminated,
                other.is_truncated,
            )
            np.testing.assert_array_equal(episode.get_observations(), other.get_observations())
            np.testing.assert_array_equal(episode.get_actions(), other.get_actions())
            np.testing.assert_array_equal(episode.get_rewards(), other.get_rewards())
            assert set(episode.extra_model_outputs) == set(other.extra_model_outputs)
            for column in episode.extra_model_outputs:
                np.testing.assert_allclose(
                    episode.get_extra_model_outputs(column),
                    other.get_extra_model_outputs(column),
                    rtol=1e-6,
                )
    for runs in (ours, rllib):  # a piece cut at the end continues under its id
        for before, after in zip(runs, runs[1:]):
            cut = {e.id_ for e in before if not e.is_done}
            continued = {e.id_ for e in after if e.t_started > 0}
            assert cut >= continued and continued


def _cartpole(**env_runners: Any) -> Any:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4, **env_runners)
        .debugging(seed=3)
    )


def test_cartpole_episodes_and_metrics_equal_rllibs() -> None:
    ours, our_metrics = _sample(LeanEnvRunner(config=_cartpole()), True, 150)
    rllib, rllib_metrics = _sample(LeanEnvRunner(config=_cartpole()), False, 150)
    _assert_same_episodes(ours, rllib)
    assert sum(e.is_done for f in ours for e in f) > 10  # episodes ended inside fragments
    for key in (
        "episode_return_mean",
        "episode_len_mean",
        "episode_return_min",
        "episode_return_max",
        "num_episodes",
        "num_env_steps_sampled",
        "num_env_steps_sampled_lifetime",
    ):
        assert our_metrics[key].peek() == pytest.approx(rllib_metrics[key].peek()), key


def test_ue_slots_sample_the_same_episodes_lean_as_with_rllibs_loop() -> None:
    """`small` as UE slots (mobrl's slot runner): 5 slots per copy, 2 copies, episodes of
    100 env steps cut by 60-step fragments, ended inside them and reset."""
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.envs.slot_runner import UESlotEnvRunner
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(
        ["scenario=small", "env=ma", "run=smoke", "run.resources.num_envs_per_env_runner=2"]
    )
    env_config = factory.env_config_from(cfg)
    factory.register()
    config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    assert config.env_runner_cls is UESlotEnvRunner
    ours, our_metrics = _sample(UESlotEnvRunner(config=config), True, 600)
    rllib, rllib_metrics = _sample(UESlotEnvRunner(config=config), False, 600)
    _assert_same_episodes(ours, rllib)
    assert sum(e.is_done for f in ours for e in f) == 10  # one episode of each slot
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime", "num_episodes"):
        assert our_metrics[key].peek() == pytest.approx(rllib_metrics[key].peek()), key


class _EveryStep(RLlibCallback):
    def on_episode_step(self, **kwargs: Any) -> None:
        pass


def test_what_the_lean_loop_cannot_serve_falls_back_to_rllibs_and_says_why() -> None:
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    per_step = LeanEnvRunner(config=_cartpole().callbacks(_EveryStep))
    assert per_step.lean_reason == "_EveryStep.on_episode_step"
    filtered = LeanEnvRunner(
        config=_cartpole(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    )
    assert filtered.lean_reason == "connectors ['MeanStdFilter']"
    box = LeanEnvRunner(
        config=PPOConfig().environment("Pendulum-v1").env_runners(num_env_runners=0)
    )
    assert box.lean_reason == "an action space other than Discrete or MultiDiscrete"
    # and RLlib's loop samples them as it always did
    episodes = filtered.sample(num_timesteps=40)
    assert sum(len(e) for e in episodes) >= 40


def test_the_lean_runner_is_what_single_agent_training_uses() -> None:
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    for overrides, expected in (
        (["scenario=cartpole"], "LeanEnvRunner"),
        (["scenario=small", "env=central"], "LeanEnvRunner"),
        (["scenario=small", "env=ma"], "UESlotEnvRunner"),
        (["scenario=small", "env=ma", "env.sampler=multi_agent"], None),
    ):
        cfg = compose(overrides)
        config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
        name = getattr(config.env_runner_cls, "__name__", None)
        assert name == expected, overrides


def test_ue_slot_batches_count_rows_under_ppo_so_a_minibatch_may_exceed_the_env_steps() -> None:
    """small (5 UEs), a batch of 200 env steps: 1,000 rows under PPO, a minibatch of 900 rows
    allowed; one sample holds the 200 env steps (1,000 slot steps), logged as 200 env steps
    and 1,000 agent steps. APPO keeps counting env steps."""
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.envs.slot_runner import UESlotEnvRunner
    from mobrl.training.algos import build_algorithm_config
    from mobrl.training.checks import check_settings

    cfg = compose(["scenario=small", "env=ma", "run=smoke", "run.batch.minibatch_size=900"])
    check_settings(cfg)
    env_config = factory.env_config_from(cfg)
    factory.register()
    config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    assert (config.count_steps_by, config.total_train_batch_size, config.minibatch_size) == (
        "agent_steps",
        1000,
        900,
    )
    runner = UESlotEnvRunner(config=config)
    episodes = runner.sample()
    assert sum(len(e) for e in episodes) == 1000
    metrics = runner.get_metrics()
    assert metrics["num_env_steps_sampled"].peek() == 200
    assert metrics["num_agent_steps_sampled"]["default_agent"].peek() == 1000

    appo = compose(["scenario=small", "env=ma", "algo=appo", "run=smoke"])
    appo_config = build_algorithm_config(appo, factory.ENV_NAME, factory.env_config_from(appo))
    assert (appo_config.count_steps_by, appo_config.total_train_batch_size) == ("env_steps", 200)


def test_switching_between_the_loops_starts_each_afresh() -> None:
    """Random actions (RLlib's loop) after lean fragments, then lean again: every piece is
    whole, RLlib's loop resets the envs the lean loop left rather than continuing stale
    episodes."""
    runner = LeanEnvRunner(config=_cartpole())
    for random_actions in (False, True, False, True):
        episodes = runner.sample(num_timesteps=60, random_actions=random_actions)
        assert sum(len(e) for e in episodes) >= 60
        for episode in episodes:
            episode.validate()
            assert len(episode.get_observations()) == len(episode) + 1


def test_the_training_return_is_logged_once_by_whichever_loop_samples() -> None:
    """Every finished episode's return reaches mobrl's training return exactly once: from the
    lean loop itself, or (where RLlib's loop samples, e.g. `env=central` with its per-step UE
    metrics) from `callbacks.log_episode_return`."""
    from mobrl.config import compose
    from mobrl.core.metrics import EPISODE_RETURNS
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    factory.register()
    for overrides, lean in (
        (["scenario=cartpole", "run=smoke"], True),
        (["scenario=small", "env=central", "run=smoke"], True),
        (["scenario=arena", "env.mode=single", "run=smoke"], None),
    ):
        if lean is None:  # a single-agent env whose callbacks want every step
            continue
        cfg = compose(overrides)
        config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
        runner = config.env_runner_cls(config=config)
        assert (runner.lean_reason is None) is lean
        assert runner.logs_episode_returns is lean
        episodes = runner.sample(num_timesteps=400)
        metrics = runner.get_metrics()
        done = sum(e.is_done for e in episodes)
        assert done > 0
        assert len(metrics[EPISODE_RETURNS].peek()) == done, overrides


def test_central_ue_metrics_recorded_lean_equal_rllibs_callbacks() -> None:
    """`env=central` with mobrl's UE metrics (`EpisodeMetricsCallback`): the lean loop records
    each episode with the same recorder at the same steps as the callback does in RLlib's."""
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(["scenario=small", "env=central", "run=smoke"])
    factory.register()
    config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
    assert config.callbacks_class.__name__ == "EpisodeMetricsCallback"
    ours, our_metrics = _sample(config.env_runner_cls(config=config), True, 120)
    rllib, rllib_metrics = _sample(config.env_runner_cls(config=config), False, 120)
    _assert_same_episodes(ours, rllib)
    ours_flat, rllib_flat = _flat(our_metrics), _flat(rllib_metrics)
    measures = {k for k in rllib_flat if k.startswith(("ue/", "network/", "fairness/"))}
    assert len(measures) > 5, sorted(rllib_flat)
    assert measures == {k for k in ours_flat if k.startswith(("ue/", "network/", "fairness/"))}
    for key in measures:
        assert ours_flat[key] == pytest.approx(rllib_flat[key], nan_ok=True), key


def _flat(metrics: dict, prefix: str = "") -> dict[str, Any]:
    """A runner's reduced metrics as flat `a/b/c` keys and peeked values."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value.peek() if hasattr(value, "peek") else value
    return out


def test_an_episode_cut_between_samples_keeps_recording_the_live_env() -> None:
    """RLlib deep-copies an episode's `custom_data` into its continuation after each sample;
    mobrl's recorder must stay the live env's, not a frozen copy (UE metrics of every episode
    longer than a fragment were recorded on a copy before)."""
    import copy

    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.envs.netstats import EpisodeRecorder
    from mobrl.envs.wrappers import find_core
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(["scenario=small", "env=central", "run=smoke"])
    factory.register()
    config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
    runner = config.env_runner_cls(config=config)
    runner._lean_reason = "RLlib's loop, whose episodes are cut"
    runner.sample(num_timesteps=60)
    recorder = runner._ongoing_episodes[0].custom_data["mobrl_recorder"]
    assert isinstance(recorder, EpisodeRecorder) and copy.deepcopy(recorder) is recorder
    assert recorder.core is find_core(runner.env.unwrapped, 0)
