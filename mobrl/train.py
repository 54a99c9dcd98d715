"""The `mobrl train` task: composed config -> RLlib config -> Tune experiment -> run dir + summary."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
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


def configure_ray() -> None:
    """Environment and loggers for Ray and Tune, before they start."""
    # Tune saves its experiment state every 10+ s by default; every second instead, so that
    # `--resume` after a crash or kill -9 re-runs nothing that had finished (the file is small)
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")
    # mobrl shows its own progress table; Tune's reporter and Ray's INFO logs would duplicate it
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    # Tune logs each trial failure with a traceback; mobrl prints one line per retry and the
    # error of a trial that failed for good in its summary (the traceback is in error.txt)
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    for name in ("ray", "ray.tune", "ray.rllib", "ray.train"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # known, harmless notices on every start (local single-user Ray; the new API stack is the
    # one mobrl uses on purpose)
    for name in (
        "ray._private.authentication.authentication_token_setup",
        "ray.rllib.algorithms.algorithm_config",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    # advice for Trainables that implement reset_config; RLlib's algorithms do not
    warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
    # on Ctrl-C Tune suggests its Python API to resume; mobrl prints its own command
    tune_logger = logging.getLogger("ray.tune.tune")
    if _drop_restore_hint not in tune_logger.filters:
        tune_logger.addFilter(_drop_restore_hint)


def _drop_restore_hint(record: logging.LogRecord) -> bool:
    """Tune's resume hint and its list of failed trials (mobrl prints its own of both)."""
    message = record.getMessage()
    return "Tuner.restore" not in message and "Trials did not complete" not in message


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

    with _ray_session(cfg):  # before the run dir is written: a cluster too small fails here
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / RESOLVED_CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
        manifest = build_manifest(cfg, env_config, policy_ids, ["mobrl", "train", *overrides])
        manifest["experiment_dir"] = str(experiment_dir)
        manifest["ray_address"] = _ray_address()
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

    with _ray_session(cfg):
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


def repair_progress_csv(trial_dir: Path) -> None:
    """Rewrite a trial's progress.csv from its result.json when it no longer parses: after a
    restore, Tune appends rows with more columns than the header names."""
    import pandas as pd

    csv, results = trial_dir / "progress.csv", trial_dir / "result.json"
    if not csv.is_file() or not results.is_file():
        return
    try:
        pd.read_csv(csv)
        return
    except (pd.errors.ParserError, ValueError):
        pass
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    tmp = csv.with_name(".progress.csv.tmp")
    pd.json_normalize(rows, sep="/").to_csv(tmp, index=False)
    os.replace(tmp, csv)


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


@contextmanager
def _ray_session(cfg: DictConfig) -> Iterator[None]:
    """Ray for one experiment: started locally (and stopped after) or joined, with mobrl's
    env creator registered for its workers."""
    import ray

    from mobrl.envs import factory

    started_ray = _init_ray(cfg)
    try:
        factory.register()
        yield
    finally:
        if started_ray:
            ray.shutdown()


def _ray_address() -> str | None:
    """The GCS address of the Ray the run uses (a local one, a shared or a joined cluster)."""
    import ray

    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # not connected
        return None


def _trial_cpus(cfg: DictConfig) -> int:
    res = cfg.run.resources
    learners = max(res.num_learners, 0)
    return 1 + learners + res.num_env_runners * res.num_cpus_per_env_runner


#: seconds to wait for a Ray cluster's GCS port to answer before giving up
PROBE_TIMEOUT_S = 5.0


def probe_ray_address(address: str | None, timeout: float = PROBE_TIMEOUT_S) -> None:
    """A one-line error within seconds when `ray.address` names a host:port nobody answers
    on (Ray itself would retry for minutes); `auto` and unset are left to Ray."""
    import socket

    if not address or address == "auto":
        return
    target = address.split("://", 1)[-1].rstrip("/")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(
            f"ray.address={address} is not host:port. Use e.g. ray.address=10.0.0.5:6379, "
            "ray.address=ray://10.0.0.5:10001 or ray.address=auto."
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except OSError as err:
        raise UserError(
            f"cannot reach a Ray cluster at ray.address={address} (no answer on {host}:{port} "
            f"within {timeout:g} s: {err.strerror or err}). Start one with `ray start --head`, "
            "or drop ray.address to run locally."
        ) from None


def _use_local_token() -> None:
    """Join with Ray's token authentication when this machine holds a token: `ray start
    --head` turns it on by default, but Ray's client does not (a token is also accepted by a
    cluster without authentication). An explicit RAY_AUTH_MODE is left as it is."""
    if os.environ.get("RAY_AUTH_MODE"):
        return
    token_file = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray/auth_token")
    if os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file():
        os.environ["RAY_AUTH_MODE"] = "token"
        from ray._raylet import Config

        Config.initialize("")  # Ray read its settings from the environment at import


def _auth_refused(err: BaseException) -> bool:
    cause: BaseException | None = err
    while cause is not None:
        if type(cause).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(cause):
            return True
        cause = cause.__cause__
    return False


def _init_ray(cfg: DictConfig) -> bool:
    """Start a local Ray sized to the run, or join `ray.address`; True if mobrl started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {
        "log_to_driver": cfg.ray.log_to_driver,
        "logging_level": logging.WARNING,
        "include_dashboard": False,
    }
    needed = _trial_cpus(cfg)
    from mobrl.launchers import shared_ray_address

    address = cfg.ray.address or shared_ray_address()
    if address:
        if cfg.ray.address:
            console.print(f"joining the Ray cluster at {address}")
        _use_local_token()
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as err:
            if _auth_refused(err):
                raise UserError(
                    f"the Ray cluster at ray.address={address} refused this machine's "
                    "token: it uses token authentication. Copy its token (`ray get-auth-token` "
                    "on the head node) to ~/.ray/auth_token or set RAY_AUTH_TOKEN."
                ) from None
            raise UserError(
                f"cannot reach a Ray cluster at ray.address={address} ({err}). "
                "Start one with `ray start --head`, or drop ray.address to run locally."
            ) from err
        available = ray.cluster_resources().get("CPU", 0)
        if available < needed:  # Tune would keep the trial pending for ever
            ray.shutdown()
            raise UserError(
                f"the Ray cluster at ray.address={address} has {available:g} CPUs but "
                f"one trial needs {needed} (1 + run.resources.num_env_runners x "
                "num_cpus_per_env_runner). Add nodes, or lower run.resources.num_env_runners."
            )
        return True
    num_cpus = cfg.ray.num_cpus or max(os.cpu_count() or 1, needed)
    if num_cpus < needed:
        raise UserError(
            f"one trial needs {needed} CPUs (1 + run.resources.num_env_runners x "
            f"num_cpus_per_env_runner) but ray.num_cpus={num_cpus}. Raise ray.num_cpus or "
            "lower run.resources.num_env_runners."
        )
    ray.init(
        num_cpus=num_cpus,
        object_store_memory=cfg.ray.object_store_memory,
        **kwargs,
    )
    return True


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
    concurrency = tuning.concurrency(cfg, _trial_cpus(cfg))
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
