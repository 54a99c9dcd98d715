"""Presets: which file each (algo, scenario, env) gets, that overrides win, provenance, what each
expects and docs/presets.md made from them."""

from __future__ import annotations

import importlib.util
from importlib import resources

import pytest
import yaml
from omegaconf import OmegaConf

from mobrl.config import compose, group_options
from mobrl.config.schema import ANY_LAYOUT, PresetConf
from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.training.checks import validate_command_line
from tests.conftest import REPO

PRESETS = group_options("preset")


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["scenario=small", "env=ma"], "ppo/small/ma"),
        (["scenario=small", "env=central"], "ppo/small/central"),
        (["scenario=large", "env=ma"], "ppo/large/ma"),
        (["scenario=cartpole"], "ppo/cartpole"),
        (["scenario=cartpole", "env=central"], "ppo/cartpole"),  # tasks ignore the env mode
        (["scenario=small", "preset=ppo/medium/ma"], "ppo/medium/ma"),  # chosen by hand
        (["scenario=small", "~preset"], None),  # the algorithm's own defaults
        (["scenario=gym", "scenario.id=MountainCar-v0"], None),  # no preset for any id
    ],
)
def test_preset_follows_algo_scenario_and_env(overrides: list[str], expected: str | None) -> None:
    cfg = compose(overrides)
    assert cfg.preset.name == expected
    if expected is None:
        assert cfg.run.batch.train_batch_size is None and cfg.run.resources.num_env_runners == 1
    else:
        data = yaml.safe_load(_preset_file(expected).read_text())
        assert cfg.run.batch.train_batch_size == data["run"]["batch"]["train_batch_size"]
        assert cfg.algo.training.lr == data["algo"]["training"]["lr"]


def test_user_layout_gets_the_any_layout_preset(tmp_path, monkeypatch) -> None:
    from mobrl import scenarios

    (tmp_path / "scenarios").mkdir()
    layout = yaml.safe_load(scenarios.path_of("small").read_text())
    (tmp_path / "scenarios" / "campus.yaml").write_text(yaml.safe_dump(layout))
    monkeypatch.chdir(tmp_path)
    assert compose(["scenario=campus"]).preset.name == f"ppo/{ANY_LAYOUT}/ma"
    assert compose(["scenario=campus", "env=central"]).preset.name == f"ppo/{ANY_LAYOUT}/central"


@pytest.mark.parametrize(
    ("algo", "scenario", "expected"),
    [
        ("appo", "uma19", f"appo/{ANY_LAYOUT}/ma"),
        ("impala", "umi_dense", f"impala/{ANY_LAYOUT}/ma"),
        ("appo", "large", "appo/large/ma"),  # a layout's own file first
        ("sac", "large", "sac/large/ma"),
        ("dqn", "uma19", f"dqn/{ANY_LAYOUT}/ma"),
        ("sac", "uma19", f"sac/{ANY_LAYOUT}/ma"),
    ],
)
def test_other_algorithms_take_their_layout_or_any_layout_preset(
    algo: str, scenario: str, expected: str
) -> None:
    cfg = compose([f"scenario={scenario}", f"algo={algo}"])
    data = yaml.safe_load(_preset_file(expected).read_text())
    assert cfg.preset.name == expected
    assert cfg.algo.training.lr == data["algo"]["training"]["lr"]
    assert dict(cfg.run.resources) | data["run"]["resources"] == dict(cfg.run.resources)


def test_overrides_and_smoke_budget_win_over_the_preset() -> None:
    cfg = compose(["scenario=small", "algo.training.lr=0.123", "run.batch.num_epochs=7"])
    assert cfg.algo.training.lr == 0.123 and cfg.run.batch.num_epochs == 7
    smoke = compose(["scenario=small", "run=smoke"])
    assert smoke.run.batch.train_batch_size == 200
    assert smoke.run.resources.num_env_runners is None  # the fewest the algorithm allows:
    assert smoke.preset.name == "ppo/small/ma"  # the rest of the preset still applies
    from mobrl.training.checks import check_config

    check_config(smoke)
    assert smoke.run.resources.num_env_runners == 0  # PPO samples in the trial's process
    appo = compose(["scenario=small", "run=smoke", "algo=appo"])
    check_config(appo)
    assert appo.run.resources.num_env_runners == 1  # APPO needs a runner actor


