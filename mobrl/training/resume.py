"""`mobrl train --resume RUN_DIR` (`run.resume_training`): the run's own config checked again,
its algorithm config and search space rebuilt, and its experiment continued as it ran: Tune's
restored from Tune's state files (checked whole first), or the driver's trial from
`driver-state.json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core import faults
from mobrl.core.errors import UserError
from mobrl.core.rundir import RunDir, read_trial_results, unresumable_hint
from mobrl.envs import factory
from mobrl.training import tuning
from mobrl.training.algos import build_algorithm_config
from mobrl.training.checks import check_config
from mobrl.training.driver_trial import STATE
from mobrl.training.experiment import (
    check_room,
    console,
    describe_tracker,
    driver_session,
    finish_resumed,
    fit_in_driver,
    full_disk_as_one_line,
)
from mobrl.training.raysession import configure_ray, probe_ray_address, ray_session


def iterations_done(experiment_dir: Path) -> dict[str, int]:
    """Each trial's iterations written so far."""
    return {
        trial.name: len(read_trial_results(trial))
        for trial in (experiment_dir.iterdir() if experiment_dir.is_dir() else [])
        if trial.is_dir()
    }


def resume_run(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path, retry_errored: bool
) -> float | None:
    """Continue the run's experiment with the executor it ran with; return its best value."""
    if manifest.get("executor") == "driver" or (experiment_dir / STATE).is_file():
        return _resume_in_driver(run, cfg, manifest, experiment_dir, retry_errored)
    if not (experiment_dir / RunDir.TUNER_STATE).is_file():
        raise UserError(
            f"'{run.path}' has no Tune experiment state to resume "
            f"({experiment_dir / RunDir.TUNER_STATE} "
            "is missing): the run stopped before its first trial started. Start it again."
        )
    _check_resumable(run, experiment_dir)
    probe_ray_address(cfg.ray.address)
    # Tune saved the space with placeholders for objects it cannot store: hand it over again
    storage, algo_config, space, locations = _prepare_resume(run, cfg, manifest, experiment_dir)

    from ray import tune

    from mobrl.training.progress import INTERRUPTED

    with ray_session(cfg), full_disk_as_one_line(storage, run, experiment_dir):
        INTERRUPTED.clear()
        tuner = tune.Tuner.restore(
            str(experiment_dir),
            trainable=algo_config.algo_class,
            resume_unfinished=True,
            # an errored trial continues from its latest checkpoint (Tune's restart_errored
            # would start it over, and Ray 2.60 fails to rebuild its config for that)
            resume_errored=retry_errored,
            restart_errored=False,
            param_space=space,
        )
        results = tuner.fit()
    return finish_resumed(cfg, results, locations, run, experiment_dir, storage)


def _resume_in_driver(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path, retry_errored: bool
) -> float | None:
    """`resume_run` of a run whose trial trained in mobrl's own process."""
    if not (experiment_dir / STATE).is_file():
        raise UserError(
            f"'{run.path}' has no trial state to resume ({experiment_dir / STATE} is "
            "missing): the run stopped before its trial started. Start it again."
        )
    storage, algo_config, space, locations = _prepare_resume(run, cfg, manifest, experiment_dir)
    with driver_session(), full_disk_as_one_line(storage, run, experiment_dir):
        results = fit_in_driver(
            cfg, algo_config.algo_class, space, experiment_dir, run, True, retry_errored
        )
    return finish_resumed(cfg, results, locations, run, experiment_dir, storage)


def _prepare_resume(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path
) -> tuple[Path, Any, dict[str, Any], Any]:
    """What either way of resuming needs: free space checked, the config checked again, the
    algorithm config and search space rebuilt from the run's own config and env."""
    storage = experiment_dir.parent
    check_room(storage, cfg.run.checkpoint.min_free_mb)
    configure_ray(cfg.ray.log_level)
    check_config(cfg)
    algo_config = build_algorithm_config(
        cfg,
        factory.ENV_NAME,
        manifest.get("env_config") or factory.env_config_from(cfg),
        faults.plan(cfg.run.fault.inject, run.path),
        imitate=False,  # the checkpoint holds the imitated policy already
        failures=str(run.env_failures_dir),
    )
    space, locations = tuning.param_space(cfg, algo_config)
    console.print(f"[bold]mobrl[/bold] resuming run dir: {run.path}")
    describe_tracker(cfg, run)
    return storage, algo_config, space, locations


def _check_resumable(run: RunDir, experiment_dir: Path) -> None:
    """Tune's saved state must read back whole: from a cut one (a full disk, a killed
    process) Tune would silently start the trials over from iteration 1."""
    for state in sorted(experiment_dir.glob("*state-*.json")):
        try:
            data = state.read_bytes()
            if data[:1] == b"\x80":  # the searcher's state is a pickle despite its name
                if data[-1:] != b".":
                    raise ValueError("the pickle ends early")
            else:
                json.loads(data)
        except (OSError, ValueError) as err:
            hint = unresumable_hint(experiment_dir)
            raise UserError(
                f"cannot resume '{run.path}': Tune's state {state.name} is cut ({err}), so "
                f"its trials would start over from iteration 1; {hint}."
            ) from None
