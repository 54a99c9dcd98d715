"""A run whose storage fills up, on real Ray and a real small tmpfs: it stops resumably with
one line before a checkpoint or Tune's state is cut, and `--resume` after space is freed
continues from where it stopped (never from iteration 1)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd

from mobrl.core.rundir import is_complete, list_checkpoints
from tests.conftest import run_mobrl, small_tmpfs

pytestmark = __import__("pytest").mark.slow


def test_a_full_storage_stops_resumably_and_resume_continues(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with small_tmpfs(tmp_path / "storage", "3m") as storage:
        args = ("train", "scenario=small", "run=smoke", f"hydra.run.dir={run_dir}")
        refused = run_mobrl(*args, f"run.storage_path={storage}")  # 3 MB < the default 64
        assert refused.returncode == 2 and "run.checkpoint.min_free_mb" in refused.stderr
        assert refused.stderr.strip().count("\n") == 0 and not any(storage.iterdir())

        stopped = run_mobrl(
            *args, f"run.storage_path={storage}", "run.stop.iterations=12",
            "run.checkpoint.min_free_mb=1",
        )  # fmt: skip
        assert stopped.returncode == 2, stopped.stdout + stopped.stderr
        (line,) = [ln for ln in stopped.stderr.splitlines() if ln.strip()]
        assert line.startswith(f"error: run.storage_path '{storage}' is full"), line
        assert f"mobrl train --resume {run_dir}" in line
        kept = list_checkpoints(run_dir)
        assert kept and all(is_complete(c) for c in kept)  # nothing half-written
        assert str(kept[-1]) in line  # the last complete checkpoint is named
        (progress,) = storage.glob("*/PPO_*/progress.csv")
        stopped_at = int(pd.read_csv(progress)["training_iteration"].max())
        assert 1 <= stopped_at < 12

        subprocess.run(["mount", "-o", "remount,size=64m", str(storage)], check=True)
        resumed = run_mobrl("train", "--resume", str(run_dir))
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        iterations = pd.read_csv(progress)["training_iteration"].tolist()
        assert iterations == list(range(1, 13))  # continued, each iteration once
        # from its last complete checkpoint: at most the iteration whose checkpoint the stop
        # cut off is played again, never iteration 1
        played = [int(m) for m in re.findall(r" iter (\d+) ", resumed.stdout)]
        assert played and 1 < played[0] <= stopped_at + 1 and played[-1] == 12


def test_resume_from_a_cut_tune_state_is_refused(tmp_path: Path) -> None:
    """A Tune state cut by a crash on a full disk: --resume refuses in one line (Tune would
    start the trials over from iteration 1) and names the last complete checkpoint."""
    from tests.e2e.conftest import train_smoke

    run_dir = tmp_path / "run"
    train_smoke(run_dir, "scenario=small", "run.executor=tune")
    (state,) = (run_dir / "tune").glob("experiment_state-*.json")
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    result = run_mobrl("train", "--resume", str(run_dir))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"Tune's state {state.name} is cut" in result.stderr
    assert "mobrl evaluate --checkpoint" in result.stderr and "Traceback" not in result.stderr
