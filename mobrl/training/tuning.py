"""conf/tune -> Tune search space, searcher, scheduler, concurrency and stop criteria.

A search space is written in YAML over algorithm keys, grouped like the algo config:

    param_space:
      training:
        lr: {loguniform: [1e-5, 1e-3]}
        gamma: {choice: [0.95, 0.99]}
      model:
        fcnet_hiddens: {grid: [[64, 64], [256, 256]]}

`check_tune_config` validates it without importing Ray; `param_space` turns it into Tune's
objects inside the RLlib config dict that Tune hands each trial.
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.core import metrics
from mobrl.core.errors import UserError, closest_first, unknown_choice

#: search-space types and the arguments each takes
SPACE_TYPES = {
    "choice": "a non-empty list of values",
    "grid": "a non-empty list of values (every value is tried)",
    "uniform": "[low, high]",
    "loguniform": "[low, high] with 0 < low",
    "randint": "[low, high) integers",
    "quniform": "[low, high, q]",
}
#: which part of the algo config a search-space key belongs to
SPACE_SECTIONS = ("training", "model")
SEARCHERS = ("random", "optuna")
#: what scores a trial: its best value of the metric over all iterations, or its last value
SCOPES = ("all", "last")
SCHEDULERS = ("fifo", "asha", "pbt")

#: result keys (besides mobrl's per-UE metrics) that a Tune metric can name
KNOWN_METRICS = (
    metrics.RETURN_MEAN,
    metrics.EPISODE_LEN_MEAN,
    "env_runners/episode_return_max",
    "env_runners/episode_return_min",
    metrics.ENV_STEPS,
    metrics.ITERATION,
    metrics.TIME_TOTAL,
    metrics.EVAL_RETURN_MEAN,
    metrics.EVAL_SCORE,
    *(metrics.result_key(tag) for tag in metrics.NETWORK_TAGS),
)
#: result keys under these prefixes are open-ended (per agent, per module, per UE, learner stats)
METRIC_PREFIXES = (
    metrics.AGENT_RETURN_MEAN + "/",
    "env_runners/module_episode_returns_mean/",
    "env_runners/ue/",
    "env_runners/arena/",
    metrics.EVALUATION + "/",
    "learners/",
    "perf/",
    "timers/",
)


def space_entries(cfg: DictConfig) -> dict[str, tuple[str, list[Any]]]:
    """The search space as {"training.lr": ("loguniform", [1e-5, 1e-3]), ...}; raises
    `UserError` for unknown sections, unknown types and malformed arguments."""
    space = OmegaConf.to_container(cfg.tune.param_space, resolve=True) or {}
    entries: dict[str, tuple[str, list[Any]]] = {}
    for section, keys in space.items():  # type: ignore[union-attr]
        if section not in SPACE_SECTIONS:
            raise unknown_choice(
                "tune.param_space section",
                str(section),
                SPACE_SECTIONS,
                "Group keys as tune.param_space.training.<key> or tune.param_space.model.<key>.",
            )
        if not isinstance(keys, dict):
            raise UserError(
                f"tune.param_space.{section} must map algorithm keys to search spaces, "
                f"e.g. tune.param_space.{section}.lr={{loguniform: [1e-5, 1e-3]}}."
            )
        for key, spec in keys.items():
            where = f"tune.param_space.{section}.{key}"
            if not isinstance(spec, dict) or len(spec) != 1:
                raise UserError(
                    f"{where} must be one search space like {{grid: [1e-4, 1e-3]}}, got {spec!r}. "
                    f"Types: {', '.join(SPACE_TYPES)}."
                )
            ((kind, args),) = spec.items()
            if kind not in SPACE_TYPES:
                raise unknown_choice(
                    f"search-space type at {where}:", str(kind), SPACE_TYPES, "Fix the type."
                )
            _check_args(where, kind, args)
            entries[f"{section}.{key}"] = (kind, list(args))
    return entries


def _check_args(where: str, kind: str, args: Any) -> None:
    bad = UserError(f"{where}: {kind} takes {SPACE_TYPES[kind]}, got {args!r}. Fix the arguments.")
    if not isinstance(args, list) or not args:
        raise bad
    if kind in ("choice", "grid"):
        return
    size = 3 if kind == "quniform" else 2
    if len(args) != size or not all(isinstance(a, (int, float)) for a in args):
        raise bad
    low, high = args[0], args[1]
    if not low < high or (kind == "loguniform" and low <= 0) or (size == 3 and args[2] <= 0):
        raise bad
    if kind == "randint" and not all(isinstance(a, int) for a in args):
        raise bad


def check_tune_config(cfg: DictConfig) -> None:
    """Validate the `tune` group (no Ray import): space, searcher, scheduler, metric."""
    tune = cfg.tune
    entries = space_entries(cfg)
    if tune.searcher not in SEARCHERS:
        raise unknown_choice("tune.searcher", tune.searcher, SEARCHERS, "Fix tune.searcher.")
    if tune.scheduler not in SCHEDULERS:
        raise unknown_choice("tune.scheduler", tune.scheduler, SCHEDULERS, "Fix tune.scheduler.")
    if tune.scope not in SCOPES:
        raise unknown_choice("tune.scope", tune.scope, SCOPES, "Use tune.scope=all or last.")
    if tune.num_samples < 1:
        raise UserError(f"tune.num_samples must be at least 1, got {tune.num_samples}.")
    if tune.max_concurrent is not None and tune.max_concurrent < 1:
        raise UserError("tune.max_concurrent must be at least 1 (or null: as many as fit).")
    grids = [key for key, (kind, _) in entries.items() if kind == "grid"]
    if tune.searcher == "optuna" and grids:
        raise UserError(
            f"tune.searcher=optuna cannot take grid values ({grids[0]}). "
            "Write them as choice, or use tune.searcher=random."
        )
    if tune.scheduler == "pbt" and not entries:
        raise UserError(
            "tune.scheduler=pbt mutates hyperparameters but tune.param_space is empty. "
            "Add a search space, e.g. tune=pbt."
        )
    check_metric(tune.metric)


def check_metric(metric: str) -> None:
    """The metric must be a result key that training reports (a column of progress.csv)."""
    if metric in KNOWN_METRICS or metric.startswith(METRIC_PREFIXES):
        return
    close = closest_first(metric, KNOWN_METRICS)[:3]
    raise UserError(
        f"tune.metric '{metric}' is not reported by training. Did you mean '{close[0]}'? "
        f"Closest: {', '.join(close)}. Use a column of progress.csv."
    )


def _domain(kind: str, args: list[Any]) -> Any:
    from ray import tune

    if kind == "grid":
        return tune.grid_search(args)
    if kind == "choice":
        return tune.choice(args)
    return {
        "uniform": tune.uniform,
        "loguniform": tune.loguniform,
        "randint": tune.randint,
        "quniform": tune.quniform,
    }[kind](*args)


def _training_key(algo_config: Any, key: str, base: dict[str, Any]) -> str:
    """The key of `AlgorithmConfig.to_dict()` that `training(key=...)` sets (`lambda_` sets
    "lambda", for example): found by setting a probe value and seeing which entry changes."""
    probe = f"__mobrl_probe_{key}__"  # to_dict() copies values: compare by equality
    probed = algo_config.copy(copy_frozen=False)
    try:
        probed.training(**{key: probe})
    except TypeError as err:
        raise UserError(
            f"'tune.param_space.training.{key}' is not a setting of this algorithm ({err}). "
            "Remove or rename the key."
        ) from err
    changed = [k for k, v in probed.to_dict().items() if v == probe and base.get(k) != probe]
    if len(changed) != 1:
        raise UserError(
            f"'tune.param_space.training.{key}' cannot be searched: it is not a plain setting "
            "of this algorithm's config. Search another key."
        )
    return changed[0]


def param_space(cfg: DictConfig, algo_config: Any) -> tuple[dict[str, Any], dict[str, tuple]]:
    """Tune's param_space (the RLlib config dict with search spaces in it) and where each
    searched key sits in it: {"training.lr": ("lr",), "model.fcnet_hiddens": ("_model_config",
    "fcnet_hiddens")}."""
    import dataclasses

    from mobrl.training.algos import check_algo_keys

    entries = space_entries(cfg)
    base = algo_config.to_dict()
    if not entries:
        return base, {}
    space = dict(base)
    if dataclasses.is_dataclass(space.get("_model_config")):
        space["_model_config"] = dataclasses.asdict(space["_model_config"])
    locations: dict[str, tuple] = {}
    for name, (kind, args) in entries.items():
        section, key = name.split(".", 1)
        check_algo_keys(algo_config, section, [key], prefix="tune.param_space")
        if section == "training":
            location: tuple = (_training_key(algo_config, key, base),)
            space[location[0]] = _domain(kind, args)
        else:
            location = ("_model_config", key)
            space["_model_config"] = {**space.get("_model_config", {}), key: _domain(kind, args)}
        locations[name] = location
    return space, locations


def sampled(config: dict[str, Any], locations: dict[str, tuple]) -> dict[str, Any]:
    """The values a trial's config took for each searched key."""
    out = {}
    for name, path in locations.items():
        node: Any = config
        for part in path:
            node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
        out[name] = node
    return out


