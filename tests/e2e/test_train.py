"""`mobrl train` end to end: real Ray, real RLlib, real files read back."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mobrl.core import metrics
from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def _scalars(trial_dir: Path, tag: str) -> list[float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(trial_dir), size_guidance={"scalars": 0})
    acc.Reload()
    assert tag in acc.Tags()["scalars"], sorted(acc.Tags()["scalars"])[:20]
    return [event.value for event in acc.Scalars(tag)]


def _trial_dirs(run_dir: Path) -> list[Path]:
    return sorted(p for p in (run_dir / "tune").iterdir() if p.is_dir())


def test_small_ma_run_dir_is_self_describing(small_ma_run: Path) -> None:
    manifest = json.loads((small_ma_run / "manifest.json").read_text())
    assert manifest["scenario"] == "small" and manifest["env_mode"] == "ma"
    # one shared policy, sampled as UE slots: RLlib's single module
    assert manifest["env_config"]["sampler"] == "ue_slots"
    assert manifest["policy_ids"] == ["default_policy"]
    assert manifest["seed"] == 0
    for package in ("mobrl", "ray", "torch", "gymnasium", "mobile-env"):
        assert manifest["versions"][package], package
    assert manifest["command"].startswith("mobrl train")
    assert "scenario=small" in manifest["command"]
    assert manifest["mobrl_commit"]  # a checkout: the commit that trained it

    resolved = yaml.safe_load((small_ma_run / "config.yaml").read_text())
    assert resolved["scenario"]["name"] == "small" and resolved["run"]["name"] == "smoke"
    assert resolved["preset"]["name"] == "ppo/small/ma"

    (trial,) = _trial_dirs(small_ma_run)
    checkpoints = sorted(trial.glob("checkpoint_*"))
    assert len(checkpoints) == 2  # one per iteration (frequency 1, 2 iterations)
    progress = pd.read_csv(trial / "progress.csv")
    assert len(progress) == 2
    # env steps count steps of the whole network, not of UE slots: 200 per smoke iteration
    assert progress[metrics.ENV_STEPS].tolist() == [200, 400]
    assert progress[metrics.EPISODES_LIFETIME].tolist() == [2, 4]  # 100-step episodes
    # env steps trained too: the slot rows trained (1 epoch: 11 minibatches of 100 from
    # 1,000 slot steps and their bootstrap rows) over 5 UEs, not the batch per minibatch
    learners = "learners/__all_modules__/"
    trained = progress[learners + "num_env_steps_trained"]
    assert trained.tolist() == (progress[learners + "num_module_steps_trained"] / 5).tolist()
    assert all(200 <= steps < 2 * 200 for steps in trained)
    assert (
        progress[learners + "num_env_steps_trained_lifetime"].tolist() == trained.cumsum().tolist()
    )


def test_tensorboard_return_tag_holds_finite_values(small_ma_run: Path) -> None:
    (trial,) = _trial_dirs(small_ma_run)
    returns = _scalars(trial, metrics.tensorboard_tag(metrics.RETURN_MEAN))
    assert len(returns) == 2
    assert all(math.isfinite(v) for v in returns)
    # 5 UEs, 100 steps, per-step rewards in [-1, 1]: a summed return lies in [-500, 500]
    assert all(-500 <= v <= 500 for v in returns)
    per_agent = _scalars(trial, metrics.tensorboard_tag(f"{metrics.AGENT_RETURN_MEAN}/ue_0"))
    assert all(math.isfinite(v) for v in per_agent)


def test_summary_names_existing_checkpoints(small_ma_run: Path) -> None:
    summary = json.loads((small_ma_run / "summary.json").read_text())
    assert math.isfinite(summary["best_return"])
    assert Path(summary["best_checkpoint"]).is_dir()
    assert Path(summary["last_checkpoint"]).name == "checkpoint_000001"


RESTORE = """
import json, sys
import numpy as np
from mobrl.envs.factory import make_env
from mobrl.evaluation.policies import TrainedPolicy
policy = TrainedPolicy.from_checkpoint(sys.argv[1])
env = make_env(policy.env_config)
obs, _ = env.reset(seed=7)
total, steps, agents = 0.0, 0, set()
while True:
    action = policy.act(obs)
    if isinstance(obs, dict):
        assert set(action) == set(obs), (action, obs)
        agents |= set(action)
        for agent, a in action.items():
            assert env.action_spaces[agent].contains(a), (agent, a)
    else:
        assert env.action_space.contains(np.asarray(action)), action
    obs, rew, term, trunc, _ = env.step(action)
    total += sum(rew.values()) if isinstance(rew, dict) else rew
    steps += 1
    done = term["__all__"] or trunc["__all__"] if isinstance(term, dict) else term or trunc
    if done:
        break
import ray
print(json.dumps({"steps": steps, "return": total, "agents": sorted(agents),
                  "ray_started": ray.is_initialized()}))
