"""The `mobrl train` task: composed config -> RLlib config -> Tune experiment -> run dir + summary."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.checkpoints import (
    MANIFEST,
    RESOLVED_CONFIG,
    TUNE_DIR,
    build_manifest,
    write_manifest,
)
from mobrl.errors import USER_ERROR_EXIT, UserError, first_line
from mobrl.files import check_writable
from mobrl.raysession import (
    configure_ray,
    probe_ray_address,
    ray_address,
    ray_session,
    repair_progress_csv,
    trial_cpus,
)
from mobrl.spec import check_config
from mobrl.ui import make_console

console = make_console()
#: Tune's experiment state file inside the experiment dir (what `--resume` restores from)
TUNER_STATE = "tuner.pkl"
#: exit code of a run stopped with Ctrl-C (128 + SIGINT, as shells report it)
INTERRUPTED_EXIT = 130


def train_task(cfg: DictConfig) -> float | None:
    """Hydra task function: one experiment per call (Hydra calls it once per multirun job)."""
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


def run_training(cfg: DictConfig, run_dir: Path | None = None) -> float | None:
    """Train as configured; return the best value of the ranking metric reached (None if no
    trial reported it)."""
    from hydra.core.hydra_config import HydraConfig

    check_config(cfg)
    from mobrl.tuning import rank_by_evaluation

    rank_by_evaluation(cfg)
    overrides: list[str] = []
    if run_dir is None:
        hydra_cfg = HydraConfig.get()
        run_dir = Path(hydra_cfg.runtime.output_dir)
        overrides = list(hydra_cfg.overrides.task)
    run_dir = run_dir.absolute()
    storage = (
        Path(cfg.run.storage_path).expanduser().absolute() if cfg.run.storage_path else run_dir
    )
    check_writable(storage, "run.storage_path")
    experiment_name = TUNE_DIR if storage == run_dir else run_dir.name
    experiment_dir = storage / experiment_name
    configure_ray()
    from mobrl import faults, tuning
    from mobrl.algos import build_algorithm_config
    from mobrl.envs import factory

    env_config = factory.env_config_from(cfg)
    factory.check_env(env_config)
    probe_ray_address(cfg.ray.address)
    fault = faults.plan(cfg.run.fault.inject, run_dir)
    algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config, fault)
    space, locations = tuning.param_space(cfg, algo_config)
    policy_ids = factory.policy_ids(env_config)

    with ray_session(cfg):  # before the run dir is written: a cluster too small fails here
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / RESOLVED_CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
        manifest = build_manifest(cfg, env_config, policy_ids, ["mobrl", "train", *overrides])
        manifest["experiment_dir"] = str(experiment_dir)
        manifest["ray_address"] = ray_address()
        write_manifest(run_dir, manifest)
        if storage != run_dir:  # so checkpoints in run.storage_path describe themselves too
            experiment_dir.mkdir(parents=True, exist_ok=True)
            write_manifest(experiment_dir, manifest)
        console.print(f"[bold]mobrl[/bold] run dir: {run_dir}")
        results = _fit(cfg, algo_config.algo_class, space, locations, storage, experiment_name)
    return _finish(cfg, results, locations, run_dir, experiment_dir)


def resume_training(run_dir: Path, retry_errored: bool = False) -> float | None:
    """Continue an interrupted `mobrl train` run: unfinished trials restart from their latest
    checkpoints, finished ones stay as they are, errored ones restart only if asked."""
    from mobrl import faults, tuning
    from mobrl.algos import build_algorithm_config
    from mobrl.envs import factory

    run_dir = Path(run_dir).expanduser().absolute()
    cfg, manifest = load_run(run_dir)
    experiment_dir = Path(manifest.get("experiment_dir") or run_dir / TUNE_DIR)
    if not (experiment_dir / TUNER_STATE).is_file():
        raise UserError(
            f"'{run_dir}' has no Tune experiment state to resume ({experiment_dir / TUNER_STATE} "
            "is missing): the run stopped before its first trial started. Start it again."
        )
    configure_ray()
    check_config(cfg)
    probe_ray_address(cfg.ray.address)
    algo_config = build_algorithm_config(
        cfg,
        factory.ENV_NAME,
        manifest.get("env_config") or factory.env_config_from(cfg),
        faults.plan(cfg.run.fault.inject, run_dir),
    )
    # Tune saved the space with placeholders for objects it cannot store: hand it over again
    space, locations = tuning.param_space(cfg, algo_config)
    console.print(f"[bold]mobrl[/bold] resuming run dir: {run_dir}")

    from ray import tune

    from mobrl.progress import INTERRUPTED

    with ray_session(cfg):
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
    for trial_dir in experiment_dir.iterdir():
        if trial_dir.is_dir():
            repair_progress_csv(trial_dir)
    return _finish(cfg, results, locations, run_dir, experiment_dir)


def load_run(run_dir: Path) -> tuple[DictConfig, dict[str, Any]]:
    """The resolved config and manifest a `mobrl train` run dir holds (one-line errors)."""
    from mobrl.config.schema import MobrlConfig

    if not run_dir.is_dir():
        raise UserError(
            f"--resume '{run_dir}' is not a directory. Give the run dir printed at start."
        )
    config_file, manifest_file = run_dir / RESOLVED_CONFIG, run_dir / MANIFEST
    if not config_file.is_file() or not manifest_file.is_file():
        raise UserError(
            f"'{run_dir}' is not a mobrl run dir (no {RESOLVED_CONFIG} and {MANIFEST}). "
            "Give the run dir that `mobrl train` printed at its start."
        )
    try:
        loaded = OmegaConf.load(config_file)
        cfg = OmegaConf.merge(OmegaConf.structured(MobrlConfig), loaded)
        manifest = json.loads(manifest_file.read_text())
    except Exception as err:  # YAML, schema or JSON errors of an edited or damaged file
        raise UserError(
            f"cannot read the run's config or manifest in '{run_dir}': "
            f"{first_line(err)}. Restore the files or start a new run."
        ) from err
    return cfg, manifest  # type: ignore[return-value]


def _finish(
    cfg: DictConfig, results: Any, locations: dict, run_dir: Path, experiment_dir: Path
) -> float | None:
    """Report the experiment; an interrupted one tells how to continue it (exit 130)."""
    from mobrl.progress import INTERRUPTED
    from mobrl.ranking import report

    summary = report(cfg, results, locations, run_dir, experiment_dir, console)
    if INTERRUPTED.is_set():
        console.print(
            f"[bold]interrupted[/bold]: the experiment state is saved. Continue with:\n"
            f"  mobrl train --resume {run_dir}"
        )
        raise SystemExit(INTERRUPTED_EXIT)
    if summary["failed"]:
        raise SystemExit(1)
    return summary["best_return"]


def _fit(
    cfg: DictConfig,
    trainable: Any,
    space: dict[str, Any],
    locations: dict[str, tuple],
    storage: Path,
    name: str,
) -> Any:
    from ray import tune

    from mobrl import tuning
    from mobrl.progress import INTERRUPTED, ProgressCallback, trial_name

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
            callbacks=[ProgressCallback(cfg.tune.metric)],
            verbose=0,
        ),
    )
    INTERRUPTED.clear()
    return tuner.fit()
