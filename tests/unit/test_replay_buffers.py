"""Which RLlib replay buffer an off-policy algorithm gets (`mobrl.training.algos._replay`):
single-agent for UE slots, multi-agent where RLlib samples agents as such, and the uniform
multi-agent buffer where agents share a policy (RLlib's prioritized one overflows there)."""

from __future__ import annotations

import pytest

from mobrl.core.errors import UserError
from mobrl.envs import factory
from mobrl.training.algos import build_algorithm_config
from mobrl.training.checks import validate_command_line


def buffer_type(overrides: list[str]) -> str:
    cfg = validate_command_line(["run=smoke", *overrides])
    config = build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))
    return config.replay_buffer_config["type"]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # UE slots: each slot's episode is single-agent (the preset's prioritized buffer)
        (["scenario=small", "algo=dqn"], "PrioritizedEpisodeReplayBuffer"),
        # five UEs, one policy each: prioritized trees of their own
        (
            ["scenario=small", "algo=dqn", "env.policies=per_agent"],
            "MultiAgentPrioritizedEpisodeReplayBuffer",
        ),
        # five UEs sharing one policy, and 19 cells sharing one: uniform
        (
            ["scenario=small", "algo=dqn", "env.sampler=multi_agent"],
            "MultiAgentEpisodeReplayBuffer",
        ),
        (["scenario=uma19_energy", "env=cells", "algo=dqn"], "MultiAgentEpisodeReplayBuffer"),
        (["scenario=uma19_energy", "env=cells", "algo=sac"], "MultiAgentEpisodeReplayBuffer"),
        # a uniform buffer asked for stays uniform
        (
            [
                "scenario=small",
                "algo=dqn",
                "env.policies=per_agent",
                "++algo.training.replay_buffer_config.type=EpisodeReplayBuffer",
            ],
            "MultiAgentEpisodeReplayBuffer",
        ),
    ],
)
def test_the_buffer_fits_how_agents_share_policies(overrides: list[str], expected: str) -> None:
    assert buffer_type(overrides) == expected


def test_the_multi_agent_prioritized_buffer_by_name_with_a_shared_policy_is_refused() -> None:
    with pytest.raises(UserError, match="overflows where agents share a policy") as err:
        buffer_type(
            [
                "scenario=uma19_energy",
                "env=cells",
                "algo=dqn",
                "++algo.training.replay_buffer_config.type=MultiAgentPrioritizedEpisodeReplayBuffer",
            ]
        )
    assert "Use type=MultiAgentEpisodeReplayBuffer" in str(err.value)
    assert "\n" not in str(err.value)
