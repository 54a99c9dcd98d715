"""Heuristic baselines on hand-made and real states."""

from __future__ import annotations

import copy
import sys
from contextlib import contextmanager
from functools import cache

import gymnasium as gym
import numpy as np
import pytest

from mobrl.envs.factory import make_env
from mobrl.evaluation.baselines import FIELD_RULES
from mobrl.evaluation.policies import (
    BASELINES,
    FullPolicy,
    GreedyPolicy,
    PoleAnglePolicy,
    baselines_for,
)


def _small(mode: str = "ma", engine: str = "fast"):
    env = make_env({"kind": "mobile", "id": "small", "mode": mode, "kwargs": {}, "engine": engine})
    env.reset(seed=0)
    return env


def _place(core, ue_id: int, xy: tuple[float, float]) -> None:
    ue = core.users[ue_id]
    ue.x, ue.y = xy


def test_greedy_picks_the_max_snr_station_on_a_hand_made_state() -> None:
    env = _small(engine="stock")  # hand-made states: move UEs and edit links directly
    core = env.core
    # put UE 0 right next to base station 2 (at (120, 30) in the small layout)
    _place(core, 0, (121.0, 31.0))
    snrs = [core.channel.snr(bs, core.users[0]) for _, bs in sorted(core.stations.items())]
    assert int(np.argmax(snrs)) == 2
    policy = GreedyPolicy()
    policy.reset(0)
    assert policy.act({"ue_0": None}, env) == {"ue_0": 3}  # action = station id + 1
    # once connected to the best station it keeps it, and drops any other connection
    core.connections[core.stations[2]].add(core.users[0])
    core.connections[core.stations[1]].add(core.users[0])
    near_one = core.channel.snr(core.stations[1], core.users[0]) > core.users[0].snr_threshold
    expected = 2 if near_one else 0
    assert policy.act({"ue_0": None}, env) == {"ue_0": expected}


def test_full_connects_every_reachable_station_one_per_step() -> None:
    env = _small(engine="stock")
    core = env.core
    _place(core, 0, (90.0, 80.0))
    ue = core.users[0]
    reachable = [
        b for b, bs in sorted(core.stations.items()) if core.channel.snr(bs, ue) > ue.snr_threshold
    ]
    policy = FullPolicy()
    policy.reset(0)
    chosen = []
    for _ in range(len(reachable) + 1):
        action = policy.act({"ue_0": None}, env)["ue_0"]
        if action:
            chosen.append(action - 1)
            core.connections[core.stations[action - 1]].add(ue)
    assert chosen == reachable


@pytest.mark.parametrize("mode", ["ma", "central"])
@pytest.mark.parametrize(
    "name", ["random", "noop", "greedy", "full", "capped", "oracle", *FIELD_RULES]
)
def test_mobile_baselines_give_valid_actions_for_whole_episodes(mode: str, name: str) -> None:
    env = _small(mode)
    policy = BASELINES[name]()
    policy.reset(1)
    obs, _ = env.reset(seed=1)
    steps = 0
    while True:
        action = policy.act(obs, env)
        if mode == "ma":
            assert set(action) == set(obs)
            assert all(env.action_spaces[a].contains(v) for a, v in action.items())
        else:
            assert env.action_space.contains(np.asarray(action, dtype=np.int64))
        obs, _, term, trunc, _ = env.step(action)
        steps += 1
        if (term["__all__"] or trunc["__all__"]) if mode == "ma" else (term or trunc):
            break
    assert steps == 100


def test_greedy_beats_noop_on_small() -> None:
    returns = {}
    for name in ("noop", "greedy"):
        env = _small("central")
        policy = BASELINES[name]()
        policy.reset(0)
        obs, _ = env.reset(seed=0)
        total, done = 0.0, False
        while not done:
            obs, reward, term, trunc, _ = env.step(policy.act(obs, env))
            total += reward
            done = term or trunc
        returns[name] = total
    assert returns["greedy"] > returns["noop"]


