"""`run.imitate`'s DAgger (mobrl.training.imitation): labels, the fit, and where it applies."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from
from mobrl.training.checks import validate_command_line


def _env(obs: str = "topk_gain") -> dict:
    return env_config_from(validate_command_line(["scenario=small", f"env.obs={obs}"]))


def test_dagger_imitates_the_oracle_on_small_after_a_tiny_budget(capsys) -> None:
    import torch

    from mobrl.training.imitation import GreedyActor, accuracy, dagger, make_net
    from mobrl.training.labels import Collector

    torch.manual_seed(0)
    env_config = _env()
    net = make_net(5 * 3 + 2 + 3, 4, [64, 64])
    threads = torch.get_num_threads()
    found = dagger(net, env_config, "oracle", episodes=2, rounds=1, updates=300)
    assert torch.get_num_threads() == threads  # fitted on one thread, then given back
    assert found["rows"] > 0 and len(found["history"]) == 1
    assert found["train_acc"] > 0.85
    # in a log, its labelled episodes counted as they go, the last count saying all 4 are
    # done; then the round's agreement in words, with the measured numbers
    lines = capsys.readouterr().out.splitlines()
    counts = [line for line in lines if line.startswith("imitation: 4 episodes")]
    assert counts[-1].startswith("imitation: 4 episodes labelled by oracle: 4/4 (100%)"), lines
    said = [line for line in lines if line.startswith("imitation round 1 of 1: fit ")]
    seen = found["history"][0]
    assert len(said) == 1 and f"fit {seen['train_acc']:.3f};" in said[0], lines
    assert f"on {seen['all']:.3f} of moves, {seen['toggles']:.3f} of the expert's" in said[0]
    # on an unseen episode, in the states the policy itself reaches
    _, labels, played, *_ = Collector(env_config, 3).episode(1_500_000, learner=GreedyActor(net))
    acc = accuracy(played, labels)
    assert acc["all"] > 0.85, acc


def test_gain_features_are_topk_gains_last_columns() -> None:
    from mobrl.envs.observations import ue_columns
    from mobrl.envs.wrappers import find_core, ue_id
    from mobrl.evaluation.rollout import episode_env
    from mobrl.training.labels import with_features

    plain, gain = episode_env(_env("topk"), 3), episode_env(_env(), 3)
    obs_p, _ = plain.reset(seed=3)
    obs_g, _ = gain.reset(seed=3)
    core = find_core(plain)
    for _ in range(10):
        x = with_features(core, obs_p, 3, "gain")
        np.testing.assert_allclose(x, np.stack(list(obs_g.values())), atol=1e-6)
        column = ue_columns(core)
        act = {a: int(column[ue_id(a)] % 4) for a in obs_p}
        obs_p, *_ = plain.step(act)
        obs_g, *_ = gain.step(act)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["env=central", "env.obs=extended"],
            "run.imitate needs one agent per UE .env=ma. or per station",
        ),
        (["env.obs=mobile"], "use env.obs=topk_gain"),
        (["run.imitate.expert=orcle"], "Did you mean 'oracle'"),
        (["algo=dqn"], "Use algo=ppo"),
        (["run.resources.num_learners=1"], "run.resources.num_learners=0"),
        (["run.imitate.episodes=0"], "run.imitate.episodes must be >= 1"),
        (["run.imitate.workers=0"], r"run.imitate.workers \(processes that play the labelled"),
        (["run.imitate.revisions=0.5"], r"run.imitate.revisions \(a revised move's weight"),
        (["run.imitate.ahead=0"], r"run.imitate.ahead \(the weight of a move planned ahead"),
        (["run.imitate.ahead=10"], "expert oracle does not plan. Use run.imitate.expert=oracle_h"),
        (["run.imitate.expert=oracle_horizon", "run.imitate.ahead=10"], "Add env.decide=in_turns"),
        (["run.imitate.horizon=2"], "expert oracle does not plan. Use run.imitate.expert=orac"),
        (["run.imitate.expert=oracle_horizon", "run.imitate.horizon=0"], "a whole number of"),
        (["run.imitate.weight=0.02"], "UE agents' experts do not weigh energy. Use env=cells"),
        (
            [
                "scenario=uma19_energy",
                "env=cells",
                "run.imitate.expert=threshold",
                "run.imitate.weight=0.02",
            ],
            "threshold does not weigh energy. Use run.imitate.expert=energy_oracle",
        ),
        (
            [
                "scenario=uma19_energy",
                "env=cells",
                "run.imitate.expert=energy_oracle",
                "run.imitate.weight=-1",
            ],
            r"run.imitate.weight \(the λ an expert weighs energy with\) must be a number from",
        ),
        (["run.imitate.floor=10"], "run.imitate.floor is for a cell expert's planning; UE"),
        (
            [
                "scenario=uma19_energy",
                "env=cells",
                "run.imitate.expert=idle_off",
                "run.imitate.floor=10",
            ],
            "idle_off does not weigh energy. Use run.imitate.expert=energy_oracle",
        ),
        (
            [
                "scenario=uma19_energy",
                "env=cells",
                "run.imitate.expert=energy_oracle",
                "run.imitate.floor=-2",
            ],
            r"run.imitate.floor \(the price an expert plans with of a UE's lost service\) must",
        ),
    ],
)
def test_imitate_where_it_applies_only(overrides: list[str], message: str) -> None:
    from mobrl.training.checks import check_settings

    base = ["scenario=small", "env.obs=topk_gain", "run.imitate.expert=oracle"]
    with pytest.raises(UserError, match=message):
        check_settings(validate_command_line([*base, *overrides]))


def test_imitate_is_off_by_default_and_checks_pass_where_it_applies() -> None:
    from mobrl.training.checks import check_settings

    cfg = validate_command_line(["scenario=small"])
    assert cfg.run.imitate.expert is None
    check_settings(
        validate_command_line(["scenario=small", "env.obs=topk_gain", "run.imitate.expert=oracle"])
    )


def test_the_algorithm_imitates_at_init_but_not_when_resumed() -> None:
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    cfg = validate_command_line(
        ["scenario=small", "env.obs=topk_gain", "run=smoke", "run.imitate.expert=oracle"]
    )
    env_config = factory.env_config_from(cfg)
    fresh = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    (imitate,) = fresh.callbacks_on_algorithm_init  # PPO has no replay buffer to seed
    assert imitate.keywords["settings"]["expert"] == "oracle"
    resumed = build_algorithm_config(cfg, factory.ENV_NAME, env_config, imitate=False)
    assert resumed.callbacks_on_algorithm_init is None
    plain = validate_command_line(["scenario=small", "env.obs=topk_gain", "run=smoke"])
    off = build_algorithm_config(plain, factory.ENV_NAME, factory.env_config_from(plain))
    assert off.callbacks_on_algorithm_init is None


def test_module_logits_are_the_modules_action_logits_with_gradients_on_the_actor_only() -> None:
    """`ModuleLogits` runs PPO's actor encoder and `pi` head alone: the logits RLlib's
    `forward_train` gives, gradients reaching the actor's weights and not the critic's."""
    import gymnasium as gym
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from mobrl.training.imitation import ModuleLogits

    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-1.0, 1.0, (7,), np.float32),
        action_space=gym.spaces.Discrete(4),
        model_config={"fcnet_hiddens": [16, 16], "vf_share_layers": False},
    ).build()
    logits = ModuleLogits(module)
    assert logits.actor is not None
    x = torch.randn(5, 7)
    want = module.forward_train({Columns.OBS: x})[Columns.ACTION_DIST_INPUTS]
    got = logits(x)
    torch.testing.assert_close(got, want)
    got.sum().backward()
    assert module.pi.net.mlp[0].weight.grad is not None
    assert all(p.grad is None for p in module.encoder.critic_encoder.parameters())


def test_appo_imitates_through_its_policy_head_and_its_targets_start_from_the_imitation() -> None:
    """APPO's module is PPO's actor-critic with target networks: `ModuleLogits` fits its
    actor and `pi` head, and `start_targets` leaves the targets equal to the fitted networks
    (the policy APPO's first updates are measured against)."""
    import gymnasium as gym
    import torch
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis import TargetNetworkAPI
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from mobrl.training.imitation import ModuleLogits, start_targets

    def target_logits() -> torch.Tensor:
        (out,) = module.forward_target({Columns.OBS: x}).values()
        return out

    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=APPOConfig().get_default_rl_module_spec().module_class,
        observation_space=gym.spaces.Box(-1.0, 1.0, (7,), np.float32),
        action_space=gym.spaces.Discrete(4),
        model_config={"fcnet_hiddens": [16, 16], "vf_share_layers": False},
    ).build()
    assert isinstance(module, TargetNetworkAPI)
    module.make_target_networks()
    logits = ModuleLogits(module)
    assert logits.actor is not None
    x = torch.randn(5, 7)
    with torch.no_grad():
        for p in logits.parameters():
            p.add_(torch.randn_like(p))  # a fit moved the actor
    assert not torch.allclose(target_logits(), logits(x))
    start_targets(module)
    torch.testing.assert_close(target_logits(), logits(x))


