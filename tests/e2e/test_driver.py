"""One trial in mobrl's own process (run.executor=auto): without Ray, the files, numbers and
checkpoints of the same trial under Tune."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from mobrl.core.rundir import RunDir, is_complete, read_trial_results
from tests.e2e.conftest import train_smoke

pytestmark = pytest.mark.slow

#: columns that hold timings, memory use, process ids or dates: they differ between any two runs
_CLOCK = (
    "time",
    "timer",
    "timestamp",
    "date",
    "pid",
    "trial_id",
    "throughput",
    "duration",
    "env_runners/sample",
    "perf/",
)


def _trial(run_dir: Path) -> Path:
    (trial,) = RunDir(run_dir).trial_dirs()
    return trial


def _tags(trial: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = trial.glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    return set(acc.Tags()["scalars"])


def test_a_driver_trial_writes_what_the_same_tune_trial_writes(tmp_path: Path) -> None:
    args = ("scenario=cartpole", "run.stop.iterations=3", "run.checkpoint.keep=1")
    runs = {}
    for executor in ("auto", "tune"):
        run_dir = tmp_path / executor
        runs[executor] = (run_dir, train_smoke(run_dir, *args, f"run.executor={executor}"))
    (driver_dir, driver), (tune_dir, tune) = runs["auto"], runs["tune"]
    manifest = json.loads((driver_dir / "manifest.json").read_text())
    assert manifest["executor"] == "driver" and manifest["ray_address"] is None
    assert json.loads((tune_dir / "manifest.json").read_text())["executor"] == "tune"

    trial_d, trial_t = _trial(driver_dir), _trial(tune_dir)
    names = [
        {p.name for p in t.iterdir() if not p.name.startswith("events")} for t in (trial_d, trial_t)
    ]
    assert names[0] == names[1]  # params, progress, results, the same checkpoints kept
    assert {"params.json", "params.pkl", "progress.csv", "result.json"} <= names[0]
    kept = sorted(p for p in trial_d.glob("checkpoint_*"))
    assert kept and all(is_complete(c) for c in kept)
    assert not list(trial_d.glob(".partial-*"))

    progress_d, progress_t = (pd.read_csv(t / "progress.csv") for t in (trial_d, trial_t))
    # the same columns (RLlib's order of its result keys differs between any two processes)
    assert sorted(progress_d.columns) == sorted(progress_t.columns)
    same = sorted(c for c in progress_t.columns if not any(k in c for k in _CLOCK))
    assert (
        "env_runners/episode_return_mean" in same and "learners/default_policy/total_loss" in same
    )
    pd.testing.assert_frame_equal(progress_d[same], progress_t[same])  # the same seeded numbers
    # the training return averages the last episodes across iterations (RLlib's own value
    # covers one iteration's episodes): as many as have ended, up to the window
    averaged = progress_d["env_runners/episode_return_episodes"]
    ended = progress_d["env_runners/num_episodes_lifetime"].clip(upper=20)
    assert list(averaged) == list(ended) and averaged.iloc[-1] > 0
    assert not [c for c in progress_d.columns if "mobrl_episode_returns" in c]
    assert _tags(trial_d) == _tags(trial_t)

    for key in ("best_return", "best_checkpoint_value", "best_checkpoint_iteration"):
        assert driver[key] == tune[key], key
    for key in ("best_checkpoint", "last_checkpoint"):
        assert Path(driver[key]).name == Path(tune[key]).name, key


def test_a_cut_driver_state_is_refused_on_resume(tmp_path: Path) -> None:
    from tests.conftest import run_mobrl

    run_dir = tmp_path / "run"
    train_smoke(run_dir, "scenario=cartpole")
    state = run_dir / "tune" / "driver-state.json"
    assert json.loads(state.read_text())["status"] == "TERMINATED"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    result = run_mobrl("train", "--resume", str(run_dir))
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert "driver-state.json is unreadable" in line and "mobrl evaluate --checkpoint" in line


def test_resuming_a_finished_driver_run_trains_nothing_more(tmp_path: Path) -> None:
    from tests.conftest import run_mobrl

    run_dir = tmp_path / "run"
    first = train_smoke(run_dir, "scenario=cartpole")
    progress = _trial(run_dir) / "progress.csv"
    before = progress.read_bytes()
    result = run_mobrl("train", "--resume", str(run_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    assert progress.read_bytes() == before
    again = json.loads((run_dir / "summary.json").read_text())
    assert again["best_checkpoint"] == first["best_checkpoint"]


def test_a_resumed_driver_trial_continues_from_its_latest_checkpoint(tmp_path: Path) -> None:
    """A trial stopped during an iteration continues from its latest whole checkpoint: the
    iteration and the training time (`time_total_s`) count on from it, as under Tune; the
    evaluation marks its checkpoint passed are not met again."""
    from tests.conftest import run_mobrl

    run_dir = tmp_path / "run"
    # iterations of 200 env steps: the mark 400 at iteration 2, none at iteration 3
    marks = ["run.eval.every_env_steps=400", "run.eval.episodes=2"]
    train_smoke(run_dir, "scenario=cartpole", "run.stop.iterations=3", *marks)
    trial = _trial(run_dir)
    # as if stopped during iteration 3: no result of it, its checkpoint never renamed
    shutil.rmtree(trial / "checkpoint_000002")
    for name, lines in (("result.json", 2), ("progress.csv", 3)):
        kept = (trial / name).read_text().splitlines(keepends=True)[:lines]
        (trial / name).write_text("".join(kept))
    state_file = run_dir / "tune" / "driver-state.json"
    state = json.loads(state_file.read_text())
    state["status"] = "RUNNING"
    state["checkpoints"] = [c for c in state["checkpoints"] if c["dir"] != "checkpoint_000002"]
    state_file.write_text(json.dumps(state))

    result = run_mobrl("train", "--resume", str(run_dir))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = read_trial_results(trial)
    assert [r["training_iteration"] for r in rows] == [1, 2, 3]
    assert rows[2]["time_total_s"] == pytest.approx(
        rows[1]["time_total_s"] + rows[2]["time_this_iter_s"]
    )
    progress = pd.read_csv(trial / "progress.csv")
    assert list(progress["training_iteration"]) == [1, 2, 3]
    assert progress["evaluation/at_env_steps"].fillna(0).tolist() == [0, 400, 0]
    assert is_complete(trial / "checkpoint_000002")
    state = json.loads(state_file.read_text())
    assert state["status"] == "TERMINATED"
    assert [c["iteration"] for c in state["checkpoints"]] == [1, 2, 3]


@pytest.mark.parametrize("executor", ["driver", "tune"])
def test_checkpoint_keep_keeps_the_best_checkpoint_and_the_latest(
    tmp_path: Path, executor: str
) -> None:
    """`run.checkpoint.keep=1` keeps the best-scoring checkpoint (and the latest, which Tune
    always keeps), not the latest alone: Tune finds a nested score such as
    `env_runners/episode_return_mean` only at the top of the result."""
    run_dir = tmp_path / "run"
    # the training return rises over the first iterations: with mode=min the first
    # checkpoint is the best one and the last is the worst
    summary = train_smoke(
        run_dir, "scenario=cartpole", "run.stop.iterations=5", "run.checkpoint.keep=1",
        "tune.mode=min", f"run.executor={executor}",
    )  # fmt: skip
    trial = _trial(run_dir)
    returns = list(pd.read_csv(trial / "progress.csv")["env_runners/episode_return_mean"])
    assert returns[0] == min(returns) < returns[-1]
    assert sorted(p.name for p in trial.glob("checkpoint_*")) == [
        "checkpoint_000000", "checkpoint_000004",
    ]  # fmt: skip
    assert Path(summary["best_checkpoint"]).name == "checkpoint_000000"
    assert summary["best_checkpoint_value"] == returns[0]
    assert summary["best_checkpoint_iteration"] == 1
