"""mobrl's UE-agent env as RLlib's `MultiAgentEnv`, for RLlib's runners and env checker."""

from __future__ import annotations

from typing import Any

from ray.rllib.env.multi_agent_env import MultiAgentEnv

from mobrl.envs.wrappers import UEAgentsEnv


class MobileMultiAgentEnv(UEAgentsEnv, MultiAgentEnv):
    """`UEAgentsEnv` as an RLlib `MultiAgentEnv` (the behaviour is all `UEAgentsEnv`'s)."""


def make_rllib_env(env_config: dict[str, Any]) -> Any:
    """The env creator mobrl registers with Tune: `make_env` for RLlib's runners."""
    from mobrl.envs.factory import make_env
    from mobrl.faults import arm_env

    return arm_env(make_env(env_config, rllib=True), env_config.get("fault"))