def test_labelled_episodes_on_two_processes_are_the_ones_played_here() -> None:
    """`run.imitate.workers`: episodes played on 2 processes, the expert's and a PPO module's
    (its `plain_copy`, which gives its logits bit for bit), are the episodes played here, row
    for row (cells of `uma19_energy` under a planning expert with a service floor)."""
    import functools

    import gymnasium as gym
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from mobrl.envs.cells import cell_agent
    from mobrl.evaluation.rollout import episode_env
    from mobrl.training.imitation import ModuleLogits, labelled_episodes, plain_copy

    config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))
    env = episode_env(config, 0)
    agent = cell_agent(0)
    space, actions = env.observation_spaces[agent], env.action_spaces[agent]
    env.close()
    torch.manual_seed(0)
    module = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=gym.spaces.Box(-np.inf, np.inf, space.shape, np.float32),
        action_space=actions,
        model_config={"fcnet_hiddens": [16, 16], "vf_share_layers": False},
    ).build()
    logits = ModuleLogits(module)
    x = torch.randn(64, space.shape[0])
    with torch.no_grad():
        assert torch.equal(plain_copy(logits)(x), logits(x))
    settings = (config, 0, "energy_greedy", None, None, 1.0)
    played = {}
    for workers in (1, 2):
        counted: list[int] = []
        done = functools.partial(counted.append, 1)
        with labelled_episodes(settings, workers) as play:
            expert = play([7], None, done)
            policy = play([8], logits, done)
        assert len(counted) == 2
        played[workers] = expert + policy
    for here, there in zip(played[1], played[2]):
        for a, b in zip(here, there):
            np.testing.assert_array_equal(a, b)
    # the policy played its own requests, not the expert's
    assert not np.array_equal(played[1][1].played, played[1][1].y)


