"""`env=hierarchical` (mobrl.envs.hierarchy): the network agent above the cell agents acts
every `env.period` steps and receives the network's objective summed over the steps since it
last acted; the λ it sets is the one the cells observe and are rewarded at; a policy per
level by default; the cell rules play it as they play `env=cells`; with `env.cell_policy` the
cells are held at a zoo cell policy and the network agent is the only agent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mobrl import energy
from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from, make_env, policy_setup
from mobrl.envs.hierarchy import NETWORK, NETWORK_SIZE, WEIGHT_SCALES, HierarchicalEnv
from mobrl.evaluation.policies import make_baseline
from mobrl.evaluation.rollout import run_episode
from mobrl.training.checks import validate_command_line


def _config(*extra: str) -> dict:
    return env_config_from(
        validate_command_line(["scenario=uma19_energy", "env=hierarchical", *extra])
    )


@pytest.mark.parametrize("period", [1, 7, 10])
def test_the_network_agent_acts_every_period_and_gets_the_periods_objective(period) -> None:
    env = make_env({**_config(f"env.period={period}"), "render_mode": None})
    obs, _ = env.reset(seed=1)
    core = env.core
    rng = np.random.default_rng(period)
    acted, owed, steps, rewarded = 0, 0.0, 0, []
    done = False
    while not done:
        acts = {a: 0 for a in obs if a != NETWORK}
        if NETWORK in obs:
            assert obs[NETWORK].shape == (NETWORK_SIZE,)
            acts[NETWORK] = int(rng.integers(0, len(WEIGHT_SCALES)))
            acted += 1
        obs, rewards, _, trunc, _ = env.step(acts)
        steps += 1
        owed += core.step_objective()
        if NETWORK in rewards:
            assert NETWORK in obs  # rewarded when it observes again (or at the end)
            assert rewards[NETWORK] == pytest.approx(owed, abs=1e-12)
            rewarded.append(steps)
            owed = 0.0
        else:
            assert NETWORK not in obs
        done = trunc["__all__"]
    assert acted == math.ceil(steps / period)
    assert rewarded == sorted({*range(period, steps + 1, period), steps})


def test_the_cells_observe_and_are_rewarded_at_the_networks_lambda() -> None:
    env = make_env({**_config("env.team_reward=0"), "render_mode": None})
    obs, _ = env.reset(seed=2)
    core = env.core
    base = core.power_model().weight
    for scale in range(len(WEIGHT_SCALES)):
        acts = {a: 0 for a in obs if a != NETWORK}
        if NETWORK in obs:
            acts[NETWORK] = scale
        obs, rewards, *_ = env.step(acts)
        lam = env.weight
        service, power = core.cell_parts()
        n = len(service)
        cells = [a for a in rewards if a != NETWORK]
        np.testing.assert_allclose(
            [rewards[a] for a in cells], n * (service - lam * power), atol=1e-12
        )
        assert obs["cell_0"][-1] == pytest.approx(lam / energy.WEIGHT, rel=1e-6)
    assert env.weight != base  # the network agent's choice took effect
    # the reported objective stays the layout's
    assert core.power_model().weight == base


def test_a_policy_per_level_and_rules_play_it_as_cells() -> None:
    config = _config()
    policies, mapping = policy_setup(config)
    assert policies == ["cells", "network"]
    assert mapping(NETWORK) == "network" and mapping("cell_7") == "cells"
    hier = run_episode(config, make_baseline("threshold"), 3)
    flat = run_episode(
        env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"])),
        make_baseline("threshold"),
        3,
    )
    for key, value in flat.items():
        if key.startswith("network/") or key.startswith("ue/"):
            assert hier[key] == value or (math.isnan(value) and math.isnan(hier[key])), key


@pytest.mark.parametrize(
    "extra, words",
    [
        (["env.period=0"], "env.period=0"),
        (["env.policies={cells: [cell_*]}"], "without a policy"),
        (["env.policies={network: [network], cells: [relay_*]}"], "matches no agent"),
        (["env.cell_policy=threshold"], "env.cell_policy=threshold"),
        (["env.cell_policy=zoo:uma19"], "not of cell agents"),
        (["env.cell_policy=zoo:uma19_energy", "env.neighbours=4"], "env.neighbours=6"),
        (["env.cell_policy=zoo:nothing"], "zoo policy 'nothing'"),
        (["env.network_reward=difference"], "env.network_reward=difference"),
        (["env.network_reward=gain"], "env.network_reward 'gain'"),
    ],
)
def test_bad_hierarchy_settings_are_one_line(extra: list[str], words: str) -> None:
    with pytest.raises(UserError) as caught:
        _config(*extra)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_frame_shows_the_network_agents_decision() -> None:
    """A rendered frame of env=hierarchical names the λ the network agent set, with the
    stations asleep and the network's power."""
    from mobrl.rendering.dashboard import DashboardRenderer
    from mobrl.rendering.frames import episode_scene, record_state

    env = make_env({**_config(), "render_mode": None})
    obs, _ = env.reset(seed=2)
    scale = WEIGHT_SCALES.index(2.0)
    env.step({a: (scale if a == NETWORK else 0) for a in obs})
    state = record_state(env.core, 0, 0.0)
    assert state.note == "network agent: λ × 2" and state.power is not None
    renderer = DashboardRenderer(episode_scene(env.core, None))
    renderer.draw(state)
    assert "network agent: λ × 2" in renderer.title.get_text()


