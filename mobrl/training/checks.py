"""Every check of a composed config that Hydra's types cannot express (never imports Ray or
torch), in two stages:

1. `check_settings`: the config and the files it names (layouts), nothing built; the checks of
   other modules' own settings are called from here (`tuning.check_tune_config`,
   `training_eval.check_eval_config`, `faults.check_inject`, the scenario kind's `check`).
2. `preflight`: what needs the scenario's env built (a Gymnasium task's action space against
   the algorithm).

`check_config` runs both; `validate_command_line` (below) runs it for every value of a sweep
before Hydra starts, and remembers each config it passed (a digest, also in `MOBRL_CHECKED` for
a sweep's job processes): `check_once`, which the training task calls, checks only a config not
checked before in the command. For a command that runs nothing (`mobrl train --cfg`) it runs
stage 1 alone with `build=False`: a kind that builds or reaches its env to learn its fields
(`probes`: a user's env, a simulator) is then checked by its own `check`. Training then runs
RLlib's own env checker once (`factory.check_env`), which needs Ray.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.config import (
    GROUPS,
    MobrlConfig,
    choices,
    compose,
    group_options,
    parse_overrides,
)
from mobrl.core.errors import UserError, unknown_choice
from mobrl.core.files import check_writable
from mobrl.envs.factory import SAMPLERS, env_config_from
from mobrl.scenarios.kinds import kind_of
from mobrl.training.algos import ALGORITHMS, env_runners

TUNE_MODES = ("max", "min")


#: digests of the configs `check_config` passed in this command, inherited by the processes a
#: parallel sweep's launcher starts
CHECKED_ENV = "MOBRL_CHECKED"


def check_config(cfg: DictConfig) -> None:
    """Raise `UserError` (one line, with the fix) when the composed config cannot run; remember
    the config (as composed, and as completed by the checks) as checked."""
    composed = _digest(cfg)
    check_settings(cfg)
    preflight(cfg)
    known = os.environ.get(CHECKED_ENV, "").split()
    os.environ[CHECKED_ENV] = " ".join(dict.fromkeys([*known, composed, _digest(cfg)]))


def check_once(cfg: DictConfig) -> None:
    """`check_config`, unless this config passed it earlier in the command (the CLI's or the
    API's check of the command line): then only the values the checks fill in are filled."""
    if _digest(cfg) in os.environ.get(CHECKED_ENV, "").split():
        complete(cfg)
    else:
        check_config(cfg)


def complete(cfg: DictConfig) -> None:
    """Fill in what the config leaves to mobrl, as the run records it: `num_env_runners` null
    is the fewest the algorithm allows."""
    cfg.run.resources.num_env_runners = env_runners(cfg)


def _digest(cfg: DictConfig) -> str:
    text = OmegaConf.to_yaml(cfg, resolve=False, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def preflight(cfg: DictConfig) -> None:
    """The checks that build the scenario's env: its action space against the algorithm."""
    kind = kind_of(cfg)
    algo = cfg.algo.name
    space = kind.action_space(cfg)
    if space not in ALGORITHMS[algo].action_spaces:
        able = [name for name, a in ALGORITHMS.items() if space in a.action_spaces]
        raise UserError(
            f"algo={algo} cannot handle the {space} action space of {kind.where(cfg)}. "
            f"Use algo={' / algo='.join(able) or '?'}{kind.other_mode(cfg)}."
        )
    intermittent, instead = kind.intermittent_agents(cfg)
    if ALGORITHMS[algo].replay and intermittent:
        # measured on uma19_energy: DQN's first iteration of 200 env steps took 37-275 s, most
        # of it in the buffer's sampling, and the second did not end within 6-10 minutes
        able = [name for name, a in ALGORITHMS.items() if not a.replay]
        raise UserError(
            f"algo={algo} cannot train {intermittent}: RLlib's multi-agent replay buffer stalls "
            "where agents act only every few env steps. "
            f"Use algo={' / algo='.join(able)}{f', or {instead}' if instead else ''}."
        )


def check_settings(cfg: DictConfig, build: bool = True) -> None:
    """The checks of the config and the files it names, without building anything: the
    scenario, the algorithm, Ray and Tune, then the run's own settings, in this order (the
    first problem found is the one reported). `build=False`: not even a kind's probe of its
    env (`_env_config`), so nothing is built or reached."""
    _check_scenario(cfg, build)
    _check_algorithm(cfg)
    _check_ray_and_tune(cfg)
    _check_run(cfg, build)


def _env_config(cfg: DictConfig, build: bool) -> dict[str, Any] | None:
    """`env_config_from(cfg)`, or None with `build=False` for a kind that builds or connects to
    its env to learn its fields (`probes`: a user's env, a simulator that may not run yet)."""
    if not build and kind_of(cfg).probes:
        return None
    return env_config_from(cfg)


def _check_scenario(cfg: DictConfig, build: bool = True) -> None:
    """The scenario kind, the sampler, and the env as training will build it."""
    kind = kind_of(cfg)  # an unknown kind is a one-line error
    if cfg.env.sampler not in SAMPLERS:
        raise unknown_choice("env.sampler", cfg.env.sampler, SAMPLERS, "Use env.sampler=auto.")
    kind.check(cfg)
    # the layout (one-line errors naming the file, key and fix), the kind's env settings, the
    # policy mapping and the sampler, as training will read them
    _env_config(cfg, build)


def _check_algorithm(cfg: DictConfig) -> None:
    """A known algorithm, and as many env runners as it needs (null filled in first)."""
    algo = cfg.algo.name
    if algo not in ALGORITHMS:
        raise unknown_choice("algorithm", algo, ALGORITHMS, "Use algo=<name>.")
    _check_preset_algorithm(cfg)
    info = ALGORITHMS[algo]
    if info.team_critic:
        from mobrl.training.mappo import critic_settings

        critic_settings(cfg)
    elif cfg.algo.get("critic"):
        teams = [name for name, a in ALGORITHMS.items() if a.team_critic]
        raise UserError(
            f"algo.critic sets a team critic, which algo={algo} does not have. Remove it, or "
            f"use algo={' / algo='.join(teams)}."
        )
    complete(cfg)
    runners = cfg.run.resources.num_env_runners
    if runners < info.min_env_runners:
        raise UserError(
            f"algo={algo} needs at least {info.min_env_runners} env runner(s), got "
            f"run.resources.num_env_runners={runners}. "
            f"Set run.resources.num_env_runners={info.min_env_runners}."
        )
    if runners < 0:
        raise UserError("run.resources.num_env_runners must be >= 0.")


def _check_preset_algorithm(cfg: DictConfig) -> None:
    """A preset is tuned for one algorithm (`conf/preset/<algo>/...`): another algorithm
    under it would read hyperparameters it lacks or that mean something else. An algorithm
    built on another (`AlgoInfo.tuned_as`: MAPPO on PPO) reads that one's presets too."""
    name = cfg.get("preset", {}).get("name")
    algo = cfg.algo.name
    tuned = str(name).split("/")[0] if name else algo
    if tuned in (algo, ALGORITHMS[algo].tuned_as):
        return
    from mobrl.config import group_options

    mine = [
        p for p in group_options("preset") if p.split("/")[0] in (algo, ALGORITHMS[algo].tuned_as)
    ]
    more = ", ..." if len(mine) > 4 else ""
    use = f"one of algo={algo}'s ({', '.join(mine[:4])}{more})" if mine else "~preset"
    raise UserError(
        f"preset={name} is tuned for algo={tuned}, not algo={algo}. Use {use}, or drop algo={algo}."
    )


def _check_ray_and_tune(cfg: DictConfig) -> None:
    """Ray's log level, Tune's mode and settings, and where the trials run (`run.executor`)."""
    from mobrl.training.raysession import LOG_LEVELS

    if cfg.ray.log_level not in LOG_LEVELS:
        raise unknown_choice(
            "ray.log_level", str(cfg.ray.log_level), LOG_LEVELS, "Use ray.log_level=warning."
        )
    if cfg.tune.mode not in TUNE_MODES:
        raise unknown_choice("tune.mode", cfg.tune.mode, TUNE_MODES, "Use tune.mode=max or min.")
    from mobrl.training.tuning import check_tune_config

    check_tune_config(cfg)
    from mobrl.training.executor import in_driver

    in_driver(cfg)  # run.executor: a known value, and driver only where one trial can


def _check_run(cfg: DictConfig, build: bool = True) -> None:
    """The run's settings: stop criteria, numbers, evaluation, checkpoints, storage, logger
    and imitation."""
    stop = cfg.run.stop
    if all(stop[k] is None for k in stop):
        raise UserError(
            "run.stop has no criterion, so training would never end. "
            "Set one, e.g. run.stop.iterations=100."
        )
    check_numbers(cfg, build)
    from mobrl.training.periodic_eval import check_eval_config

    check_eval_config(cfg)
    if cfg.run.checkpoint.frequency < 0:
        raise UserError("run.checkpoint.frequency must be >= 0 (0: only at the end).")
    if cfg.run.checkpoint.min_free_mb < 0:
        raise UserError(
            f"run.checkpoint.min_free_mb must be >= 0, got {cfg.run.checkpoint.min_free_mb}."
        )
    if cfg.run.storage_path is not None:
        check_writable(Path(cfg.run.storage_path), "run.storage_path")
    from mobrl.training.trackers import check_logger

    check_logger(cfg)  # logger=mlflow|wandb: its package is installed
    from mobrl.training.imitation import check_imitate

    # run.imitate: where it applies, with an algorithm whose policy head it can fit
    check_imitate(cfg, [name for name, info in ALGORITHMS.items() if info.policy_head])


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
    "algo.training.actor_lr",
    "algo.training.critic_lr",
    "algo.training.alpha_lr",
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
    "run.iteration_s",
    "algo.training.entropy_coeff",
    "algo.training.vf_loss_coeff",
    "algo.training.kl_coeff",
)


def _check_minibatch(cfg: DictConfig, build: bool = True) -> None:
    """A minibatch no larger than the batch: in env steps, or in rows (UE decisions) where
    the batch counts them (UE slots, `algos.rows_per_batch_step`)."""
    batch = cfg.run.batch
    if not (batch.minibatch_size and batch.train_batch_size):
        return
    if batch.minibatch_size <= batch.train_batch_size:
        return
    env_config = _env_config(cfg, build)
    if env_config is None:
        return  # the rows per step need the env; the run's own check tells
    from mobrl.training.algos import rows_per_batch_step

    rows = rows_per_batch_step(cfg, env_config)
    limit = batch.train_batch_size * rows
    if batch.minibatch_size > limit:
        rows_note = f" ({limit} rows: {rows} UEs x {batch.train_batch_size} env steps)"
        raise UserError(
            f"run.batch.minibatch_size={batch.minibatch_size} is larger than "
            f"run.batch.train_batch_size={batch.train_batch_size}{rows_note if rows > 1 else ''}."
            f" Use a minibatch of at most {limit}."
        )


def check_numbers(cfg: DictConfig, build: bool = True) -> None:
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
    _check_minibatch(cfg, build)
    if cfg.run.fault.max_failures < -1:
        raise UserError(
            f"run.fault.max_failures={cfg.run.fault.max_failures} must be -1 (retry forever), "
            "0 (never) or a number of retries."
        )
    _check_restarts(cfg)
    from mobrl.core.faults import check_inject

    check_inject(cfg.run.fault.inject)


def _check_restarts(cfg: DictConfig) -> None:
    """Env-runner restarts need env runners to restart."""
    from mobrl.training.algos import env_runners

    fault = cfg.run.fault
    if fault.restart_env_runners is True and env_runners(cfg) == 0:
        raise UserError(
            "run.fault.restart_env_runners=true restarts failed env runners, but the run "
            "samples in its own process (run.resources.num_env_runners=0). Use "
            "run.resources.num_env_runners=1 or more, or leave the restarts off."
        )


#: composing the Cartesian product of group sweeps is cheap, but not unbounded
_MAX_VALIDATED_COMBINATIONS = 64


def validate_command_line(overrides: Sequence[str], build: bool = True) -> DictConfig:
    """Check every override (every value of a sweep) without running anything.

    Returns the config composed from the first value of each sweep. Raises `UserError` with a
    one-line message on unknown groups, options or keys, bad values and unsupported algorithm
    and scenario combinations. `build=False` (a command that runs nothing, `--cfg`): only
    `check_settings` without building or reaching any env, and nothing remembered as checked.
    """
    parsed = parse_overrides(overrides)
    for ov in parsed:
        if ov.key_or_group.startswith("hydra"):
            continue
        if ov.key_or_group in GROUPS and not ov.is_delete():
            for value in choices(ov):
                if str(value) not in group_options(ov.key_or_group):
                    raise unknown_choice(
                        ov.key_or_group,
                        str(value),
                        group_options(ov.key_or_group),
                        f"Use {ov.key_or_group}=<option>.",
                    )
        elif "." not in ov.key_or_group and not ov.is_add() and ov.key_or_group != "ray":
            if ov.key_or_group not in MobrlConfig.__dataclass_fields__:
                raise unknown_choice(
                    "config group",
                    ov.key_or_group,
                    GROUPS,
                    "Use group=option or key.path=value.",
                )

    plain = [ov.input_line for ov in parsed if not ov.is_sweep_override()]
    sweeps = [ov for ov in parsed if ov.is_sweep_override()]
    group_sweeps = [ov for ov in sweeps if ov.key_or_group in GROUPS]
    key_sweeps = [ov for ov in sweeps if ov.key_or_group not in GROUPS]

    def line(ov: Any, value: Any) -> str:
        prefix = "++" if ov.is_force_add() else ("+" if ov.is_add() else "")
        return f"{prefix}{ov.key_or_group}={_format_value(value)}"

    first_keys = [line(ov, choices(ov)[0]) for ov in key_sweeps]
    combos = list(
        itertools.islice(
            itertools.product(*[[line(ov, v) for v in choices(ov)] for ov in group_sweeps]),
            _MAX_VALIDATED_COMBINATIONS,
        )
    )
    first_cfg = None
    for combo in combos:
        cfg = _compose_checked(plain + list(combo) + first_keys, build)
        first_cfg = first_cfg if first_cfg is not None else cfg
    base_groups = [line(ov, choices(ov)[0]) for ov in group_sweeps]
    for i, ov in enumerate(key_sweeps):
        for value in choices(ov)[1:]:
            others = first_keys[:i] + first_keys[i + 1 :]
            _compose_checked(plain + base_groups + others + [line(ov, value)], build)
    assert first_cfg is not None
    return first_cfg


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    return str(value).replace("'", "") if isinstance(value, (list, dict)) else repr(value)


def _compose_checked(overrides: list[str], build: bool) -> DictConfig:
    cfg = compose(overrides)
    if build:
        check_config(cfg)
    else:
        check_settings(cfg, build=False)
    return cfg