def test_one_torch_thread_gives_the_threads_back_even_on_error() -> None:
    import torch

    from mobrl.training.imitation import one_torch_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), one_torch_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_fit_draws_rows_in_proportion_to_their_weight() -> None:
    """Rows alike but for their labels: fit uniformly, the network says the majority's label;
    with the minority weighing 100 each, it says theirs (as run.imitate.revisions weighs the
    rows that revise a move)."""
    import torch

    from mobrl.training.imitation import fit, make_net

    x = np.ones((100, 3), dtype=np.float32)
    y = np.where(np.arange(100) < 90, 0, 1)
    for weight, want in ((None, 0), (np.where(y == 1, 100.0, 1.0), 1)):
        torch.manual_seed(0)
        net = make_net(3, 2, [8])
        fit(net, x, y, 200, weight=weight)
        with torch.no_grad():
            assert int(net(torch.ones(1, 3)).argmax()) == want


def test_every_result_carries_the_imitation_time_and_the_last_rounds_agreement() -> None:
    """Two policies imitated, the second in two rounds: the mean of each one's last round."""
    from types import SimpleNamespace

    from mobrl.core import metrics as keys
    from mobrl.training.imitation import imitation_result, imitation_summary

    rounds = [{"round": 0, "all": 0.5, "toggles": 0.1}, {"round": 1, "all": 0.9, "toggles": 0.7}]
    learners = [{"cells": {"history": rounds[:1]}, "network": {"history": rounds}}]
    algorithm = SimpleNamespace(imitation=imitation_summary(12.5, learners))
    result: dict = {}
    imitation_result(algorithm=algorithm, result=result)
    assert keys.result_value(result, keys.IMITATION_TIME) == 12.5
    assert keys.result_value(result, keys.IMITATION_AGREES) == pytest.approx((0.5 + 0.9) / 2)
    assert keys.result_value(result, keys.IMITATION_AGREES_TOGGLES) == pytest.approx(0.4)
    # no rounds (run.imitate.rounds=0): the time alone; a resumed run: nothing
    algorithm.imitation = imitation_summary(12.5, [{"cells": {"history": []}}])
    result = {}
    imitation_result(algorithm=algorithm, result=result)
    assert result == {"imitation": {"time_s": 12.5}}
    result = {}
    imitation_result(algorithm=SimpleNamespace(), result=result)
    assert result == {}
