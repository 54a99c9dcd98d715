"""A train experiment once it is set up, fresh (`run.run_training`) or resumed
(`resume.resume_run`): the trials fitted under Ray Tune or in the driver (`driver.fit`), a full
disk reported as mobrl's one line, and the end of the run (the ranking, then an interrupted,
failed, full or empty run said so with its exit code).

The interrupt flag (`progress.INTERRUPTED`) and the disk guard's finding (`diskspace.FULL`)
live in their modules for the whole process, which may run several experiments (the Python
API, a sweep's jobs): each run starts them afresh here, just before its trials train.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core import metrics
from mobrl.core.console import make_console
from mobrl.core.errors import INTERRUPTED_EXIT, UserError
from mobrl.core.rundir import RunDir, last_complete_checkpoint
from mobrl.envs import factory
from mobrl.training import trackers, tuning
from mobrl.training.ranking import report
from mobrl.training.raysession import repair_progress_csv, trial_cpus

console = make_console()


def check_room(storage: Path, min_free_mb: int) -> None:
    """Refuse a run whose storage lacks room (before Ray starts), and forget a full disk an
    earlier run in this process ran into."""
    from mobrl.training.diskspace import FULL, check_free

    check_free(storage, min_free_mb)
    FULL.reason = None


@contextmanager
def driver_session() -> Iterator[None]:
    """What a run in mobrl's own process needs instead of Ray: mobrl's env registered."""
    factory.register()
    yield


def describe_tracker(cfg: DictConfig, run: RunDir) -> None:
    """One line on where the tracker (`logger=`) logs the run, if one is on."""
    line = trackers.describe(cfg, run.path)
    if line:
        console.print(f"[bold]mobrl[/bold] {line}")


def fit_in_driver(
    cfg: DictConfig,
    trainable: Any,
    space: dict[str, Any],
    experiment_dir: Path,
    run: RunDir,
    resume: bool = False,
    retry_errored: bool = False,
) -> list[Any]:
    """The run's one trial trained in this process, with the callbacks Tune would call."""
    from mobrl.training import driver
    from mobrl.training.diskspace import DiskGuard
    from mobrl.training.progress import INTERRUPTED, ProgressCallback

    INTERRUPTED.clear()
    callbacks = [
        ProgressCallback(cfg.tune.metric, str(run.env_failures_dir)),
        DiskGuard(experiment_dir.parent, experiment_dir, cfg.run.checkpoint.min_free_mb),
        *trackers.callbacks(cfg, run.path, {}, in_driver=True),
    ]
    return driver.fit(cfg, trainable, space, experiment_dir, callbacks, resume, retry_errored)


def fit_with_tune(
    cfg: DictConfig,
    trainable: Any,
    space: dict[str, Any],
    locations: dict[str, tuple],
    storage: Path,
    name: str,
    run: RunDir,
) -> Any:
    """The run's trials under Ray Tune: search, scheduler, stop criteria, checkpoints kept,
    retries, and mobrl's callbacks (live table, disk guard, tracker)."""
    from ray import tune

    from mobrl.training.diskspace import DiskGuard
    from mobrl.training.progress import INTERRUPTED, ProgressCallback, trial_name
    from mobrl.training.tune_start import Started, one_at_a_time

    ckpt = cfg.run.checkpoint
    checkpoint_config = tune.CheckpointConfig(
        checkpoint_frequency=ckpt.frequency,
        checkpoint_at_end=ckpt.at_end,
        num_to_keep=ckpt.keep,
        checkpoint_score_attribute=cfg.tune.metric if ckpt.keep else None,
        checkpoint_score_order=cfg.tune.mode,
    )
    concurrency = tuning.concurrency(cfg, trial_cpus(cfg))
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            num_samples=cfg.tune.num_samples,
            search_alg=tuning.searcher(cfg),
            scheduler=tuning.scheduler(cfg, space, locations),
            max_concurrent_trials=concurrency,
            trial_dirname_creator=trial_name,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(storage),
            stop=tuning.stop_criteria(cfg),
            checkpoint_config=checkpoint_config,
            failure_config=tune.FailureConfig(max_failures=cfg.run.fault.max_failures),
            callbacks=[
                ProgressCallback(cfg.tune.metric, str(run.env_failures_dir)),
                DiskGuard(storage, storage / name, cfg.run.checkpoint.min_free_mb),
                *trackers.callbacks(cfg, run.path, locations, in_driver=False),
                Started(),
            ],
            verbose=0,
        ),
    )
    INTERRUPTED.clear()
    with one_at_a_time():
        return tuner.fit()


