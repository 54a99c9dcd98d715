"""Config composition: every option of every group composes; registries mirror the groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from mobrl.config import GROUPS, compose, group_options
from mobrl.core.errors import UserError
from mobrl.training.algos import ALGORITHMS
from mobrl.training.checks import validate_command_line

EXAMPLE = Path(__file__).parents[2] / "examples" / "custom_env" / "channel_access.py"
# extra overrides an option needs to be runnable (the generic Gymnasium option needs an id, a
# custom env its entry, an external one a simulator: `{address}` is a served CartPole's)
NEEDS = {
    ("scenario", "gym"): ["scenario.id=MountainCar-v0"],
    ("scenario", "custom"): [f"scenario.entry={EXAMPLE}:ChannelAccessEnv"],
    ("scenario", "external"): ["scenario.address={address}"],
    # stations that sleep need a layout with a power: section
    ("env", "cells"): ["scenario=uma19_energy"],
    ("env", "hierarchical"): ["scenario=uma19_energy"],
    # ranks by the objective, which weighs the layout's energy
    ("preset", "ppo/uma19_energy/cells_imitate"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "appo/uma19_energy/cells_imitate"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "impala/uma19_energy/cells_imitate"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "dqn/uma19_energy/cells"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "sac/uma19_energy/cells"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "ppo/uma19_energy/cells_turns"): ["scenario=uma19_energy", "env=cells"],
    ("preset", "ppo/city_energy/cells_imitate"): ["scenario=city_energy", "env=cells"],
    ("preset", "ppo/uma19_energy/hierarchical_network"): [
        "scenario=uma19_energy",
        "env=hierarchical",
    ],
}


@pytest.mark.parametrize(
    "group,option", [(g, o) for g in GROUPS for o in group_options(g)], ids=lambda v: str(v)
)
def test_every_option_composes_and_validates(group: str, option: str) -> None:
    import gymnasium as gym

    from mobrl.external import ExternalServer

    with ExternalServer(lambda: gym.make("CartPole-v1")) as server:
        needs = NEEDS.get((group, option), [])
        if group == "preset":  # a preset is tuned for one algorithm, the first part of its name
            needs = [f"algo={option.split('/')[0]}", *needs]
        overrides = [f"{group}={option}", *(n.format(address=server.address) for n in needs)]
        cfg = validate_command_line(overrides)
    key = "mode" if group == "env" else "name"
    assert cfg[group][key] == option
    # the schema fills every key: nothing is left as ??? once an option is chosen
    assert cfg.run.stop is not None and cfg.tune.metric


def test_algo_group_mirrors_registry() -> None:
    assert set(group_options("algo")) == set(ALGORITHMS)


def test_defaults() -> None:
    cfg = compose([])
    assert (cfg.scenario.name, cfg.env.mode, cfg.algo.name, cfg.run.name, cfg.tune.name) == (
        "small",
        "ma",
        "ppo",
        "default",
        "none",
    )


def test_smoke_preset_is_tiny() -> None:
    cfg = compose(["run=smoke"])
    assert cfg.run.stop.iterations <= 2
    assert cfg.run.batch.train_batch_size <= 200
    assert cfg.run.checkpoint.frequency == 1


def test_sweep_values_are_each_validated() -> None:
    with pytest.raises(UserError, match="unknown scenario 'mediun'.*Did you mean 'medium'"):
        validate_command_line(["scenario=small,mediun"])


def test_key_sweep_values_are_each_validated() -> None:
    with pytest.raises(UserError, match="could not be converted to Integer"):
        validate_command_line(["run.stop.iterations=1,x"])


def test_schema_types_are_enforced() -> None:
    with pytest.raises(UserError, match="run.stop.iterations=abc"):
        compose(["run.stop.iterations=abc"])


def test_new_keys_need_plus() -> None:
    cfg = validate_command_line(["+algo.training.clip_param=0.1"])
    assert cfg.algo.training.clip_param == 0.1


def test_engine_key_switches_the_mobile_env_step() -> None:
    from mobrl.envs.factory import env_config_from, make_env
    from mobrl.envs.wrappers import find_core

    fast = make_env(env_config_from(validate_command_line(["scenario=small"])))
    stock = make_env(env_config_from(validate_command_line(["scenario=small", "engine=stock"])))
    from mobrl.network.engine import FastEngine

    assert isinstance(find_core(fast), FastEngine)
    assert not isinstance(find_core(stock), FastEngine)


def test_unknown_engine_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown engine 'stok'. Did you mean 'stock'"):
        validate_command_line(["engine=stok"])


@pytest.mark.parametrize(
    "override,message",
    [
        ("run.stop.iterations=-1", "run.stop.iterations=-1 must be positive"),
        ("run.stop.iterations=0", "run.stop.iterations=0 must be positive"),
        ("run.stop.env_steps=0", "run.stop.env_steps=0 must be positive"),
        ("run.stop.time_s=-5", "run.stop.time_s=-5.0 must be positive"),
        ("algo.training.lr=-1", "algo.training.lr=-1 must be positive"),
        ("algo.training.lr=0", "algo.training.lr=0 must be positive"),
        ("run.batch.minibatch_size=0", "run.batch.minibatch_size=0 must be positive"),
        ("run.batch.train_batch_size=-200", "run.batch.train_batch_size=-200 must be positive"),
        ("run.batch.num_epochs=0", "run.batch.num_epochs=0 must be positive"),
        ("run.batch.minibatch_size=5000", "larger than run.batch.train_batch_size=200"),
        ("algo.training.gamma=1.5", r"algo.training.gamma=1.5 must lie in \(0, 1\]"),
        ("algo.training.gamma=0", r"algo.training.gamma=0 must lie in \(0, 1\]"),
        ("algo.training.lambda_=-0.1", r"must lie in \[0, 1\]"),
        ("algo.training.entropy_coeff=-0.01", "entropy_coeff=-0.01 must not be negative"),
        ("run.seed=-3", "run.seed=-3 must not be negative"),
        ("env.topk=0", "env.topk=0 is not a positive whole number"),
        ("run.fault.max_failures=-2", "run.fault.max_failures=-2 must be -1"),
        ("run.fault.restart_delay_s=-1", "run.fault.restart_delay_s=-1.0 must not be negative"),
        ("run.fault.inject.at=0", "run.fault.inject.at=0 must be positive"),
        ("run.fault.inject.what=env_eror", "unknown run.fault.inject.what 'env_eror'"),
    ],
)
def test_impossible_numbers_are_user_errors(override: str, message: str) -> None:
    from mobrl.core.errors import UserError

    with pytest.raises(UserError, match=message):  # before Hydra starts a job
        validate_command_line(["run=smoke", override])


def test_sane_numbers_pass() -> None:
    cfg = validate_command_line(["run=smoke", "algo.training.gamma=1", "run.seed=0"])
    assert cfg.algo.training.gamma == 1


def test_a_launcher_without_its_plugin_names_the_extra() -> None:
    from hydra.errors import MissingConfigException

    from mobrl.config import _translate_compose_error

    err = MissingConfigException(
        "In 'hydra/config': Could not find 'hydra/launcher/joblib'\nAvailable options: basic"
    )
    message = str(_translate_compose_error(err, ["hydra/launcher=joblib"]))
    assert message == (
        "hydra/launcher=joblib needs Hydra's joblib launcher plugin, which is not installed. "
        "Run `pip install 'mobrl[launchers]'`."
    )


def test_a_config_is_checked_once_and_completed_where_it_is_not_checked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check_once` checks a config nobody checked, and takes one the command line's check
    passed (as composed, or as the check completed it) without checking it again, only filling
    in what the check would (num_env_runners null: the fewest the algorithm allows)."""
    from mobrl.training import checks

    monkeypatch.delenv(checks.CHECKED_ENV, raising=False)
    calls: list[int] = []
    settings = checks.check_settings
    monkeypatch.setattr(checks, "check_settings", lambda c: calls.append(1) or settings(c))
    fresh = compose(["scenario=small", "run=smoke"])
    assert fresh.run.resources.num_env_runners is None
    checks.check_once(fresh)
    assert len(calls) == 1 and fresh.run.resources.num_env_runners == 0
    again = compose(["scenario=small", "run=smoke"])  # as Hydra composes it for the job
    checks.check_once(again)
    checks.check_once(fresh)
    assert len(calls) == 1 and again.run.resources.num_env_runners == 0
    other = compose(["scenario=small", "run=smoke", "run.seed=3"])
    checks.check_once(other)
    assert len(calls) == 2
    with pytest.raises(UserError, match="run.stop"):  # a changed config is a new one: checked
        bad = compose(["scenario=small", "run=smoke"])
        for key in bad.run.stop:
            bad.run.stop[key] = None
        checks.check_once(bad)
