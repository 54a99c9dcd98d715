"""The Python API stands on the same code as the CLI: the same numbers for the same seeds, the
same one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mobrl
from tests.conftest import run_mobrl


def test_api_and_cli_evaluations_give_the_same_numbers(tmp_path: Path) -> None:
    args = ["--episodes", "4", "--seed", "7", "--baselines", "greedy,oracle", "--workers", "1"]
    cli = run_mobrl("evaluate", "--checkpoint", "zoo:small", *args, "--output", str(tmp_path / "c"))
    assert cli.returncode == 0, cli.stderr
    ev = mobrl.evaluate(
        "zoo:small", episodes=4, seed=7, baselines=["greedy", "oracle"], workers=1,
        output=tmp_path / "a",
    )  # fmt: skip
    from_cli = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert ev.summary["policies"] == from_cli["policies"]
    assert ev.summary["paired_vs_trained"] == from_cli["paired_vs_trained"]
    assert list(ev.table.index) == ["trained", "greedy", "oracle"]
    assert set(ev.paired.index) == {"greedy", "oracle"}
    assert len(ev.episodes) == 12 and set(ev.episodes["seed"]) == {7, 8, 9, 10}


def test_api_errors_are_the_cli_one_liners(tmp_path: Path) -> None:
    with pytest.raises(mobrl.UserError, match="Did you mean 'small'"):
        mobrl.evaluate(None, "scenario=smal", baselines=["greedy"], output=tmp_path / "x")
    with pytest.raises(mobrl.UserError, match="run.stop.iterations"):
        mobrl.train("scenario=small", "run.stop.iteration=3", run_dir=tmp_path / "r")
    with pytest.raises(mobrl.UserError, match="without sweeps"):
        mobrl.train("scenario=small,medium", run_dir=tmp_path / "r")
    with pytest.raises(mobrl.UserError, match="not a mobrl run dir"):
        mobrl.Run(tmp_path)
    assert not (tmp_path / "r").exists() and not (tmp_path / "x").exists()


def test_api_plays_a_policy_on_a_named_layout_with_its_own_observation(tmp_path: Path) -> None:
    ev = mobrl.evaluate(
        "zoo:small", "scenario=medium", episodes=2, seed=5, baselines=["greedy"], workers=1,
        output=tmp_path / "a",
    )  # fmt: skip
    assert (ev.summary["scenario"], ev.summary["env_config"]["obs"]) == ("medium", "topk_gain")
    video = mobrl.render("zoo:small", "scenario=medium", max_steps=2, video=tmp_path / "m.gif")
    assert video.path.is_file()
    with pytest.raises(mobrl.UserError, match="not env.obs=mobile: drop env.obs=mobile"):
        mobrl.evaluate("zoo:small", "scenario=medium", "env.obs=mobile", output=tmp_path / "x")
    assert not (tmp_path / "x").exists()