@contextmanager
def full_disk_as_one_line(storage: Path, run: RunDir, experiment_dir: Path) -> Iterator[None]:
    """A run that failed or stopped for lack of room ends with mobrl's one line."""
    from mobrl.training.diskspace import FULL, MB, free_bytes, full_disk_error, is_full

    try:
        yield
    except Exception as err:
        if FULL.reason is None and not is_full(err) and free_bytes(storage) > MB:
            raise
        FULL.set(FULL.reason or "no space left on device")
        raise full_disk_error(storage, run.path, last_complete_checkpoint(experiment_dir)) from None


def finish(
    cfg: DictConfig,
    results: Any,
    locations: dict,
    run: RunDir,
    experiment_dir: Path,
    storage: Path,
) -> float | None:
    """Report the experiment; an interrupted one tells how to continue it (exit 130), one
    stopped on a full disk how to free space and continue (exit 2)."""
    from mobrl.training.diskspace import FULL, full_disk_error
    from mobrl.training.progress import INTERRUPTED

    with full_disk_as_one_line(storage, run, experiment_dir):
        summary = report(cfg, results, locations, run, experiment_dir, console)
    if FULL.reason is not None:
        raise full_disk_error(storage, run.path, last_complete_checkpoint(experiment_dir))
    if INTERRUPTED.is_set():
        print(  # one line, on stderr with every other command's interrupt
            f"interrupted: training stopped; its checkpoints and experiment state are saved. "
            f"Continue with `mobrl train --resume {run.path}`.",
            file=sys.stderr,
        )
        raise SystemExit(INTERRUPTED_EXIT)
    if summary["failed"]:
        raise SystemExit(1)
    check_sampled(cfg, results)
    return summary["best_return"]


def finish_resumed(
    cfg: DictConfig,
    results: Any,
    locations: Any,
    run: RunDir,
    experiment_dir: Path,
    storage: Path,
) -> float | None:
    """`finish` after each trial's progress.csv holds every iteration once again, and a
    trial that finished this time keeps no error file of an earlier failure."""
    from mobrl.training.driver_trial import clear_error

    for trial_dir in experiment_dir.iterdir():
        if trial_dir.is_dir():
            repair_progress_csv(trial_dir)
    for result in results:
        if result.error is None and result.path:
            clear_error(Path(result.path))
    return finish(cfg, results, locations, run, experiment_dir, storage)


def check_sampled(cfg: DictConfig, results: Any) -> None:
    """A run whose trials sampled no env step learned nothing: say so, do not exit 0."""
    sampled, iterations, seconds = 0.0, 0, 0.0
    for result in results:
        last = result.metrics or {}
        sampled += float(metrics.result_value(last, metrics.ENV_STEPS) or 0)
        iterations = max(iterations, int(last.get(metrics.ITERATION) or 0))
        seconds = max(seconds, float(last.get(metrics.TIME_TOTAL) or 0))
    if iterations and not sampled:
        raise UserError(
            f"training sampled no env step in {iterations} iterations ({seconds:.0f} s), so "
            f"nothing was learned: one step of scenario={cfg.scenario.name} outlasts what an "
            "iteration waits for samples. Use a smaller layout, or fewer envs per runner "
            "(run.resources.num_envs_per_env_runner=1) and a longer run.stop.time_s."
        )
