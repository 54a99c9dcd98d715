"""Every shipped scenario trains one smoke iteration (one Hydra multirun, a run dir each)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mobrl import scenarios
from mobrl.config import group_options
from mobrl.core import metrics
from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow

#: the city-scale layouts (100 and 400 stations, 1,000 and 4,000 UEs): one iteration there
#: samples for minutes; tests/unit/test_generate.py loads both and steps city
CITY_SCALE = {"city", "metro", "city_interference", "city_energy"}
#: every option of the scenario group but the city-scale layouts, `gym`, which needs an id
#: (tested with MountainCar), and `custom` and `external`, which need the user's env or
#: simulator (tests/e2e/test_custom_env.py, test_external.py)
NEEDS_YOURS = ("gym", "custom", "external")
SHIPPED = [s for s in group_options("scenario") if s not in NEEDS_YOURS and s not in CITY_SCALE]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scenarios") / "sweep"
    result = run_mobrl(
        "train", "-m", f"scenario={','.join(SHIPPED)}", "run=smoke", "run.stop.iterations=1",
        f"hydra.sweep.dir={root}", timeout=1800,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = {}
    for run_dir in root.iterdir():
        if (run_dir / "manifest.json").is_file():
            runs[json.loads((run_dir / "manifest.json").read_text())["scenario"]] = run_dir
    return runs


def _progress(run_dir: Path) -> pd.DataFrame:
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    return pd.read_csv(trial / "progress.csv")


def test_every_layout_file_is_a_shipped_scenario() -> None:
    assert {p.stem for p in scenarios.builtin_dir().glob("*.yaml")} - CITY_SCALE <= set(SHIPPED)
    assert CITY_SCALE <= set(scenarios.discover())
    assert {"dense_urban", "highway", "arena"} <= set(SHIPPED)


@pytest.mark.parametrize("scenario", SHIPPED)
def test_shipped_scenario_trains_one_iteration(sweep: dict[str, Path], scenario: str) -> None:
    run_dir = sweep[scenario]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["failed"] == [] and Path(summary["last_checkpoint"]).is_dir()
    progress = _progress(run_dir)
    assert list(progress[metrics.ITERATION]) == [1]
    assert progress[metrics.ENV_STEPS].iloc[-1] >= 200


def test_arena_trains_one_policy_per_agent_with_its_metrics(sweep: dict[str, Path]) -> None:
    run_dir = sweep["arena"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["policy_ids"] == ["chaser", "explorer"]
    progress = _progress(run_dir)
    for policy in ("chaser", "explorer"):
        assert f"env_runners/module_episode_returns_mean/{policy}" in progress
    cells = progress[metrics.result_key(metrics.ARENA_NEW_CELLS)].iloc[-1]
    caught = progress[metrics.result_key(metrics.ARENA_COLLISIONS)].iloc[-1]
    assert 1 <= cells <= 64 and caught >= 0  # an 8 x 8 arena


def test_mobile_layouts_log_per_ue_metrics(sweep: dict[str, Path]) -> None:
    progress = _progress(sweep["dense_urban"])
    utility = progress[metrics.result_key(metrics.UTILITY_MEAN)].iloc[-1]
    assert -1.0 <= utility <= 1.0
    assert metrics.result_key(metrics.ue_tag(39, metrics.UE_UTILITY)) in progress  # 40 UEs


def test_energy_layouts_log_power_and_demand(sweep: dict[str, Path]) -> None:
    """A layout with power: and traffic: logs the network's power, energy and demand served
    beside the service measures (all stations on while UEs train: none asleep)."""
    progress = _progress(sweep["uma19_energy"])
    power = progress[metrics.result_key(metrics.NET_POWER)].iloc[-1]
    assert 19 * 55 <= power <= 19 * 280  # TR 38.864 category 1, set 1: idle to fully loaded
    assert progress[metrics.result_key(metrics.NET_ASLEEP)].iloc[-1] == 0
    assert 0 < progress[metrics.result_key(metrics.NET_DEMAND_SERVED)].iloc[-1] <= 1
    assert metrics.result_key(metrics.NET_ENERGY) in progress


#: layouts with PPO presets of their own, in both env modes
PRESET_LAYOUTS = ["small", "medium", "large", "dense_urban", "highway"]


@pytest.fixture(scope="module")
def preset_sweep(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """One iteration of every mobile PPO preset as it ships (run=quick keeps its batch sizes
    and resources; only the budget is cut)."""
    root = tmp_path_factory.mktemp("presets") / "sweep"
    result = run_mobrl(
        "train", "-m", f"scenario={','.join(PRESET_LAYOUTS)}", "env=ma,central", "run=quick",
        "run.stop.iterations=1", "run.checkpoint.frequency=0", f"hydra.sweep.dir={root}",
        timeout=1800,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = {}
    for run_dir in root.iterdir():
        if (run_dir / "manifest.json").is_file():
            manifest = json.loads((run_dir / "manifest.json").read_text())
            runs[manifest["scenario"], manifest["env_mode"]] = run_dir
    return runs


@pytest.mark.parametrize("mode", ["ma", "central"])
@pytest.mark.parametrize("scenario", PRESET_LAYOUTS)
def test_preset_trains_one_iteration_as_configured(preset_sweep, scenario: str, mode: str) -> None:
    import yaml

    run_dir = preset_sweep[scenario, mode]
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["preset"]["name"] == f"ppo/{scenario}/{mode}"
    progress = _progress(run_dir)
    assert len(progress) == 1
    # one iteration samples the preset's batch, counted in env steps whatever the sampler
    batch = resolved["run"]["batch"]["train_batch_size"]
    assert batch <= progress[metrics.ENV_STEPS].iloc[0] < batch * 1.1
    assert progress[metrics.RETURN_MEAN].notna().all()
    sampler = json.loads((run_dir / "manifest.json").read_text())["env_config"]["sampler"]
    expected = {"ma": "multi_agent" if scenario == "dense_urban" else "ue_slots", "central": None}
    assert sampler == expected[mode]
