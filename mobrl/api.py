"""mobrl from Python (a notebook, a script, another library), with the CLI's semantics: the
same config groups and overrides, the same checks and one-line `mobrl.UserError`s."""

from __future__ import annotations

from typing import Any

from mobrl.errors import UserError


def parallel_env(
    scenario: str = "small",
    *overrides: str,
    obs: str | None = None,
    reward: str | None = None,
    team_reward: float | None = None,
    render_mode: str | None = None,
) -> Any:
    """A mobile-env layout as a PettingZoo `ParallelEnv` (one agent per UE, fast engine).

    `overrides` are the CLI's (e.g. `"env.topk=5"`); `obs`, `reward` and `team_reward` are
    short for `env.obs=`, `env.reward=` and `env.team_reward=`. Bad values raise
    `mobrl.UserError` with the CLI's one-line message::

        env = mobrl.parallel_env("dense_urban", obs="topk")
        observations, infos = env.reset(seed=0)
    """
    from mobrl.config import validate_command_line
    from mobrl.envs.factory import env_config_from, make_env
    from mobrl.envs.parallel import MobileParallelEnv
    from mobrl.kinds import kind_of

    given = [f"scenario={scenario}", "env=ma", *overrides]
    for key, value in (("obs", obs), ("reward", reward), ("team_reward", team_reward)):
        if value is not None:
            given.append(f"env.{key}={value}")
    cfg = validate_command_line(given)
    if not kind_of(cfg).transferable:
        raise UserError(
            f"parallel_env serves mobile-env layouts (one agent per UE); scenario={scenario} is "
            "not one. Use a layout from `mobrl scenarios list`."
        )
    env_config = env_config_from(cfg, render_mode=render_mode)
    env_config["sampler"] = None  # one env, stepped by the caller

    def make(seed: int | None) -> Any:
        if seed is None:
            return make_env(env_config)
        kwargs = {**(env_config.get("kwargs") or {}), "seed": seed}
        return make_env({**env_config, "kwargs": kwargs})

    return MobileParallelEnv(make)
