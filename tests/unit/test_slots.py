"""UE slots: the same transitions as the multi-agent wrapper, and when mobrl samples with them."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.envs import factory
from mobrl.envs.slots import TRAIN_SEED_BASE, copy_seed
from mobrl.scenarios.kinds.mobile import make_slot_env


def _env_config(*overrides: str) -> dict:
    return factory.env_config_from(compose(list(overrides)))


@pytest.mark.parametrize(
    ("scenario", "team", "obs"),
    [("small", 0.0, "mobile"), ("medium", 0.0, "mobile"), ("small", 0.5, "mobile"),
     ("medium", 0.0, "topk")],
)  # fmt: skip
def test_slots_step_like_the_multi_agent_wrapper(scenario: str, team: float, obs: str) -> None:
    env_config = _env_config(
        f"scenario={scenario}", "env=ma", f"env.team_reward={team}", f"env.obs={obs}"
    )
    copies = 2
    n = factory.num_ues(env_config)
    slots = make_slot_env(env_config, copies * n)
    seeds = [copy_seed(0, 0, c) for c in range(copies)]
    wrappers = [factory.make_env({**env_config, "kwargs": {"seed": seed}}) for seed in seeds]
    obs, _ = slots.reset()
    ma_obs = [w.reset()[0] for w in wrappers]
    rng = np.random.default_rng(0)
    returns = [0.0] * copies
    episodes_done = 0
    for _ in range(250):  # two and a half 100-step episodes
        actions = rng.integers(0, slots.single_action_space.n, size=slots.num_envs)
        for c in range(copies):
            rows = obs[c * n : (c + 1) * n]
            np.testing.assert_array_equal(rows, np.stack([ma_obs[c][f"ue_{u}"] for u in range(n)]))
        obs, rewards, terminated, truncated, _ = slots.step(actions)
        assert not terminated.any()
        for c, wrapper in enumerate(wrappers):
            act = {f"ue_{u}": int(actions[c * n + u]) for u in range(n)}
            ma_obs[c], ma_rew, _, ma_trunc, _ = wrapper.step(act)
            expected = np.array([ma_rew[f"ue_{u}"] for u in range(n)], dtype=np.float32)
            np.testing.assert_allclose(rewards[c * n : (c + 1) * n], expected, rtol=1e-6)
            returns[c] += float(expected.astype(np.float64).sum())
            assert truncated[c * n : (c + 1) * n].all() == ma_trunc["__all__"]
            if ma_trunc["__all__"]:
                episodes_done += 1
                ma_obs[c] = wrapper.reset()[0]
        if truncated.any():
            # next-step autoreset: the following step only resets, with zero rewards
            obs, rewards, _, truncated, _ = slots.step(actions)
            assert not rewards.any() and not truncated.any()
    finished = slots.pop_finished()
    assert len(finished) == episodes_done == 2 * copies
    for record in finished[:copies]:
        assert record["length"] == 100
        assert sorted(record["metrics"])  # UE and network metrics were tracked
    assert finished[0]["return"] == pytest.approx(sum(finished[0]["ue_returns"]))
    assert slots.pop_finished() == []


def test_copies_get_distinct_training_seeds() -> None:
    seeds = {copy_seed(run, worker, c) for run in (0, 1) for worker in (0, 1, 2) for c in range(8)}
    assert len(seeds) == 2 * 3 * 8
    assert min(seeds) >= TRAIN_SEED_BASE


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["scenario=small"], "ue_slots"),
        (["scenario=large"], "ue_slots"),
        (["scenario=small", "env.sampler=multi_agent"], "multi_agent"),
        (["scenario=small", "env.policies=per_agent"], "multi_agent"),
        (["scenario=small", "engine=stock"], "multi_agent"),
        (["scenario=dense_urban"], "multi_agent"),  # UEs come and go
        (["scenario=small", "env=central"], None),
        (["scenario=cartpole"], None),
    ],
)
def test_sampler_resolution(overrides: list[str], expected: str | None) -> None:
    env_config = _env_config(*overrides)
    assert env_config["sampler"] == expected
    if expected == "ue_slots":
        assert factory.policy_ids(env_config) == [factory.DEFAULT_POLICY]


def test_forcing_slots_where_they_do_not_apply_names_the_fix() -> None:
    with pytest.raises(UserError, match="env.sampler=auto or multi_agent"):
        _env_config("scenario=dense_urban", "env.sampler=ue_slots")
    with pytest.raises(UserError, match="Did you mean 'ue_slots'"):
        _env_config("scenario=small", "env.sampler=ue_slot")


def test_team_reward_moves_credit_between_ues_but_keeps_the_return() -> None:
    plain, shared = (
        factory.make_env(_env_config("scenario=dense_urban", f"env.team_reward={t}"))
        for t in (0.0, 1.0)
    )
    plain.reset(seed=3)
    shared.reset(seed=3)
    rng = np.random.default_rng(1)
    differ = False
    for _ in range(60):  # UEs arrive and leave: only the rewarded UEs share
        actions = {a: int(rng.integers(0, 4)) for a in plain.agents}
        _, own, *_ = plain.step(actions)
        _, team, *_ = shared.step(actions)
        assert own.keys() == team.keys()
        assert sum(team.values()) == pytest.approx(sum(own.values()), abs=1e-9)
        if len(team) > 1:
            mean = sum(own.values()) / len(own)
            assert all(v == pytest.approx(mean) for v in team.values())
            differ |= any(abs(team[a] - own[a]) > 1e-6 for a in own)
    assert differ


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "lots"])
def test_team_reward_outside_zero_to_one_names_the_fix(bad: str) -> None:
    with pytest.raises(UserError, match=f"env.team_reward={bad}"):
        _env_config("scenario=small", f"env.team_reward={bad}")


@pytest.mark.parametrize(
    ("ues", "copies", "batch", "runners", "env_steps"),
    [
        (5, 1, 200, 0, 200),  # small, run=smoke
        (30, 8, 2000, 0, 2160),  # large, ppo/large/ma_imitate: RLlib's rounding, as before
        (5, 8, 1000, 0, 1000),  # small, ppo/small/ma
        (1000, 1, 200, 0, 200),  # city, run=smoke: the batch, not one step per UE per copy
        (1000, 2, 300, 0, 300),  # city, two copies: whole steps of each copy
        (1000, 2, 301, 0, 302),
        (1000, 1, 200, 2, 100),  # two runners share the batch
    ],
)
def test_a_fragment_is_the_runners_share_of_the_batch_in_env_steps(
    ues: int, copies: int, batch: int, runners: int, env_steps: int
) -> None:
    """The env steps one automatic rollout fragment of the UE-slot runner covers: RLlib's
    fragment where the batch holds at least one step per slot (unchanged), the runner's share
    in whole env-copy steps where a layout has more slots than the batch has env steps."""
    from types import SimpleNamespace

    from ray.rllib.algorithms.ppo import PPOConfig

    from mobrl.envs.slot_runner import UESlotEnvRunner

    config = (
        PPOConfig()
        .training(train_batch_size_per_learner=batch)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=copies * ues)
    )
    runner = SimpleNamespace(
        config=config,
        num_envs=copies * ues,
        worker_index=1 if runners else 0,
        env=SimpleNamespace(unwrapped=SimpleNamespace(n_ues=ues, copies=copies)),
    )
    slot_steps = UESlotEnvRunner._fragment_slot_steps(runner)  # type: ignore[arg-type]
    assert slot_steps == env_steps * ues


@pytest.mark.parametrize(
    ("algo", "n_step", "ues", "copies", "env_steps"),
    [
        ("dqn", 1, 5, 4, 4),  # dqn/small/ma: one step of each of 4 copies
        ("dqn", 1, 30, 1, 1),  # large, one copy: 30 UE steps, not 30 env steps
        ("dqn", (2, 5), 5, 8, 40),  # dqn/cartpole's n-step on small: its horizon, 5 steps
        ("sac", 1, 5, 1, 1),  # sac/small/ma: every env step
        ("sac", 1, 30, 2, 2),
    ],
)
def test_an_off_policy_fragment_is_its_n_step_horizon_of_every_copy(
    algo: str, n_step: int | tuple[int, int], ues: int, copies: int, env_steps: int
) -> None:
    """DQN and SAC sample their automatic fragment (their n-step horizon, in steps of each
    env) between two training steps: through UE slots that many steps of every slot, so the
    env steps between updates are those of RLlib's multi-agent runner on the same copies,
    whatever the layout's number of UEs."""
    from types import SimpleNamespace

    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.sac import SACConfig

    from mobrl.envs.slot_runner import UESlotEnvRunner

    config = (
        (DQNConfig() if algo == "dqn" else SACConfig())
        .training(n_step=n_step)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=copies * ues)
    )
    runner = SimpleNamespace(
        config=config,
        num_envs=copies * ues,
        worker_index=0,
        env=SimpleNamespace(unwrapped=SimpleNamespace(n_ues=ues, copies=copies)),
    )
    slot_steps = UESlotEnvRunner._fragment_slot_steps(runner)  # type: ignore[arg-type]
    assert slot_steps == env_steps * ues