def test_pole_angle_controller_balances_cartpole() -> None:
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    policy, total, done = PoleAnglePolicy(), 0.0, False
    while not done:
        obs, reward, term, trunc, _ = env.step(policy.act(obs, env))
        total += reward
        done = term or trunc
    assert total >= 150


def test_default_baselines_per_scenario_kind() -> None:
    assert baselines_for({"kind": "mobile", "id": "small"}) == [
        "random",
        "noop",
        "greedy",
        "greedy_fill",
        "full",
        "capped",
        "oracle",
    ]
    assert baselines_for({"kind": "gym", "id": "CartPole-v1"}) == ["random", "pole_angle"]
    assert baselines_for({"kind": "gym", "id": "Acrobot-v1"}) == ["random"]


def _per_ue_slots(policy, core, actions: dict, k: int) -> dict:
    """Each UE's topk slot action by its definition: the slot holding the rule's station,
    else 0, or where the rule `frees_slot` the last slot whose station the UE is linked to."""
    from mobrl.envs.observations import station_arrays, topk_slots, ue_columns
    from mobrl.envs.wrappers import ue_id

    state = station_arrays(core)
    order, linked = topk_slots(state, k), state["conn"] & state["reach"]
    column, out = ue_columns(core), {}
    for agent, action in actions.items():
        c = column[ue_id(agent)]
        slots = order[:, c].tolist()
        slot = slots.index(action - 1) + 1 if action and action - 1 in slots else 0
        if slot == 0 and action and policy.frees_slot(core, core.users[ue_id(agent)], action):
            held = [j for j, b in enumerate(slots) if b >= 0 and linked[b, c]]
            slot = held[-1] + 1 if held else 0
        out[agent] = slot
    return out


@contextmanager
def _link_states_of_one_step():
    """A UE's `ue_link_state`, the network's `link_state` and greedy_fill's fill links
    computed once while the state holds still: a per-UE definition reads other UEs' links too
    (greedy_fill's fill links read every UE's, capped reads the network's), the same values
    once per UE of the step. Every mobrl module that reads one of them reads the held values,
    then the function again."""
    from mobrl.evaluation.baselines import base, fill
    from mobrl.network import service

    held: dict = {}
    patched = []
    for original in (base.ue_link_state, service.link_state, fill._fill_ues):

        def once(*args, _original=original, **kwargs):
            key = (_original, *map(id, args), *sorted(kwargs.items()))
            if key not in held:
                held[key] = _original(*args, **kwargs)
            return held[key]

        for module in _readers(original):
            setattr(module, original.__name__, once)
            patched.append((module, original))
    try:
        yield
    finally:
        for module, original in patched:
            setattr(module, original.__name__, original)


_READERS: dict = {}


def _readers(function) -> list:
    """The mobrl modules that hold `function` under its name, found again when modules were
    imported since (every step enters `_link_states_of_one_step`: a scan of all modules per
    step would cost more than the step)."""
    loaded = len(sys.modules)
    if _READERS.get(function, (None,))[0] != loaded:
        found = [
            module
            for name, module in list(sys.modules.items())
            if name.startswith("mobrl.") and getattr(module, function.__name__, None) is function
        ]
        _READERS[function] = (loaded, found)
    return _READERS[function][1]


def _per_ue(policy, env, observation):
    """The rule's actions from its per-UE definition (`ue_action`), as `act` returns them."""
    with _link_states_of_one_step():
        return _per_ue_actions(policy, env, observation)


def _per_ue_actions(policy, env, observation):
    from mobrl.envs.wrappers import find_core, ue_id

    core = find_core(env)
    if isinstance(observation, dict):
        actions = {a: policy.ue_action(core, core.users[ue_id(a)]) for a in observation}
        k = getattr(core.handler, "topk", None)
        return actions if k is None else _per_ue_slots(policy, core, actions, k)
    active = set(core.active)
    return [
        policy.ue_action(core, ue) if ue in active else 0 for _, ue in sorted(core.users.items())
    ]


