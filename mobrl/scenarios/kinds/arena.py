"""mobrl's two-agent grid arena (`scenario.kind: arena`, mobrl.envs.arena)."""

from __future__ import annotations

from typing import Any

from mobrl.scenarios.kinds.base import ScenarioKind


class ArenaKind(ScenarioKind):
    name = "arena"
    default_policies = "per_agent"

    def env_fields(self, cfg: Any) -> dict[str, Any]:
        return {"id": cfg.scenario.id, "mode": "ma"}

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        from mobrl.envs.arena import GridArena

        kwargs = dict(env_config.get("kwargs") or {})
        return GridArena(render_mode=env_config.get("render_mode"), **kwargs)

    def action_space(self, cfg: Any) -> str:
        return "discrete"

    def agents(self, env_config: dict[str, Any]) -> list[str]:
        from mobrl.envs.arena_rules import AGENTS

        return list(AGENTS)

    def callbacks(self, cfg: Any, env_config: dict[str, Any]) -> type | None:
        from mobrl.envs.callbacks import EpisodeMetricsCallback

        return EpisodeMetricsCallback

    def spaces(self, conf: dict[str, Any]) -> str:
        from mobrl.envs.arena_rules import AGENTS, MOVES, observation_size

        size = conf.get("kwargs", {}).get("size", 8)
        return f"obs {observation_size(size)} per agent, act Discrete({len(MOVES)}) x {len(AGENTS)}"


KIND = ArenaKind()
