"""The `mobrl train` task: composed config -> RLlib config -> Tune experiment -> run dir + summary."""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from mobrl import metrics
from mobrl.checkpoints import (
    RESOLVED_CONFIG,
    RUN_SUMMARY,
    TUNE_DIR,
    build_manifest,
    write_manifest,
)
from mobrl.errors import USER_ERROR_EXIT, UserError
from mobrl.spec import check_config, check_writable

console = Console(highlight=False, soft_wrap=True)


def train_task(cfg: DictConfig) -> float | None:
    """Hydra task function: one experiment per call (Hydra calls it once per multirun job)."""
    try:
        return run_training(cfg)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(USER_ERROR_EXIT) from None


def _quiet_ray() -> None:
    # mobrl shows its own progress table; Tune's reporter and Ray's INFO logs would duplicate it
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
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


def run_training(cfg: DictConfig, run_dir: Path | None = None) -> float | None:
    """Train as configured; return the best mean episode return reached (None if no episode
    finished)."""
    from hydra.core.hydra_config import HydraConfig

    check_config(cfg)
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
    _quiet_ray()
    from mobrl.algos import build_algorithm_config
    from mobrl.envs import factory

    env_config = factory.env_config_from(cfg)
    algo_config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
    policy_ids = factory.policy_ids(env_config)

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RESOLVED_CONFIG).write_text(OmegaConf.to_yaml(cfg, resolve=True))
    manifest = build_manifest(cfg, env_config, policy_ids, ["mobrl", "train", *overrides])
    manifest["experiment_dir"] = str(experiment_dir)
    write_manifest(run_dir, manifest)
    console.print(f"[bold]mobrl[/bold] run dir: {run_dir}")

    import ray

    started_ray = _init_ray(cfg)
    try:
        factory.register()
        results = _fit(cfg, algo_config, storage, experiment_name)
    finally:
        if started_ray:
            ray.shutdown()
    return _summarize(cfg, results, run_dir, experiment_dir)


def _trial_cpus(cfg: DictConfig) -> int:
    res = cfg.run.resources
    learners = max(res.num_learners, 0)
    return 1 + learners + res.num_env_runners * res.num_cpus_per_env_runner


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
    if cfg.ray.address:
        console.print(f"joining the Ray cluster at {cfg.ray.address}")
        try:
            ray.init(address=cfg.ray.address, **kwargs)
        except ConnectionError as err:
            raise UserError(
                f"cannot reach a Ray cluster at ray.address={cfg.ray.address} ({err}). "
                "Start one with `ray start --head`, or drop ray.address to run locally."
            ) from err
        return True
    needed = _trial_cpus(cfg)
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


def _stop_criteria(cfg: DictConfig) -> dict[str, float]:
    stop = cfg.run.stop
    pairs = {
        metrics.ITERATION: stop.iterations,
        metrics.ENV_STEPS: stop.env_steps,
        metrics.RETURN_MEAN: stop.return_mean,
        metrics.TIME_TOTAL: stop.time_s,
    }
    return {key: value for key, value in pairs.items() if value is not None}


def _fit(cfg: DictConfig, algo_config: Any, storage: Path, name: str) -> Any:
    from ray import tune

    from mobrl.progress import ProgressCallback

    ckpt = cfg.run.checkpoint
    checkpoint_config = tune.CheckpointConfig(
        checkpoint_frequency=ckpt.frequency,
        checkpoint_at_end=ckpt.at_end,
        num_to_keep=ckpt.keep,
        checkpoint_score_attribute=cfg.tune.metric if ckpt.keep else None,
        checkpoint_score_order=cfg.tune.mode,
    )
    tuner = tune.Tuner(
        algo_config.algo_class,
        param_space=algo_config,
        tune_config=tune.TuneConfig(
            num_samples=cfg.tune.num_samples,
            trial_dirname_creator=_trial_dirname,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(storage),
            stop=_stop_criteria(cfg),
            checkpoint_config=checkpoint_config,
            callbacks=[ProgressCallback(cfg.tune.metric)],
            verbose=0,
        ),
    )
    return tuner.fit()


def _trial_dirname(trial: Any) -> str:
    return f"{trial.trainable_name}_{trial.trial_id}"


def _metric_history(result: Any, metric: str) -> list[float]:
    frame = result.metrics_dataframe
    if frame is None or metric not in frame:
        return []
    return [float(v) for v in frame[metric] if v is not None and not math.isnan(float(v))]


def _summarize(cfg: DictConfig, results: Any, run_dir: Path, experiment_dir: Path) -> float | None:
    metric, mode = cfg.tune.metric, cfg.tune.mode
    better = max if mode == "max" else min
    trials = []
    for result in results:
        history = _metric_history(result, metric)
        best_ckpt = None
        if history:
            try:
                best = result.get_best_checkpoint(metric, mode)
                best_ckpt = best.path if best else None
            except Exception:  # checkpoint metrics without the metric (e.g. NaN at first)
                best_ckpt = None
        last_ckpt = result.checkpoint.path if result.checkpoint else None
        trials.append(
            {
                "trial_dir": str(result.path),
                "best": better(history) if history else None,
                "last": history[-1] if history else None,
                "iterations": result.metrics.get(metrics.ITERATION) if result.metrics else None,
                "best_checkpoint": best_ckpt or last_ckpt,
                "last_checkpoint": last_ckpt,
                "error": str(result.error).splitlines()[0] if result.error else None,
            }
        )
    scored = [t for t in trials if t["best"] is not None]
    top = better(scored, key=lambda t: t["best"]) if scored else (trials[0] if trials else None)
    summary = {
        "metric": metric,
        "mode": mode,
        "best_return": top["best"] if top else None,
        "best_checkpoint": top["best_checkpoint"] if top else None,
        "last_checkpoint": top["last_checkpoint"] if top else None,
        "experiment_dir": str(experiment_dir),
        "trials": trials,
    }
    (run_dir / RUN_SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")

    failed = [t for t in trials if t["error"]]
    console.print()
    console.print(f"[bold]best {metric}:[/bold] {_show(summary['best_return'])}")
    console.print(f"[bold]best checkpoint:[/bold] {summary['best_checkpoint']}")
    console.print(f"[bold]last checkpoint:[/bold] {summary['last_checkpoint']}")
    if summary["best_checkpoint"]:
        console.print(f"evaluate: mobrl evaluate --checkpoint {summary['best_checkpoint']}")
    console.print(f"tensorboard: tensorboard --logdir {run_dir}")
    console.print(f"results: {run_dir / RUN_SUMMARY}")
    for trial in failed:
        print(
            f"trial failed: {trial['error']} (see {Path(trial['trial_dir']) / 'error.txt'})",
            file=sys.stderr,
        )
    if failed:
        raise SystemExit(1)
    return summary["best_return"]


def _show(value: float | None) -> str:
    return "no episode finished" if value is None else f"{value:.3f}"
