"""Checks of a composed config that Hydra's types cannot express (never imports Ray or torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.algos import ALGORITHMS
from mobrl.envs.factory import MOBILE_ENGINES, MOBILE_MODES, SAMPLERS
from mobrl.errors import UserError, first_line, unknown_choice
from mobrl.files import check_writable

SCENARIO_KINDS = ("mobile", "gym", "arena")
TUNE_MODES = ("max", "min")


def action_space_kind(cfg: DictConfig) -> str:
    """`discrete`, `multidiscrete`, `box` or `other`: what the agents' actions look like."""
    if cfg.scenario.kind == "mobile":
        return "discrete" if cfg.env.mode == "ma" else "multidiscrete"
    if cfg.scenario.kind == "arena":
        return "discrete"
    import gymnasium as gym

    env = _make_gym(cfg)
    space = env.action_space
    env.close()
    if isinstance(space, gym.spaces.Discrete):
        return "discrete"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return "multidiscrete"
    if isinstance(space, gym.spaces.Box):
        return "box"
    return "other"


def _make_gym(cfg: DictConfig) -> Any:
    import gymnasium as gym

    if OmegaConf.is_missing(cfg.scenario, "id"):
        raise UserError(
            f"scenario={cfg.scenario.name} needs a Gymnasium id. "
            "Add scenario.id=<id>, e.g. scenario.id=MountainCar-v0."
        )
    env_id = cfg.scenario.id
    if env_id not in gym.registry:
        raise unknown_choice(
            "Gymnasium id",
            env_id,
            [k for k in gym.registry if "/" not in k or k.startswith("mobrl/")],
            "Set scenario.id to a registered Gymnasium id.",
        )
    kwargs = OmegaConf.to_container(cfg.scenario.kwargs, resolve=True)
    try:
        return gym.make(env_id, **kwargs)  # type: ignore[arg-type]
    except TypeError as err:
        raise UserError(
            f"scenario.kwargs do not fit {env_id}: {err}. Fix or remove scenario.kwargs."
        ) from err
    except Exception as err:  # a registered env that cannot be built here (missing extra, ...)
        raise UserError(
            f"Gymnasium id '{env_id}' cannot be created here: {first_line(err)}. "
            "Install what it needs or pick another scenario."
        ) from err


def check_config(cfg: DictConfig) -> None:
    """Raise `UserError` (one line, with the fix) when the composed config cannot run."""
    kind = cfg.scenario.kind
    if kind not in SCENARIO_KINDS:
        raise unknown_choice("scenario.kind", kind, SCENARIO_KINDS, "Fix scenario.kind.")
    if cfg.env.sampler not in SAMPLERS:
        raise unknown_choice("env.sampler", cfg.env.sampler, SAMPLERS, "Use env.sampler=auto.")
    if kind == "mobile":
        if not cfg.scenario.path:
            raise UserError(
                f"scenario={cfg.scenario.name} has no layout file. Set scenario.path=<file.yaml>."
            )
        from mobrl import scenarios

        scenarios.load(cfg.scenario.path)  # one-line errors naming the file, key and fix
        if cfg.env.mode not in MOBILE_MODES:
            raise unknown_choice(
                "env mode", cfg.env.mode, MOBILE_MODES, "Use env=ma or env=central."
            )
        if cfg.engine not in MOBILE_ENGINES:
            raise unknown_choice("engine", cfg.engine, MOBILE_ENGINES, "Use engine=fast or stock.")
        from mobrl.envs.factory import env_config_from

        env_config_from(cfg)  # policy mapping and sampler: one-line errors before Hydra starts
    algo = cfg.algo.name
    if algo not in ALGORITHMS:
        raise unknown_choice("algorithm", algo, ALGORITHMS, "Use algo=<name>.")
    info = ALGORITHMS[algo]
    space = action_space_kind(cfg)
    if space not in info.action_spaces:
        able = [name for name, a in ALGORITHMS.items() if space in a.action_spaces]
        where = f"scenario={cfg.scenario.name}" + (
            f" env={cfg.env.mode}" if kind == "mobile" else ""
        )
        alt = " or env=ma" if kind == "mobile" and cfg.env.mode == "central" else ""
        raise UserError(
            f"algo={algo} cannot handle the {space} action space of {where}. "
            f"Use algo={' / algo='.join(able) or '?'}{alt}."
        )
    runners = cfg.run.resources.num_env_runners
    if runners < info.min_env_runners:
        raise UserError(
            f"algo={algo} needs at least {info.min_env_runners} env runner(s), got "
            f"run.resources.num_env_runners={runners}. "
            f"Set run.resources.num_env_runners={info.min_env_runners}."
        )
    if runners < 0:
        raise UserError("run.resources.num_env_runners must be >= 0.")
    if cfg.tune.mode not in TUNE_MODES:
        raise unknown_choice("tune.mode", cfg.tune.mode, TUNE_MODES, "Use tune.mode=max or min.")
    from mobrl.tuning import check_tune_config

    check_tune_config(cfg)
    stop = cfg.run.stop
    if all(stop[k] is None for k in stop):
        raise UserError(
            "run.stop has no criterion, so training would never end. "
            "Set one, e.g. run.stop.iterations=100."
        )
    check_numbers(cfg)
    from mobrl.training_eval import check_eval_config

    check_eval_config(cfg)
    if cfg.run.checkpoint.frequency < 0:
        raise UserError("run.checkpoint.frequency must be >= 0 (0: only at the end).")
    if cfg.run.storage_path is not None:
        check_writable(Path(cfg.run.storage_path), "run.storage_path")