def test_cells_held_at_a_zoo_policy_leave_the_network_agent_alone() -> None:
    """Under env.cell_policy=zoo:uma19_energy the only agent is the network agent: it observes
    every env.period steps (no agent observes in between), its rewards are the network's
    objective summed over its periods, and leaving the λ as it is plays the flat zoo entry's
    episode under env=cells to the bit; a cell rule still sets the cells' states itself."""
    from mobrl.evaluation.zoo import ZooPolicy

    config = _config("env.cell_policy=zoo:uma19_energy", "env.period=7")
    assert policy_setup(config)[0] == ["network"]
    env = make_env({**config, "render_mode": None})
    assert env.possible_agents == [NETWORK]
    obs, _ = env.reset(seed=4)
    neutral = WEIGHT_SCALES.index(1.0)
    owed, total, acted, steps, done = 0.0, 0.0, 0, 0, False
    while not done:
        acts = {}
        if obs:
            assert list(obs) == [NETWORK]
            acts, acted = {NETWORK: neutral}, acted + 1
        obs, rewards, _, trunc, _ = env.step(acts)
        steps += 1
        owed += env.core.step_objective()
        assert set(rewards) <= {NETWORK} and set(rewards) == set(obs)
        if rewards:
            assert rewards[NETWORK] == pytest.approx(owed, abs=1e-12)
            total, owed = total + rewards[NETWORK], 0.0
        done = trunc["__all__"]
    assert acted == math.ceil(steps / 7)
    flat_config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))

    class Neutral:
        def reset(self, seed=None):
            pass

        def act(self, observation, env=None):
            return {a: neutral for a in observation}

    held = run_episode(config, Neutral(), 5)
    alone = run_episode(config, make_baseline("cells_alone"), 5)  # the baseline of the same
    flat = run_episode(flat_config, ZooPolicy.load("zoo:uma19_energy"), 5)
    for key in ("network/objective", "network/energy", "ue/utility/p5", "length"):
        assert held[key] == flat[key] == alone[key], key
    rule = run_episode(config, make_baseline("threshold"), 5)
    assert (
        rule["network/energy"]
        == run_episode(flat_config, make_baseline("threshold"), 5)["network/energy"]
    )


def test_the_difference_reward_is_the_periods_objective_less_a_copys_at_the_layouts_lambda(
    tmp_path,
) -> None:
    """env.network_reward=difference: each reward is the network's objective over the period
    less what a copy of the env taken at the decision made of the same period with the cells
    at 1 × λ (the same UEs' moves); a decision that leaves λ as it is earns exactly 0.
    Evaluation plays the env with the objective as the return. The env is wrapped as the env
    runners wrap it (its copy must not step the original through the wrapper)."""
    import copy

    from mobrl.core.envfailures import guard
    from mobrl.scenarios.kinds import kind_of

    config = _config(
        "env.cell_policy=zoo:uma19_energy", "env.network_reward=difference", "env.period=5"
    )
    assert kind_of(config).seeded(config, 1)["network_reward"] == "objective"
    env = guard(make_env({**config, "render_mode": None}), str(tmp_path), "uma19_energy")
    obs, _ = env.reset(seed=6)
    neutral = WEIGHT_SCALES.index(1.0)
    choices = [neutral, WEIGHT_SCALES.index(4.0), WEIGHT_SCALES.index(0.0)] * 7
    rewards, expected, done = [], [], False
    while not done:
        acts, ref, owed = {}, None, 0.0
        if obs:
            acts = {NETWORK: choices.pop(0)}
            ref = copy.deepcopy(env)
            ref.network_reward = "objective"
            ref._set_scale(neutral)
        while True:
            obs, reward, _, trunc, _ = env.step(acts)
            acts = {}
            owed += env.core.step_objective()
            if ref is not None:  # the class's step (the copy's `step` is the wrapped original)
                HierarchicalEnv.step(ref, {})
                owed -= ref.core.step_objective()
            done = trunc["__all__"]
            if reward:
                rewards.append(reward[NETWORK])
                expected.append(owed)
                break
    np.testing.assert_allclose(rewards, expected, atol=1e-12)
    assert rewards[0] == 0.0 and any(r != 0.0 for r in rewards)


def test_cells_alone_is_a_baseline_only_above_held_cells() -> None:
    from mobrl.evaluation.policies import baselines_for, check_baselines

    held = _config("env.cell_policy=zoo:uma19_energy")
    assert "cells_alone" in baselines_for(held)
    check_baselines(["cells_alone", "threshold"], held)
    with pytest.raises(UserError) as caught:
        check_baselines(["cells_alone"], _config())
    assert "baseline 'cells_alone' does not apply" in str(caught.value)