def test_other_algorithms_do_not_inherit_ppo_presets() -> None:
    cfg = compose(["scenario=small", "algo=appo"])
    assert cfg.preset.name in (None, "appo/small/ma", f"appo/{ANY_LAYOUT}/ma")
    assert "vf_clip_param" not in cfg.algo.training or cfg.preset.name is not None


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_composes_and_records_how_it_was_found(preset: str) -> None:
    data = yaml.safe_load(_preset_file(preset).read_text())
    assert data["preset"]["name"] == preset
    found_by = data["preset"]["found_by"]
    # the sweep (tune=... or a multirun, -m), the training runs compared (variants such as
    # ppo/small/ma_strong), or the run that measured values taken from RLlib's tuned examples
    swept = " tune=" in found_by or " -m " in found_by
    adopted = "RLlib's tuned" in data["preset"]["notes"]
    assert found_by.startswith("mobrl train ") and (swept or adopted or "_" in preset)
    assert data["preset"]["notes"]
    algo = preset.split("/")[0]
    # the sweep command itself is a valid mobrl command line
    validate_command_line([arg for arg in found_by.split()[2:] if arg != "-m"])
    cfg = validate_command_line([f"algo={algo}", f"preset={preset}", *_scenario_of(preset)])
    assert cfg.preset.name == preset


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_states_what_it_reaches_from_its_measurements(preset: str) -> None:
    from mobrl.evaluation.policies import BASELINES

    data = yaml.safe_load(_preset_file(preset).read_text())["preset"]
    expect = OmegaConf.merge(OmegaConf.structured(PresetConf), data).expect
    assert expect is not None, f"{preset} has no preset.expect"
    assert expect.metric == keys.RETURN_MEAN or expect.metric in keys.EVAL_METRICS
    if len(preset.split("/")) == 2:  # a Gymnasium task: its return, not mobile-env's UEs
        assert expect.metric in (keys.RETURN_MEAN, "return")
    assert expect.vs is None or expect.vs in BASELINES
    if expect.closed is not None:  # the greedy -> reference gap in mean UE utility
        assert expect.metric == "utility" and expect.vs == "greedy" and 0 < expect.closed <= 1
    assert expect.within.env_steps or expect.within.seconds
    assert expect.source.strip()
    measured = " ".join([data["notes"], data["found_by"]]).replace(" ", "")
    if expect.value is None:
        assert expect.source.startswith("no level measured") and expect.closed is None
    elif expect.value != 0:  # a level taken from the notes (0: "beats", "above")
        assert f"{abs(expect.value):g}" in measured, (expect.value, data["notes"])
    if expect.closed is not None:
        assert f"{expect.closed:.0%}" in measured, (expect.closed, data["notes"])
    # the command is a valid command line that trains this very preset
    assert expect.command.startswith("mobrl train ")
    cfg = validate_command_line(expect.command.split()[2:])
    assert cfg.preset.name == preset


def test_presets_doc_is_what_the_generator_writes() -> None:
    """docs/presets.md is `python scripts/presets_doc.py`'s output from the presets now."""
    spec = importlib.util.spec_from_file_location("presets_doc", REPO / "scripts/presets_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (REPO / "docs" / "presets.md").read_text() == module.render(), (
        "docs/presets.md is out of date: run python scripts/presets_doc.py"
    )
    assert "presets.md" in (REPO / "docs" / "training.md").read_text()


def test_unknown_preset_names_the_choices() -> None:
    with pytest.raises(UserError, match="Did you mean 'ppo/small/ma'"):
        validate_command_line(["preset=ppo/smal/ma"])


def _preset_file(name: str):
    return resources.files("mobrl.conf").joinpath("preset", f"{name}.yaml")


def _scenario_of(preset: str) -> list[str]:
    parts = preset.split("/")
    if len(parts) == 2:
        return [f"scenario={parts[1]}"]
    scenario = "small" if parts[1] == ANY_LAYOUT else parts[1]
    # variants of a preset (e.g. ma_strong) are named <env>_<variant>
    return [f"scenario={scenario}", f"env={parts[2].split('_')[0]}"]