@cache
def _env_config(layout: str, overrides: tuple[str, ...]) -> dict:
    """A layout's env config under `overrides`, composed once for all the rules that play it."""
    from mobrl.envs.factory import env_config_from
    from mobrl.training.checks import validate_command_line

    return env_config_from(validate_command_line([f"scenario={layout}", *overrides]))


@pytest.mark.parametrize(
    "layout", ["small", "medium", "large", "dense_urban", "highway", "umi_dense"]
)
@pytest.mark.parametrize(
    "name", ["greedy", "greedy_rsrp", "full", "capped", "oracle", *FIELD_RULES]
)
def test_array_rules_act_as_their_per_ue_definitions_on_every_step(layout: str, name: str) -> None:
    """Each rule's `station_actions` (one step's arrays) gives the actions of its `ue_action`
    for every UE: both engines, ma with mobile-env's and topk's actions, and central (a layout
    with a radio section: the fast engine only, stock mobile-env does not model it)."""
    cases = [
        (("env=ma",), "fast"), (("env=ma",), "stock"), (("env=ma", "env.obs=topk"), "fast"),
        (("env=central",), "fast"),
    ]  # fmt: skip
    for overrides, engine in cases:
        if engine == "stock" and layout == "umi_dense":
            continue
        env = make_env({**copy.deepcopy(_env_config(layout, overrides)), "engine": engine})
        policy = BASELINES[name]()
        policy.reset(3)
        obs, _ = env.reset(seed=3)
        for _ in range(30 if engine == "stock" else 60):
            action = policy.act(obs, env)
            expected = _per_ue(policy, env, obs)
            if isinstance(action, dict):
                assert action == expected, (overrides, engine)
            else:
                assert action.tolist() == expected, (overrides, engine)
            obs, _, terminated, truncated, _ = env.step(action)
            if (
                (terminated["__all__"] or truncated["__all__"])
                if isinstance(obs, dict)
                else (terminated or truncated)
            ):
                break


def _record_blind(seen: list[bool]):
    from mobrl.envs.wrappers import find_core

    return lambda env, _: seen.append(find_core(env).blind)


@pytest.mark.parametrize("layout", ["small", "dense_urban"])
def test_baselines_play_the_same_episodes_without_observations(layout: str) -> None:
    """A baseline reads the env's state, so its episodes are played without computing
    observations (zeros of their spaces): the measures are those of a fully observed play,
    and the env observes again afterwards."""
    from mobrl.envs.factory import env_config_from
    from mobrl.envs.wrappers import find_core
    from mobrl.evaluation.rollout import episode_env, play
    from mobrl.training.checks import validate_command_line

    for overrides in (["env=ma"], ["env=ma", "env.obs=topk"], ["env=central"]):
        config = env_config_from(validate_command_line([f"scenario={layout}", *overrides]))
        for name in ("greedy", "random"):
            seen: list[bool] = []
            env = episode_env(config, 4)
            fast = play(env, BASELINES[name](), config, 4, on_step=_record_blind(seen))
            assert seen and all(seen) and find_core(env).blind is False
            observed = BASELINES[name]()
            observed.reads_observation = True
            full = play(episode_env(config, 4), observed, config, 4)
            assert fast == full, (overrides, name)


def test_evaluate_help_names_every_baseline() -> None:
    """`mobrl evaluate --help` lists every registered baseline (the help is written out, so
    that `mobrl --help` imports nothing heavy): a new rule is added there too."""
    import typer

    from mobrl.cli import app

    command = typer.main.get_command(app).commands["evaluate"]
    (option,) = [p for p in command.params if "--baselines" in p.opts]
    named = {n.strip(" .") for n in option.help.replace(";", ",").replace(":", ",").split(",")}
    missing = [name for name in BASELINES if not any(name in part.split() for part in named)]
    assert not missing, missing
