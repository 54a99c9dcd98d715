"""The `mobrl train` task: composed config -> RLlib config -> Tune experiment -> run dir + summary.

The experiment itself (its trials fitted under Tune or in the driver, the end of the run) is
`experiment.py`'s; continuing an interrupted run, `resume.py`'s."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.config import load_run
from mobrl.core import faults
from mobrl.core.errors import USER_ERROR_EXIT, UserError
from mobrl.core.files import check_writable
from mobrl.core.rundir import RunDir, build_manifest
from mobrl.envs import factory
from mobrl.training import tuning
from mobrl.training.algos import build_algorithm_config
from mobrl.training.checks import check_once
from mobrl.training.executor import in_driver
from mobrl.training.experiment import (
    check_room,
    console,
    describe_tracker,
    driver_session,
    finish,
    fit_in_driver,
    fit_with_tune,
    full_disk_as_one_line,
)
from mobrl.training.raysession import configure_ray, probe_ray_address, ray_address, ray_session
from mobrl.training.resume import iterations_done, resume_run


def train_task(cfg: DictConfig) -> float | None:
    """Hydra task function: one experiment per call (Hydra calls it once per multirun job)."""
    from mobrl.training.launchers import prefix_job_output

    prefix_job_output()
    try:
        return run_training(cfg)
    except UserError as err:
        _drop_empty_job_dir()
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(USER_ERROR_EXIT) from None


#: when this process imported the task: Hydra's files of a job dir older than that are
#: another job's
_STARTED = time.time()


def _drop_empty_job_dir() -> None:
    """After a config error: remove the job dir Hydra made for this run if it holds nothing
    but Hydra's own `.hydra/` files written by this process (and then an empty date dir)."""
    import shutil

    from hydra.core.hydra_config import HydraConfig

    try:
        job_dir = Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # not inside a Hydra job
        return
    hydra_dir = job_dir / ".hydra"
    if not job_dir.is_dir() or [p.name for p in job_dir.iterdir()] != [".hydra"]:
        return
    if any(f.stat().st_mtime < _STARTED - 1 for f in hydra_dir.iterdir()):
        return  # an older job's files: not ours to remove
    shutil.rmtree(job_dir, ignore_errors=True)
    date_dir = job_dir.parent  # outputs/DATE/ of a single run (a multirun's sweep dir stays)
    if date_dir.parent.name != "outputs":
        return
    for folder in (date_dir, date_dir.parent):  # then outputs/ itself, each only if empty
        if not folder.is_dir() or any(folder.iterdir()):
            return
        folder.rmdir()


def run_training(
    cfg: DictConfig, run_dir: Path | None = None, overrides: list[str] | None = None
) -> float | None:
    """Train as configured; return the best value of the ranking metric reached (None if no
    trial reported it). Inside a Hydra job the run dir and overrides are Hydra's; the Python
    API gives its own."""
    from hydra.core.hydra_config import HydraConfig

    check_once(cfg)  # checked by the command line's check already: not again
    tuning.rank_by_evaluation(cfg)
    overrides = list(overrides or [])
    if run_dir is None:
        hydra_cfg = HydraConfig.get()
        run_dir = Path(hydra_cfg.runtime.output_dir)
        overrides = list(hydra_cfg.overrides.task)
    run = RunDir(run_dir)
    storage = (
        Path(cfg.run.storage_path).expanduser().absolute() if cfg.run.storage_path else run.path
    )
    check_writable(storage, "run.storage_path")
    check_room(storage, cfg.run.checkpoint.min_free_mb)
    experiment_name = RunDir.TUNE if storage == run.path else run.path.name
    experiment_dir = storage / experiment_name
    configure_ray(cfg.ray.log_level)
    env_config, algo_config, space, locations = _build(cfg, run)
    driver = in_driver(cfg)
    # Ray before the run dir is written: a cluster too small fails here
    with driver_session() if driver else ray_session(cfg):
        _write_run(cfg, run, env_config, overrides, experiment_dir, driver)
        with full_disk_as_one_line(storage, run, experiment_dir):
            if driver:
                results = fit_in_driver(cfg, algo_config.algo_class, space, experiment_dir, run)
            else:
                results = fit_with_tune(
                    cfg, algo_config.algo_class, space, locations, storage, experiment_name, run
                )
    return finish(cfg, results, locations, run, experiment_dir, storage)


def _build(cfg: DictConfig, run: RunDir) -> tuple[dict[str, Any], Any, dict[str, Any], dict]:
    """The env config (the env built once and checked by RLlib's checker), the Ray address
    probed, then the algorithm config (with the fault to make, if any) and Tune's search
    space and where its keys came from."""
    env_config = factory.env_config_from(cfg)
    factory.check_env(env_config)
    probe_ray_address(cfg.ray.address)
    fault = faults.plan(cfg.run.fault.inject, run.path)
    algo_config = build_algorithm_config(
        cfg, factory.ENV_NAME, env_config, fault, failures=str(run.env_failures_dir)
    )
    space, locations = tuning.param_space(cfg, algo_config)
    return env_config, algo_config, space, locations


def _write_run(
    cfg: DictConfig,
    run: RunDir,
    env_config: dict[str, Any],
    overrides: list[str],
    experiment_dir: Path,
    driver: bool,
) -> None:
    """The run dir's config and manifest (with where and how the trials train), then the
    run dir and the tracker on the console."""
    run.write_config(cfg)
    policy_ids = factory.policy_ids(env_config)
    manifest = build_manifest(cfg, env_config, policy_ids, ["mobrl", "train", *overrides])
    manifest["experiment_dir"] = str(experiment_dir)
    manifest["executor"] = "driver" if driver else "tune"
    manifest["ray_address"] = None if driver else ray_address()
    run.write_manifest(manifest)
    console.print(f"[bold]mobrl[/bold] run dir: {run.path}")
    describe_tracker(cfg, run)


def resume_training(run_dir: Path, retry_errored: bool = False) -> float | None:
    """Continue an interrupted `mobrl train` run: unfinished trials restart from their latest
    checkpoints, finished ones stay as they are, errored ones restart only if asked."""
    run = RunDir(run_dir)
    cfg, manifest = load_run(run)
    experiment_dir = run.experiment_dir(manifest)
    before = iterations_done(experiment_dir)
    best = resume_run(run, cfg, manifest, experiment_dir, retry_errored)
    if before and iterations_done(experiment_dir) == before:
        print(
            f"nothing to resume: no trial of {run.path} trained further (each had "
            "finished, or failed: --retry-errored restarts failed trials); its results "
            "are as they were.",
            file=sys.stderr,
        )
    return best
