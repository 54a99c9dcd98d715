"""The `mobrl train` task: composed config -> RLlib config -> Tune experiment -> run dir + summary."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.config import load_run
from mobrl.core.console import make_console
from mobrl.core.errors import INTERRUPTED_EXIT, USER_ERROR_EXIT, UserError
from mobrl.core.files import check_writable
from mobrl.core.rundir import (
    RunDir,
    build_manifest,
    last_complete_checkpoint,
    read_trial_results,
    unresumable_hint,
)
from mobrl.training.checks import check_config, check_once
from mobrl.training.raysession import (
    configure_ray,
    probe_ray_address,
    ray_address,
    ray_session,
    repair_progress_csv,
    trial_cpus,
)

console = make_console()
#: exit code of a run stopped with Ctrl-C (128 + SIGINT, as shells report it)


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
    from mobrl.training.tuning import rank_by_evaluation

    rank_by_evaluation(cfg)
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
    from mobrl.training.diskspace import FULL, check_free

    check_free(storage, cfg.run.checkpoint.min_free_mb)
    FULL.reason = None
    experiment_name = RunDir.TUNE if storage == run.path else run.path.name
    experiment_dir = storage / experiment_name
    configure_ray(cfg.ray.log_level)
    from mobrl.core import faults
    from mobrl.envs import factory
    from mobrl.training import tuning
    from mobrl.training.algos import build_algorithm_config

    env_config = factory.env_config_from(cfg)
    factory.check_env(env_config)
    probe_ray_address(cfg.ray.address)
    fault = faults.plan(cfg.run.fault.inject, run.path)
    algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config, fault)
    space, locations = tuning.param_space(cfg, algo_config)
    policy_ids = factory.policy_ids(env_config)
    from mobrl.training.executor import in_driver

    driver = in_driver(cfg)
    # Ray before the run dir is written: a cluster too small fails here
    with _driver_session() if driver else ray_session(cfg):
        run.write_config(cfg)
        manifest = build_manifest(cfg, env_config, policy_ids, ["mobrl", "train", *overrides])
        manifest["experiment_dir"] = str(experiment_dir)
        manifest["executor"] = "driver" if driver else "tune"
        manifest["ray_address"] = None if driver else ray_address()
        run.write_manifest(manifest)
        console.print(f"[bold]mobrl[/bold] run dir: {run.path}")
        _describe_tracker(cfg, run)
        with _full_disk_as_one_line(storage, run, experiment_dir):
            if driver:
                results = _fit_in_driver(cfg, algo_config.algo_class, space, experiment_dir, run)
            else:
                results = _fit(
                    cfg, algo_config.algo_class, space, locations, storage, experiment_name, run
                )
    return _finish(cfg, results, locations, run, experiment_dir, storage)


@contextmanager
def _driver_session() -> Iterator[None]:
    """What a run in mobrl's own process needs instead of Ray: mobrl's env registered."""
    from mobrl.envs import factory

    factory.register()
    yield


def _describe_tracker(cfg: DictConfig, run: RunDir) -> None:
    from mobrl.training.trackers import describe

    line = describe(cfg, run.path)
    if line:
        console.print(f"[bold]mobrl[/bold] {line}")


def _fit_in_driver(
    cfg: DictConfig,
    trainable: Any,
    space: dict[str, Any],
    experiment_dir: Path,
    run: RunDir,
    resume: bool = False,
    retry_errored: bool = False,
) -> list[Any]:
    from mobrl.training import driver, trackers
    from mobrl.training.diskspace import DiskGuard
    from mobrl.training.progress import INTERRUPTED, ProgressCallback

    INTERRUPTED.clear()
    callbacks = [
        ProgressCallback(cfg.tune.metric),
        DiskGuard(experiment_dir.parent, experiment_dir, cfg.run.checkpoint.min_free_mb),
        *trackers.callbacks(cfg, run.path, {}, in_driver=True),
    ]
    return driver.fit(cfg, trainable, space, experiment_dir, callbacks, resume, retry_errored)


def resume_training(run_dir: Path, retry_errored: bool = False) -> float | None:
    """Continue an interrupted `mobrl train` run: unfinished trials restart from their latest
    checkpoints, finished ones stay as they are, errored ones restart only if asked."""
    run = RunDir(run_dir)
    cfg, manifest = load_run(run)
    experiment_dir = run.experiment_dir(manifest)
    before = _iterations_done(experiment_dir)
    best = _resume(run, cfg, manifest, experiment_dir, retry_errored)
    if before and _iterations_done(experiment_dir) == before:
        print(
            f"nothing to resume: no trial of {run.path} trained further (each had "
            "finished, or failed: --retry-errored restarts failed trials); its results "
            "are as they were.",
            file=sys.stderr,
        )
    return best


def _iterations_done(experiment_dir: Path) -> dict[str, int]:
    """Each trial's iterations written so far."""
    return {
        trial.name: len(read_trial_results(trial))
        for trial in (experiment_dir.iterdir() if experiment_dir.is_dir() else [])
        if trial.is_dir()
    }