"""


def _restore_and_roll_out(checkpoint: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", RESTORE, str(checkpoint)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_checkpoint_restores_in_fresh_process_and_acts_for_every_ue(small_ma_run: Path) -> None:
    summary = json.loads((small_ma_run / "summary.json").read_text())
    rollout = _restore_and_roll_out(Path(summary["best_checkpoint"]))
    assert rollout["agents"] == [f"ue_{i}" for i in range(5)]
    assert rollout["steps"] == 100
    assert math.isfinite(rollout["return"])
    assert rollout["ray_started"] is False


def test_central_mode_trains_and_restores(small_central_run: Path) -> None:
    manifest = json.loads((small_central_run / "manifest.json").read_text())
    assert manifest["env_mode"] == "central" and manifest["policy_ids"] == ["default_policy"]
    summary = json.loads((small_central_run / "summary.json").read_text())
    assert math.isfinite(summary["best_return"])
    # the central agent's reward is the mean UE utility in [-1, 1] per step
    assert -100 <= summary["best_return"] <= 100
    rollout = _restore_and_roll_out(Path(summary["last_checkpoint"]))
    assert rollout["steps"] == 100


def test_cartpole_preset_learns_within_a_fixed_budget(tmp_path: Path) -> None:
    # a random policy averages about 22 on CartPole and 20 episodes of it never average 150
    run_dir = tmp_path / "run"
    result = run_mobrl(
        "train", "scenario=cartpole", "run.stop.return_mean=150", "run.stop.env_steps=40000",
        "run.stop.iterations=null", "run.checkpoint.frequency=0", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["best_return"] >= 150
    (trial,) = _trial_dirs(run_dir)
    progress = pd.read_csv(trial / "progress.csv")
    assert progress[metrics.ENV_STEPS].iloc[-1] <= 40000 + 512
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env_config"]["id"] == "CartPole-v1"
    rollout = _restore_and_roll_out(Path(summary["best_checkpoint"]))
    assert rollout["steps"] >= 100  # the restored policy balances too


def test_multirun_writes_one_experiment_per_job(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    result = run_mobrl(
        "train",
        "-m",
        "scenario=small,cartpole",
        "run=smoke",
        "run.stop.iterations=1",
        f"hydra.sweep.dir={sweep_dir}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = sorted(p for p in sweep_dir.iterdir() if (p / "manifest.json").is_file())
    assert [p.name for p in jobs] == ["0_small_ppo", "1_cartpole_ppo"]
    for job, scenario in zip(jobs, ["small", "cartpole"]):
        manifest = json.loads((job / "manifest.json").read_text())
        assert manifest["scenario"] == scenario
        (trial,) = [p for p in (job / "tune").iterdir() if p.is_dir()]
        assert list(trial.glob("checkpoint_*"))


@pytest.mark.parametrize("run_fixture", ["small_ma_run", "small_central_run"])
def test_tensorboard_holds_per_ue_and_fairness_metrics(run_fixture: str, request) -> None:
    run_dir: Path = request.getfixturevalue(run_fixture)
    (trial,) = _trial_dirs(run_dir)

    def tag(key: str) -> str:
        return metrics.tensorboard_tag(metrics.result_key(key))

    for key in (
        metrics.UTILITY_MEAN,
        metrics.UTILITY_MIN,
        metrics.UTILITY_P5,
        metrics.UTILITY_MAX,
        metrics.NET_UTILITY,
        metrics.NET_CONNECTED,
        metrics.NET_CONNECTIONS_PER_BS,
        metrics.NET_BS_BUSY,
    ):
        values = _scalars(trial, tag(key))
        assert len(values) == 2 and all(math.isfinite(v) for v in values), key
    for key in (metrics.JAIN_UTILITY, metrics.JAIN_RATE):
        assert all(0.2 - 1e-9 <= v <= 1 + 1e-9 for v in _scalars(trial, tag(key))), key
    for ue in range(5):
        utility = _scalars(trial, tag(metrics.ue_tag(ue, metrics.UE_UTILITY)))
        assert all(-1 <= v <= 1 for v in utility)
        connected = _scalars(trial, tag(metrics.ue_tag(ue, metrics.UE_CONNECTED)))
        assert all(0 <= v <= 1 for v in connected)
    low, mean, high = (
        _scalars(trial, tag(k))[-1]
        for k in (metrics.UTILITY_MIN, metrics.UTILITY_MEAN, metrics.UTILITY_MAX)
    )
    assert low <= mean <= high


def test_one_train_reads_its_layout_once_and_validates_one_composed_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mobrl train` in one process: validation composes the config once (Hydra's own runner
    then composes it for the job), the config is checked once (the job's identical config is
    not checked again) and the layout file is read and checked once: everything after gets it
    from the checked config."""
    import hydra

    from mobrl import scenarios
    from mobrl.cli import main
    from mobrl.training import checks

    checked: list[str] = []
    settings, preflight = checks.check_settings, checks.preflight
    monkeypatch.setattr(checks, "check_settings", lambda c: checked.append("s") or settings(c))
    monkeypatch.setattr(checks, "preflight", lambda c: checked.append("p") or preflight(c))
    monkeypatch.delenv(checks.CHECKED_ENV, raising=False)

    reads: list[Path] = []
    composes: list[list[str]] = []
    read, compose = scenarios._read, hydra.compose
    monkeypatch.setattr(scenarios, "_LOADED", {})
    monkeypatch.setattr(scenarios, "_read", lambda path: reads.append(path) or read(path))

    def counted(config_name, overrides, *args, **kwargs):  # noqa: ANN001, ANN202
        composes.append(list(overrides))
        return compose(config_name, overrides, *args, **kwargs)

    monkeypatch.setattr(hydra, "compose", counted)
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    argv = ["mobrl", "train", "scenario=small", "run=smoke", f"hydra.run.dir={run_dir}"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 0
    assert (run_dir / "summary.json").is_file()
    assert [p.name for p in reads] == ["small.yaml"]
    assert composes == [argv[2:]]
    assert checked == ["s", "p"]
