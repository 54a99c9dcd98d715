"""Tune sweeps and resume end to end: real trials, a real SIGKILL, files read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def _iterations(trial_dir: Path) -> list[int]:
    lines = (trial_dir / "result.json").read_text().splitlines()
    return [json.loads(line)["training_iteration"] for line in lines if line.strip()]


def _trials(run_dir: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted((run_dir / "tune").iterdir()) if p.is_dir()}


def test_lr_grid_runs_two_trials_and_ranks_them(tmp_path: Path) -> None:
    run_dir = tmp_path / "grid"
    result = run_mobrl(
        "train", "scenario=cartpole", "run=smoke", "tune=lr_grid", f"hydra.run.dir={run_dir}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trials ranked by env_runners/episode_return_mean (max)" in result.stdout
    assert "best config: training.lr=" in result.stdout

    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 2 and list(trials["rank"]) == [1, 2]
    assert sorted(trials["training.lr"]) == [0.0001, 0.001]
    best_col = "best env_runners/episode_return_mean"
    assert trials[best_col].iloc[0] >= trials[best_col].iloc[1]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert Path(summary["best_checkpoint"]).is_dir()
    assert summary["best_params"]["training.lr"] == trials["training.lr"].iloc[0]
    # each trial trained with its own learning rate
    for name, trial_dir in _trials(run_dir).items():
        progress = pd.read_csv(trial_dir / "progress.csv")
        lr = progress["learners/default_policy/default_optimizer_learning_rate"].iloc[-1]
        assert lr == trials.set_index("trial").loc[name, "training.lr"]


def test_resume_after_sigkill_continues_from_checkpoints(tmp_path: Path) -> None:
    """Kill the whole process group (driver and Ray) after the second trial's first
    checkpoint; `--resume` leaves the finished trial alone and continues the other one."""
    run_dir = tmp_path / "run"
    n = 3  # iterations of a trial: the second must still be training 1.5 s after its first
    args = [
        "train", "scenario=cartpole", "run=smoke", "tune=lr_grid", f"run.stop.iterations={n}",
        "run.batch.train_batch_size=4000", "run.batch.minibatch_size=1000",
        "run.batch.num_epochs=10",
        "run.resources.num_env_runners=1",  # 2 CPUs a trial: one trial after the other
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: Ray's processes die with it
    )
    try:
        deadline = time.time() + 300
        first = second = None
        while time.time() < deadline and proc.poll() is None:
            trials = _trials(run_dir) if (run_dir / "tune").is_dir() else {}
            done = [t for t in trials.values() if len(list(t.glob("checkpoint_*"))) == n]
            started = [t for t in trials.values() if t not in done and list(t.glob("checkpoint_*"))]
            if done and started:
                first, second = done[0], started[0]
                time.sleep(1.5)  # let the finished trial reach Tune's saved experiment state
                break
            time.sleep(0.05)
        assert first is not None, "the second trial never checkpointed before the run ended"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    first_before = _iterations(first)
    first_ckpts = sorted(p.name for p in first.glob("checkpoint_*"))
    second_ckpts = sorted(p.name for p in second.glob("checkpoint_*"))
    assert first_before == list(range(1, n + 1))
    assert 1 <= len(second_ckpts) < n

    result = run_mobrl("train", "--resume", str(run_dir), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"resuming run dir: {run_dir}" in result.stdout

    assert _iterations(first) == first_before  # the finished trial was not run again
    assert sorted(p.name for p in first.glob("checkpoint_*")) == first_ckpts
    after = _iterations(second)
    assert after[-1] == n
    assert after.count(1) == 1  # continued from its checkpoint, not from the start
    # the first iteration after the restart follows the checkpoint it restored
    assert sorted(set(after)) == list(range(1, n + 1))
    now = sorted(p.name for p in second.glob("checkpoint_*"))
    assert set(second_ckpts) <= set(now) and len(now) == n  # no checkpoint lost
    for trial_dir in (first, second):
        pd.read_csv(trial_dir / "progress.csv")  # still readable after the restore
    trials = pd.read_csv(run_dir / "trials.csv")
    assert len(trials) == 2 and set(trials["iterations"]) == {n}


@pytest.mark.parametrize("executor", ["driver", "tune"])
def test_ctrl_c_stops_cleanly_and_prints_the_resume_command(tmp_path: Path, executor: str) -> None:
    run_dir = tmp_path / "run"
    args = [
        # iterations of 200 env steps: fewer episodes end in one than the training return's
        # window holds, so a resumed window that started empty would show
        "train", "scenario=cartpole", "run=smoke", "run.stop.iterations=40",
        f"run.executor={executor}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if list(run_dir.glob("tune/*/checkpoint_000002")):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the command
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stdout[-2000:] + stderr[-2000:]
    told = [line for line in stderr.splitlines() if line.startswith("interrupted: ")]
    assert len(told) == 1 and f"mobrl train --resume {run_dir}" in told[0], stderr
    assert "Traceback" not in stderr and "Tuner.restore" not in stderr
    (trial,) = _trials(run_dir).values()
    stopped_at = _iterations(trial)[-1]
    assert 2 <= stopped_at < 40
    assert (run_dir / "summary.json").is_file()  # the results so far are written

    result = run_mobrl("train", "--resume", str(run_dir), cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    after = _iterations(trial)
    assert after[-1] == 40 and after.count(1) == 1  # continued, not restarted
    # the training return carries on the last 20 episodes from before the stop
    progress = pd.read_csv(trial / "progress.csv")
    averaged = progress["env_runners/episode_return_episodes"]
    ended = progress["env_runners/num_episodes_lifetime"].clip(upper=20)
    assert list(averaged) == list(ended)
    first = next(line for line in result.stdout.splitlines() if " iter " in line)
    assert ended.iloc[stopped_at] == 20 and "(last 20 episodes)" in first, first