#: settings that must be positive when set (null: the algorithm's default or no criterion)
_POSITIVE = (
    "run.stop.iterations",
    "run.stop.env_steps",
    "run.stop.time_s",
    "run.batch.train_batch_size",
    "run.batch.minibatch_size",
    "run.batch.num_epochs",
    "run.batch.rollout_fragment_length",
    "run.fault.inject.at",
    "run.fault.inject.times",
    "algo.training.lr",
    "algo.training.clip_param",
    "algo.training.vf_clip_param",
    "algo.training.grad_clip",
    "algo.training.num_epochs",
)
#: algorithm settings that are shares or discounts: (low, high, low included)
_RANGES = {
    "algo.training.gamma": (0.0, 1.0, False),
    "algo.training.lambda_": (0.0, 1.0, True),
    "algo.training.tau": (0.0, 1.0, True),
}
_NON_NEGATIVE = (
    "run.seed",
    "run.fault.max_env_runner_restarts",
    "run.fault.restart_delay_s",
    "algo.training.entropy_coeff",
    "algo.training.vf_loss_coeff",
    "algo.training.kl_coeff",
)


def check_numbers(cfg: DictConfig) -> None:
    """Counts, budgets and rates that cannot work (zero or negative batch sizes, a negative
    learning rate, a discount above 1, ...) as one-line errors before anything starts."""
    for key in (*_POSITIVE, *_NON_NEGATIVE, *_RANGES):
        value = OmegaConf.select(cfg, key, default=None)
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # unset, or a schedule / search space checked elsewhere
        if key in _POSITIVE and not value > 0:
            raise UserError(f"{key}={value} must be positive. Use a value above 0 or remove it.")
        if key in _NON_NEGATIVE and value < 0:
            raise UserError(f"{key}={value} must not be negative. Use 0 or more.")
        if key in _RANGES:
            low, high, closed = _RANGES[key]
            if not ((value >= low if closed else value > low) and value <= high):
                interval = f"{'[' if closed else '('}{low:g}, {high:g}]"
                raise UserError(f"{key}={value} must lie in {interval}. Use e.g. {key}=0.99.")
    batch = cfg.run.batch
    if (
        batch.minibatch_size
        and batch.train_batch_size
        and (batch.minibatch_size > batch.train_batch_size)
    ):
        raise UserError(
            f"run.batch.minibatch_size={batch.minibatch_size} is larger than "
            f"run.batch.train_batch_size={batch.train_batch_size}. Use a minibatch at most "
            "the batch size."
        )
    if cfg.run.fault.max_failures < -1:
        raise UserError(
            f"run.fault.max_failures={cfg.run.fault.max_failures} must be -1 (retry forever), "
            "0 (never) or a number of retries."
        )
    from mobrl.faults import check_inject

    check_inject(cfg.run.fault.inject)
    if cfg.scenario.kind == "mobile":
        from mobrl.envs.factory import check_topk

        check_topk(cfg.env.get("topk"))
