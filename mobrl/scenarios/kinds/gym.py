"""Gymnasium tasks (`scenario.kind: gym`): any registered id, single agent."""

from __future__ import annotations

from typing import Any

from mobrl.scenarios.kinds.base import ScenarioKind, action_kind


class GymKind(ScenarioKind):
    name = "gym"

    def check(self, cfg: Any) -> None:
        check_id_given(cfg)

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        import gymnasium as gym

        kwargs = dict(env_config.get("kwargs") or {})
        env = gym.make(env_config["id"], render_mode=env_config.get("render_mode"), **kwargs)
        if isinstance(env.observation_space, gym.spaces.Discrete):
            from mobrl.envs.wrappers import OneHotObservation

            env = OneHotObservation(env)
        return env

    def action_space(self, cfg: Any) -> str:
        env = make_checked(cfg)
        space = env.action_space
        env.close()
        return action_kind(space)

    def baselines(self, env_config: dict[str, Any]) -> list[str]:
        if env_config["id"].startswith("CartPole"):
            return ["random", "pole_angle"]
        return ["random"]

    def spaces(self, conf: dict[str, Any]) -> str:
        if conf["id"] == "???":
            return "any Gymnasium id (scenario.id=...)"
        import gymnasium as gym

        def short(space: Any) -> str:
            return f"Box{space.shape}" if isinstance(space, gym.spaces.Box) else str(space)

        env = gym.make(conf["id"])
        try:
            return f"obs {short(env.observation_space)}, act {short(env.action_space)}"
        finally:
            env.close()


def check_id_given(cfg: Any) -> None:
    """`scenario=gym` names its task with `scenario.id`, or a one-line error."""
    from omegaconf import OmegaConf

    from mobrl.core.errors import UserError

    if OmegaConf.is_missing(cfg.scenario, "id"):
        raise UserError(
            f"scenario={cfg.scenario.name} needs a Gymnasium id. "
            "Add scenario.id=<id>, e.g. scenario.id=MountainCar-v0."
        )


def make_checked(cfg: Any) -> Any:
    """The Gymnasium env of the config, or a one-line error naming what is wrong with it."""
    import gymnasium as gym
    from omegaconf import OmegaConf

    from mobrl.core.errors import UserError, first_line, unknown_choice

    check_id_given(cfg)
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


KIND = GymKind()