def _resume(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path, retry_errored: bool
) -> float | None:
    from mobrl.training.driver import STATE

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

    with ray_session(cfg), _full_disk_as_one_line(storage, run, experiment_dir):
        INTERRUPTED.clear()
        tuner = tune.Tuner.restore(
            str(experiment_dir),
            trainable=algo_config.algo_class,
            resume_unfinished=True,
            resume_errored=False,
            restart_errored=retry_errored,
            param_space=space,
        )
        results = tuner.fit()
    return _finish_resumed(cfg, results, locations, run, experiment_dir, storage)


def _resume_in_driver(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path, retry_errored: bool
) -> float | None:
    """`resume_training` of a run whose trial trained in mobrl's own process."""
    from mobrl.training.driver import STATE

    if not (experiment_dir / STATE).is_file():
        raise UserError(
            f"'{run.path}' has no trial state to resume ({experiment_dir / STATE} is "
            "missing): the run stopped before its trial started. Start it again."
        )
    storage, algo_config, space, locations = _prepare_resume(run, cfg, manifest, experiment_dir)
    with _driver_session(), _full_disk_as_one_line(storage, run, experiment_dir):
        results = _fit_in_driver(
            cfg, algo_config.algo_class, space, experiment_dir, run, True, retry_errored
        )
    return _finish_resumed(cfg, results, locations, run, experiment_dir, storage)


def _prepare_resume(
    run: RunDir, cfg: DictConfig, manifest: dict, experiment_dir: Path
) -> tuple[Path, Any, dict[str, Any], Any]:
    """What either way of resuming needs: free space checked, the config checked again, the
    algorithm config and search space rebuilt from the run's own config and env."""
    from mobrl.core import faults
    from mobrl.envs import factory
    from mobrl.training import tuning
    from mobrl.training.algos import build_algorithm_config
    from mobrl.training.diskspace import FULL, check_free

    storage = experiment_dir.parent
    check_free(storage, cfg.run.checkpoint.min_free_mb)
    FULL.reason = None
    configure_ray(cfg.ray.log_level)
    check_config(cfg)
    algo_config = build_algorithm_config(
        cfg,
        factory.ENV_NAME,
        manifest.get("env_config") or factory.env_config_from(cfg),
        faults.plan(cfg.run.fault.inject, run.path),
        imitate=False,  # the checkpoint holds the imitated policy already
    )
    space, locations = tuning.param_space(cfg, algo_config)
    console.print(f"[bold]mobrl[/bold] resuming run dir: {run.path}")
    _describe_tracker(cfg, run)
    return storage, algo_config, space, locations


def _finish_resumed(
    cfg: DictConfig,
    results: Any,
    locations: Any,
    run: RunDir,
    experiment_dir: Path,
    storage: Path,
) -> float | None:
    """`_finish` after each trial's progress.csv holds every iteration once again."""
    for trial_dir in experiment_dir.iterdir():
        if trial_dir.is_dir():
            repair_progress_csv(trial_dir)
    return _finish(cfg, results, locations, run, experiment_dir, storage)


def _check_resumable(run: RunDir, experiment_dir: Path) -> None:
    """Tune's saved state must read back whole: from a cut one (a full disk, a killed
    process) Tune would silently start the trials over from iteration 1."""
    import json

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


@contextmanager
def _full_disk_as_one_line(storage: Path, run: RunDir, experiment_dir: Path) -> Iterator[None]:
    """A run that failed or stopped for lack of room ends with mobrl's one line."""
    from mobrl.training.diskspace import FULL, MB, free_bytes, full_disk_error, is_full

    try:
        yield
    except Exception as err:
        if FULL.reason is None and not is_full(err) and free_bytes(storage) > MB:
            raise
        FULL.set(FULL.reason or "no space left on device")
        raise full_disk_error(storage, run.path, last_complete_checkpoint(experiment_dir)) from None


def _finish(
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
    from mobrl.training.ranking import report

    with _full_disk_as_one_line(storage, run, experiment_dir):
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
    _check_sampled(cfg, results)
    return summary["best_return"]


def _check_sampled(cfg: DictConfig, results: Any) -> None:
    """A run whose trials sampled no env step learned nothing: say so, do not exit 0."""
    from mobrl.core import metrics

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


def _fit(
    cfg: DictConfig,
    trainable: Any,
    space: dict[str, Any],
    locations: dict[str, tuple],
    storage: Path,
    name: str,
    run: RunDir,
) -> Any:
    from ray import tune

    from mobrl.training import trackers, tuning
    from mobrl.training.diskspace import DiskGuard
    from mobrl.training.progress import INTERRUPTED, ProgressCallback, trial_name

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
                ProgressCallback(cfg.tune.metric),
                DiskGuard(storage, storage / name, cfg.run.checkpoint.min_free_mb),
                *trackers.callbacks(cfg, run.path, locations, in_driver=False),
            ],
            verbose=0,
        ),
    )
    INTERRUPTED.clear()
    return tuner.fit()