def stop_criteria(cfg: DictConfig) -> dict[str, float]:
    """Tune's stop criteria for `run.stop`."""
    return metrics.stop_criteria(cfg.run.stop)


def rank_by_evaluation(cfg: DictConfig) -> None:
    """With evaluation during training, rank trials and checkpoints by the evaluation's score
    (run.eval.metric of the deterministic policy) instead of the exploring training return
    (unless tune.metric names another metric)."""
    from mobrl.training.periodic_eval import evaluates

    if evaluates(cfg) and cfg.tune.metric == metrics.RETURN_MEAN:
        cfg.tune.metric = metrics.EVAL_SCORE


def searcher(cfg: DictConfig) -> Any:
    """Tune's search algorithm (None: Tune's random/grid variant generator)."""
    if cfg.tune.searcher == "random":
        return None
    try:
        import optuna
        from ray.tune.search.optuna import OptunaSearch
    except ImportError as err:
        raise UserError(
            "tune.searcher=optuna needs Optuna, which is not installed. "
            "Run `pip install optuna` or use tune.searcher=random."
        ) from err
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Tune limits its concurrency to max_concurrent_trials (see `concurrency`)
    return OptunaSearch(metric=cfg.tune.metric, mode=cfg.tune.mode, seed=cfg.run.seed)


