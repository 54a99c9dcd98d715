"""Env factory: build any scenario from a plain env_config dict (called inside RLlib workers)."""

from __future__ import annotations

from typing import Any

#: name under which mobrl registers its env creator with Ray Tune
ENV_NAME = "mobrl"
#: policy id of the policy all UEs share in `env=ma`
SHARED_POLICY = "shared"
#: RLlib's module id for single-agent envs
DEFAULT_POLICY = "default_policy"

MOBILE_LAYOUTS = ("small", "medium", "large")
MOBILE_MODES = ("ma", "central")
#: `fast`: mobrl's array engine (mobrl.envs.engine); `stock`: mobile-env's own step
MOBILE_ENGINES = ("fast", "stock")


def env_config_from(cfg: Any, render_mode: str | None = None) -> dict[str, Any]:
    """The plain, picklable dict that `make_env` needs, taken from the composed config."""
    from omegaconf import OmegaConf

    return {
        "scenario": cfg.scenario.name,
        "kind": cfg.scenario.kind,
        "id": cfg.scenario.id,
        "kwargs": OmegaConf.to_container(cfg.scenario.kwargs, resolve=True),
        "mode": cfg.env.mode if cfg.scenario.kind == "mobile" else "gym",
        "engine": cfg.engine,
        "render_mode": render_mode,
    }


def make_env(env_config: dict[str, Any]) -> Any:
    """Create the environment described by `env_config` (see `env_config_from`)."""
    render_mode = env_config.get("render_mode")
    kwargs = dict(env_config.get("kwargs") or {})
    if env_config["kind"] == "mobile":
        engine = env_config.get("engine", "fast")
        core = make_mobile_core(env_config["id"], env_config["mode"], engine, kwargs, render_mode)
        if env_config["mode"] == "central":
            return core
        from mobrl.envs.wrappers import MobileMultiAgentEnv

        return MobileMultiAgentEnv(core)
    import gymnasium as gym

    env = gym.make(env_config["id"], render_mode=render_mode, **kwargs)
    if isinstance(env.observation_space, gym.spaces.Discrete):
        from mobrl.envs.wrappers import OneHotObservation

        env = OneHotObservation(env)
    return env


def make_mobile_core(
    layout: str,
    mode: str,
    engine: str = "fast",
    kwargs: dict[str, Any] | None = None,
    render_mode: str | None = None,
) -> Any:
    """A mobile-env core (`MComCore`) of a built-in layout with the handler of `mode`
    (`ma`: dict observations per UE, `central`: one flat vector) on the chosen engine."""
    from mobile_env.handlers.central import MComCentralHandler
    from mobile_env.handlers.multi_agent import MComMAHandler

    handlers = {"ma": MComMAHandler, "central": MComCentralHandler}
    config = {**(kwargs or {})}
    config.setdefault("handler", handlers[mode])
    return _layout_class(layout, engine)(config=config, render_mode=render_mode)


def _layout_class(layout: str, engine: str) -> Any:
    if engine == "fast":
        from mobrl.envs import engine as fast

        return {"small": fast.FastSmall, "medium": fast.FastMedium, "large": fast.FastLarge}[layout]
    from mobile_env.scenarios.large import MComLarge
    from mobile_env.scenarios.medium import MComMedium
    from mobile_env.scenarios.small import MComSmall

    return {"small": MComSmall, "medium": MComMedium, "large": MComLarge}[layout]


def make_gym_env(
    layout: str, mode: str, config: dict | None = None, render_mode: str | None = None
) -> Any:
    """Entry point of the Gymnasium ids `mobrl/mobile-{layout}-{mode}-v0` (fast engine): the
    same arguments as mobile-env's `mobile-{layout}-{mode}-v0`."""
    return make_mobile_core(layout, mode, "fast", config, render_mode)


def register_gym_ids() -> None:
    """Register `mobrl/mobile-{small,medium,large}-{ma,central}-v0` with Gymnasium."""
    import gymnasium as gym

    for layout in MOBILE_LAYOUTS:
        for mode in MOBILE_MODES:
            env_id = f"mobrl/mobile-{layout}-{mode}-v0"
            if env_id not in gym.registry:
                gym.register(
                    env_id,
                    entry_point="mobrl.envs.factory:make_gym_env",
                    kwargs={"layout": layout, "mode": mode},
                )


def find_core(env: Any, env_index: int = 0) -> Any | None:
    """The mobile-env core behind whatever RLlib hands a callback (vector env, wrappers)."""
    from mobile_env.core.base import MComCore

    node = env
    envs = getattr(node, "envs", None)
    if envs is not None:
        node = envs[env_index]
    for _ in range(8):  # unwrap gym wrappers and mobrl's multi-agent wrapper
        if isinstance(node, MComCore):
            return node
        node = getattr(node, "core", None) or getattr(node, "env", None)
        if node is None:
            return None
    return None


def is_multi_agent(env_config: dict[str, Any]) -> bool:
    return env_config["kind"] == "mobile" and env_config["mode"] == "ma"


def shared_policy_mapping(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Policy mapping of `env=ma`: every UE acts with the one shared policy."""
    return SHARED_POLICY


def policy_setup(env_config: dict[str, Any]) -> tuple[list[str] | None, Any]:
    """Policy ids and mapping function for RLlib's `multi_agent(...)` (None: single agent)."""
    if is_multi_agent(env_config):
        return [SHARED_POLICY], shared_policy_mapping
    return None, None


def policy_ids(env_config: dict[str, Any]) -> list[str]:
    policies, _ = policy_setup(env_config)
    return policies or [DEFAULT_POLICY]


def register() -> None:
    """Register `make_env` with Tune so every Ray worker can build the env by name."""
    from ray.tune.registry import register_env

    register_env(ENV_NAME, make_env)
