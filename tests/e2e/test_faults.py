"""Failures made on purpose (run.fault.inject) that a run must survive, on real Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mobrl.core.faults import made
from tests.e2e.conftest import train_smoke

pytestmark = pytest.mark.slow


def _iterations(run_dir: Path) -> list[tuple[int, float]]:
    """(iteration, lifetime env steps) of each result the trial reported, in order."""
    (results,) = run_dir.glob("tune/*/result.json")
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return [(r["training_iteration"], r.get("num_env_steps_sampled_lifetime", 0)) for r in rows]


def test_a_failed_env_runner_is_restarted_and_training_finishes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    summary = train_smoke(
        run_dir,
        "run.resources.num_env_runners=1",  # a runner actor to fail and restart
        "run.stop.iterations=null",
        "run.stop.env_steps=600",
        "run.fault.inject.what=env_error",
        "run.fault.inject.at=120",
        "run.fault.restart_env_runners=true",
        "run.fault.restart_delay_s=1",
    )
    assert made(run_dir) == ["env_error-0"]  # the fault did happen, once
    assert not summary["failed"]
    steps = [s for _, s in _iterations(run_dir)]
    assert steps[-1] >= 600
    # no iteration is reported without samples: the one the runner failed in ran again
    assert all(b > a for a, b in zip([0, *steps], steps)), steps


def test_a_crashed_trial_is_retried_from_its_latest_checkpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    summary = train_smoke(
        run_dir,
        "run.stop.iterations=4",
        "run.fault.inject.what=trial_exit",
        "run.fault.inject.at=2",
        "run.fault.max_failures=1",
    )
    assert made(run_dir) == ["trial_exit-0"]
    assert not summary["failed"]
    # the process died after iteration 2, before reporting it: iteration 1's checkpoint was
    # restored, so iteration 2 ran again and nothing else did. Tune copies result.json back
    # from the trial's storage when it restores a trial; a copy taken before iteration 1's
    # row was written leaves that row out, so the rows after the restore settle it
    rows = _iterations(run_dir)
    assert rows[-3:] == [(2, 400), (3, 600), (4, 800)]
    assert rows[:-3] in ([], [(1, 200)])


def test_a_crashed_trial_without_retries_fails_the_run_with_its_error(tmp_path: Path) -> None:
    from tests.conftest import run_mobrl

    run_dir = tmp_path / "run"
    result = run_mobrl(
        "train",
        "run=smoke",
        f"hydra.run.dir={run_dir}",
        "run.resources.num_env_runners=0",
        "run.fault.inject.what=env_error",
        "run.fault.inject.at=50",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    printed = result.stdout + result.stderr
    assert (
        "trial failed: the env (scenario=small) failed in step: "
        "InjectedFault: run.fault.inject: env_error at step 50" in printed
    ), printed
    assert "Traceback" not in printed and "Trials did not complete" not in printed
    assert json.loads((run_dir / "summary.json").read_text())["failed"]
    # the trial trained in mobrl's process: RLlib's own log of the failure is kept in the trial
    # dir, as the traceback is, rather than printed
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    assert "InjectedFault" in (trial / "error.txt").read_text()
    assert "Environment step failed" in (trial / "trial.log").read_text()