def scheduler(cfg: DictConfig, space: dict[str, Any], locations: dict[str, tuple]) -> Any:
    """Tune's trial scheduler: FIFO, ASHA (early stopping) or PBT (mutating hyperparameters)."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining

    kind = cfg.tune.scheduler
    args = OmegaConf.to_container(cfg.tune.scheduler_args, resolve=True) or {}
    common = {"metric": cfg.tune.metric, "mode": cfg.tune.mode, "time_attr": metrics.ITERATION}
    try:
        if kind == "fifo":
            return FIFOScheduler()
        if kind == "asha":
            if cfg.run.stop.iterations is not None:
                args.setdefault("max_t", cfg.run.stop.iterations)  # type: ignore[union-attr]
            return ASHAScheduler(**common, **args)  # type: ignore[arg-type]
        mutations: dict[str, Any] = {}
        for path in locations.values():
            domain = space[path[0]] if len(path) == 1 else space[path[0]][path[1]]
            if isinstance(domain, dict) and "grid_search" in domain:
                domain = domain["grid_search"]  # PBT resamples from the grid's values
            node = mutations
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = domain
        return PopulationBasedTraining(**common, hyperparam_mutations=mutations, **args)  # type: ignore[arg-type]
    except TypeError as err:
        raise UserError(
            f"tune.scheduler_args do not fit tune.scheduler={kind}: {err}. "
            "Fix or remove tune.scheduler_args."
        ) from err


def concurrency(cfg: DictConfig, trial_cpus: int) -> int:
    """How many trials run at once: tune.max_concurrent, else as many as the CPUs of the Ray
    cluster fit (each trial takes `trial_cpus`)."""
    if cfg.tune.max_concurrent is not None:
        return int(cfg.tune.max_concurrent)
    import ray

    cpus = ray.cluster_resources().get("CPU", 1)
    return max(1, math.floor(cpus / max(trial_cpus, 1)))
