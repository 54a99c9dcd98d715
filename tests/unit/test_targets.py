"""What `evaluate` and `render` play a policy in (`targets.target_for`): the policy's own env,
or the layout the overrides name with the policy's settings (env mode, env.obs, env.topk)
carried over; contradictions and layouts it cannot act on are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mobrl.core.errors import UserError
from mobrl.evaluation import zoo
from mobrl.evaluation.targets import target_for

ZOO = "zoo:small"


def _checkpoint(folder: Path, env_config: dict[str, Any] | None) -> Path:
    """A run dir with one (unloadable) checkpoint and, unless None, a manifest of `env_config`:
    enough to pick it and read its env; nothing here restores weights."""
    ckpt = folder / "checkpoint_000000"
    ckpt.mkdir(parents=True)
    (ckpt / "rllib_checkpoint.json").write_text("{}")
    if env_config is not None:
        manifest = {"scenario": "small", "env_mode": env_config["mode"], "env_config": env_config}
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _mobile_obs(mode: str) -> dict[str, Any]:
    """zoo:small's env with mobile-env's own observation (one entry per station)."""
    env = {**zoo.entry("small")["env_config"], "obs": "mobile", "mode": mode}
    env.pop("topk")
    return env


def test_a_zoo_policy_plays_another_layout_with_its_own_observation() -> None:
    from mobrl import scenarios
    from mobrl.envs.factory import retarget

    own = zoo.entry("small")["env_config"]
    target = target_for(Path(ZOO), ["scenario=medium"], "best")
    env = target.env_config
    assert (env["scenario"], env["mode"], env["obs"], env["topk"]) == (
        "medium",
        "ma",
        "topk_gain",
        3,
    )
    assert env["layout"] == scenarios.load(scenarios.path_of("medium"))
    assert target.policy_env == own
    assert "playing medium with its env=ma env.obs=topk_gain env.topk=3" in target.note
    # the env `--scenarios medium` plays (factory.retarget), up to what evaluation re-derives
    moved = retarget(own, "medium")
    for key in ("scenario", "id", "kind", "mode", "layout", "obs", "topk", "engine", "reward"):
        assert env[key] == moved[key], key
    assert env["policies"] == moved["policies"] and env["sampler"] == moved["sampler"]


def test_settings_the_user_repeats_are_fine_and_the_rest_stays_the_users() -> None:
    given = ["scenario=large", "env=ma", "env.obs=topk_gain", "env.topk=3", "engine=stock"]
    env = target_for(Path(ZOO), given, "best").env_config
    assert (env["scenario"], env["obs"], env["topk"], env["engine"]) == (
        "large", "topk_gain", 3, "stock"
    )  # fmt: skip


@pytest.mark.parametrize(
    "given,policy",
    [
        ("env.obs=mobile", "env.obs=topk_gain"),
        ("env.topk=4", "env.topk=3"),
        ("env=central", "env=ma"),
        ("env.mode=central", "env=ma"),
    ],
)
def test_a_contradicting_setting_names_the_policys_value(given: str, policy: str) -> None:
    with pytest.raises(UserError) as err:
        target_for(Path(ZOO), ["scenario=medium", given], "best")
    message = str(err.value)
    assert f"was trained with {policy}, not {given}: drop {given}" in message
    assert "\n" not in message


def test_without_overrides_the_policy_plays_its_own_env(tmp_path: Path) -> None:
    assert target_for(Path(ZOO), [], "best").env_config == zoo.entry("small")["env_config"]
    own = _mobile_obs("ma")
    target = target_for(_checkpoint(tmp_path / "run", own), [], "best")
    assert target.env_config == own == target.policy_env


def test_a_checkpoint_keeps_its_manifests_settings_on_its_own_layout(tmp_path: Path) -> None:
    run = _checkpoint(tmp_path / "run", _mobile_obs("central"))
    target = target_for(run, ["scenario=small"], "best")
    assert (target.env_config["mode"], target.env_config["obs"]) == ("central", "mobile")
    assert "playing" not in target.note  # the layout it was trained on


@pytest.mark.parametrize(
    "mode,why",
    [
        ("ma", "observes env.obs=mobile, one entry per station: small has 3 stations, medium 7"),
        ("central", "one central agent (env=central)"),
    ],
)
def test_a_layout_the_policy_cannot_act_on_says_why(tmp_path: Path, mode: str, why: str) -> None:
    run = _checkpoint(tmp_path / "run", _mobile_obs(mode))
    with pytest.raises(UserError) as err:
        target_for(run, ["scenario=medium"], "best")
    assert why in str(err.value)
    assert "use a policy trained with env=ma env.obs=topk_gain" in str(err.value)


def test_another_kind_of_scenario_is_refused() -> None:
    with pytest.raises(UserError, match="small, a scenario of kind mobile, and cannot act on "):
        target_for(Path(ZOO), ["scenario=cartpole"], "best")


def test_a_checkpoint_without_manifest_plays_what_the_overrides_say(tmp_path: Path) -> None:
    run = _checkpoint(tmp_path / "run", None)
    target = target_for(run, ["scenario=medium", "env=central"], "best")
    assert target.policy_env is None
    assert (target.env_config["mode"], target.env_config["obs"]) == ("central", "mobile")
    with pytest.raises(UserError, match="no mobrl manifest"):
        target_for(run, [], "best")


def test_a_users_layout_file_is_played_with_the_policys_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mobrl import scenarios

    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    source = scenarios.path_of("medium").read_text()
    (tmp_path / "scenarios" / "campus.yaml").write_text(source)
    env = target_for(Path(ZOO), ["scenario=campus"], "best").env_config
    assert (env["scenario"], env["obs"], env["topk"]) == ("campus", "topk_gain", 3)
    assert len(env["layout"]["stations"]) == 7


def test_overrides_that_name_no_layout_play_the_policys_own() -> None:
    env = target_for(Path("zoo:medium"), ["engine=stock"], "best").env_config
    assert (env["scenario"], env["engine"], env["obs"]) == ("medium", "stock", "topk_gain")


def test_a_cell_policy_carries_the_floor_its_turns_observed(tmp_path: Path) -> None:
    """What a cell observes in its turn (env.decide, env.gain_floor) goes with it to another
    energy layout; a user repeating the floor as 2 or 2.0 is fine, another floor is not."""
    from mobrl.envs.factory import env_config_from
    from mobrl.training.checks import validate_command_line

    own = env_config_from(
        validate_command_line(
            ["scenario=uma19_energy", "env=cells", "env.decide=in_turns", "env.gain_floor=2"]
        )
    )
    run = _checkpoint(tmp_path / "run", own)
    for given in ([], ["env.gain_floor=2"], ["env.gain_floor=2.0"]):
        env = target_for(run, ["scenario=umi_dense_energy", *given], "best").env_config
        assert (env["scenario"], env["decide"], env["gain_floor"]) == (
            "umi_dense_energy", "in_turns", 2.0
        )  # fmt: skip
    with pytest.raises(UserError) as err:
        target_for(run, ["scenario=umi_dense_energy", "env.gain_floor=0"], "best")
    assert "was trained with env.gain_floor=2.0, not env.gain_floor=0" in str(err.value)
    # nor may a policy trained on the plain gain (zoo:uma19_energy_turns) be fed a priced one
    with pytest.raises(UserError) as err:
        target_for(
            Path("zoo:uma19_energy_turns"),
            ["scenario=umi_dense_energy", "env.gain_floor=1"],
            "best",
        )
    assert "was trained with env.gain_floor=0.0, not env.gain_floor=1" in str(err.value)
