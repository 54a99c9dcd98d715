"""Parallel multirun with Hydra's joblib launcher: the jobs share one local Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ray_process_count, run_mobrl

pytestmark = pytest.mark.slow


def test_joblib_jobs_run_side_by_side_on_one_shared_ray(tmp_path: Path) -> None:
    before = ray_process_count()
    result = run_mobrl(
        "train",
        "-m",
        "run=smoke",
        "run.seed=0,1,2",
        "run.resources.num_env_runners=0",  # one CPU per trial: two trials at once on 2 cores
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={tmp_path}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout + result.stderr
    assert "Joblib.Parallel(" not in out  # the launcher's long start-up line is kept out
    for job in range(3):  # lines of jobs running side by side say whose they are
        assert f"[job {job}] " in result.stdout
    assert f"multirun dir: {tmp_path}" in result.stdout and f"mobrl report {tmp_path}" in out
    job_dirs = sorted(p.parent for p in tmp_path.glob("*/summary.json"))
    assert [d.name.split("_")[0] for d in job_dirs] == ["0", "1", "2"]
    seeds, addresses = set(), set()
    for job in job_dirs:
        manifest = json.loads((job / "manifest.json").read_text())
        seeds.add(manifest["seed"])
        addresses.add(manifest["ray_address"])
        assert not json.loads((job / "summary.json").read_text())["failed"]
        # its own trial alone: jobs starting together on one Ray stage apart (tune_start)
        (trial,) = [p for p in (job / "tune").iterdir() if p.is_dir()]
        assert json.loads((trial / "params.json").read_text())["seed"] == manifest["seed"]
    assert seeds == {0, 1, 2}
    assert len(addresses) == 1  # one Ray for all jobs
    assert ray_process_count() == before  # and it was stopped after the last job


def test_launcher_config_is_shown_and_a_missing_plugin_is_named(tmp_path: Path) -> None:
    shown = run_mobrl("train", "--cfg", "hydra", "hydra/launcher=submitit_slurm", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "SlurmLauncher" in shown.stdout and "timeout_min" in shown.stdout
    assert not any(tmp_path.iterdir())  # showing the config writes nothing
