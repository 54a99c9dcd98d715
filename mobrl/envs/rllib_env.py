"""mobrl's UE-agent env as RLlib's `MultiAgentEnv`, for RLlib's runners and env checker."""

from __future__ import annotations

from ray.rllib.env.multi_agent_env import MultiAgentEnv

from mobrl.envs.wrappers import UEAgentsEnv


class MobileMultiAgentEnv(UEAgentsEnv, MultiAgentEnv):
    """`UEAgentsEnv` as an RLlib `MultiAgentEnv` (the behaviour is all `UEAgentsEnv`'s)."""
