"""mobile-env layouts (`scenario.kind: mobile`): cells and UEs from a layout file, one agent
per UE (`env=ma`) or one central agent (`env=central`), on mobrl's fast engine or stock (a
layout naming its own mobile-env classes always on stock: `engine_for`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mobrl.scenarios.kinds.base import ScenarioKind
from mobrl.scenarios.mobile_core import engine_for, make_mobile_core
from mobrl.scenarios.mobile_options import (
    CELL_GUARD,
    CELL_MODES,
    CELL_NEIGHBOURS,
    CELL_RULES,
    CELL_TEAM_REWARD,
    MOBILE_ENGINES,
    MOBILE_MODES,
    NETWORK_PERIOD,
    OBSERVATIONS,
    REWARDS,
    TOPK_DEFAULT,
    TOPK_OBSERVATIONS,
    TURN_OBS_DEFAULT,
    cells_cannot_play,
    check_cell_policy,
    check_cells,
    check_decide,
    check_gain_floor,
    check_guard,
    check_neighbours,
    check_network_reward,
    check_obs,
    check_period,
    check_reward,
    check_team_reward,
    check_topk,
    check_turn_obs,
    check_turn_rounds,
    check_ue_policy,
    with_energy_weight,
)

# the kind's settings and checks (mobrl.scenarios.mobile_options) and its core builder
# (mobrl.scenarios.mobile_core) are importable from here too
__all__ = [
    "KIND",
    "MOBILE_ENGINES",
    "MOBILE_MODES",
    "OBSERVATIONS",
    "REWARDS",
    "TOPK_DEFAULT",
    "TOPK_OBSERVATIONS",
    "MobileKind",
    "MobileSpec",
    "check_decide",
    "check_obs",
    "check_reward",
    "check_team_reward",
    "check_topk",
    "check_turn_obs",
    "check_turn_rounds",
    "engine_for",
    "make_gym_env",
    "make_mobile_core",
    "make_slot_env",
    "register_gym_ids",
]


@dataclass(frozen=True)
class MobileSpec:
    """What a mobile-env env is made of, its defaults written once: built from the composed
    config (every value checked) or read back from an `env_config` (keys that runs from older
    versions lack take the defaults), turned into the kind's `env_config` entries, moved to
    another layout, and built into a mobile-env core."""

    #: validated layout data (a built-in layout's name for runs from before layouts as data)
    layout: Any
    mode: str = "ma"
    engine: str = "fast"
    obs: str = "mobile"
    #: station slots of obs=topk (None for the other observations)
    topk: int | None = None
    team_reward: float = 0.0
    reward: str = "mobile"
    #: `env.decide`: at_once, or in_turns (mobrl.envs.turns)
    decide: str = "at_once"
    #: `env.turn_rounds`: with in_turns, how often the groups take their turns in a step
    turn_rounds: int = 1
    #: `env.turn_obs`: with in_turns, what a turn observes beyond its slot observation
    turn_obs: str = TURN_OBS_DEFAULT
    #: `env.neighbours`: env=cells, the nearest stations each cell observes
    neighbours: int = CELL_NEIGHBOURS
    #: `env.period`: env=hierarchical, the steps between the network agent's decisions
    period: int = NETWORK_PERIOD
    #: `env.guard`: env=cells, what the network does with a cell's request to sleep
    guard: str = CELL_GUARD
    #: `env.ue_policy`: env=cells, how the UEs pick their stations
    ue_policy: str = "greedy"
    #: `env.cell_policy`: env=hierarchical, the zoo cell policy the cells are held at (None:
    #: the cells learn)
    cell_policy: str | None = None
    #: `env.network_reward`: env=hierarchical, what the network agent learns from
    network_reward: str = "objective"
    #: `env.gain_floor`: env=cells in turns, the price the observed gain puts on a UE's
    #: lost service (mobrl.envs.cell_turns)
    gain_floor: float = 0.0

    @classmethod
    def from_config(cls, cfg: Any) -> MobileSpec:
        from mobrl import scenarios
        from mobrl.scenarios import classes

        mode, name = cfg.env.mode, cfg.scenario.name
        layout = with_energy_weight(
            scenarios.load(cfg.scenario.path), cfg.env.get("energy_weight"), name
        )
        if mode in CELL_MODES:
            check_cells(layout, name, cfg.engine, mode)
            neighbours = check_neighbours(cfg.env.get("neighbours", CELL_NEIGHBOURS))
            fixed = check_cell_policy(cfg.env.get("cell_policy"), mode, layout, neighbours)
            decide = check_decide(cfg.env.get("decide", cls.decide), mode, cls.obs)
            check_turn_rounds(cfg.env.get("turn_rounds", cls.turn_rounds), decide, mode)
            check_turn_obs(cfg.env.get("turn_obs", cls.turn_obs), decide, mode)
            return cls(
                layout,
                mode,
                engine_for(layout, cfg.engine, name),
                team_reward=check_team_reward(cfg.env.get("team_reward", CELL_TEAM_REWARD)),
                neighbours=neighbours,
                period=check_period(cfg.env.get("period", NETWORK_PERIOD)),
                guard=check_guard(cfg.env.get("guard", CELL_GUARD)),
                ue_policy=check_ue_policy(cfg.env.get("ue_policy", "greedy")),
                cell_policy=fixed,
                network_reward=check_network_reward(
                    cfg.env.get("network_reward", "objective"), fixed
                ),
                decide=decide,
                gain_floor=check_gain_floor(cfg.env.get("gain_floor", 0.0), decide, mode),
            )
        obs = check_obs(cfg.env.get("obs", cls.obs), mode)
        topk = check_topk(cfg.env.get("topk")) if obs in TOPK_OBSERVATIONS else None
        team_reward = check_team_reward(cfg.env.get("team_reward", cls.team_reward))
        reward = check_reward(cfg.env.get("reward", cls.reward), mode)
        classes.check_settings(layout, name, obs, reward, cfg.env.get("sampler", "auto"))
        engine = engine_for(layout, cfg.engine, name)
        decide = check_decide(cfg.env.get("decide", cls.decide), mode, obs)
        rounds = check_turn_rounds(cfg.env.get("turn_rounds", cls.turn_rounds), decide, mode)
        view = check_turn_obs(cfg.env.get("turn_obs", cls.turn_obs), decide, mode)
        check_gain_floor(cfg.env.get("gain_floor", 0.0), decide, mode)
        return cls(layout, mode, engine, obs, topk, team_reward, reward, decide, rounds, view)

    @classmethod
    def of(cls, env_config: dict[str, Any]) -> MobileSpec:
        return cls(
            layout=env_config.get("layout") or env_config["id"],
            mode=env_config["mode"],
            engine=env_config.get("engine") or cls.engine,
            obs=env_config.get("obs") or cls.obs,
            topk=env_config.get("topk")
            or (TOPK_DEFAULT if env_config.get("obs") in TOPK_OBSERVATIONS else None),
            team_reward=float(env_config.get("team_reward") or cls.team_reward),
            reward=env_config.get("reward") or cls.reward,
            decide=env_config.get("decide") or cls.decide,
            turn_rounds=int(env_config.get("turn_rounds") or cls.turn_rounds),
            turn_obs=env_config.get("turn_obs") or cls.turn_obs,
            neighbours=int(env_config.get("neighbours") or cls.neighbours),
            period=int(env_config.get("period") or cls.period),
            guard=env_config.get("guard") or cls.guard,
            ue_policy=env_config.get("ue_policy") or cls.ue_policy,
            cell_policy=env_config.get("cell_policy"),
            network_reward=env_config.get("network_reward") or cls.network_reward,
            gain_floor=float(env_config.get("gain_floor") or cls.gain_floor),
        )

    def cell_settings(self) -> dict[str, Any]:
        """The settings env=cells and env=hierarchical share (their envs' keyword arguments,
        and entries of `env_config`)."""
        return {
            "team_reward": self.team_reward,
            "neighbours": self.neighbours,
            "guard": self.guard,
            "ue_policy": self.ue_policy,
        }

    def fields(self) -> dict[str, Any]:
        """The kind's entries of `env_config`: `engine` (every kind's, set by the factory from
        the config) as the engine this layout runs on, then the mobile kind's own."""
        out: dict[str, Any] = {"engine": self.engine, "mode": self.mode, "layout": self.layout}
        if self.mode in CELL_MODES:
            out = {**out, **self.cell_settings()}
            if self.mode == "cells":
                if self.decide != MobileSpec.decide:
                    out["decide"] = self.decide
                if self.gain_floor != MobileSpec.gain_floor:
                    out["gain_floor"] = self.gain_floor
                return out
            fixed = {"cell_policy": self.cell_policy} if self.cell_policy else {}
            if self.network_reward != MobileSpec.network_reward:
                fixed["network_reward"] = self.network_reward
            return {**out, "period": self.period, **fixed}
        out["obs"] = self.obs
        if self.obs in TOPK_OBSERVATIONS:
            out["topk"] = self.topk
        out = {**out, "team_reward": self.team_reward, "reward": self.reward}
        if self.decide != MobileSpec.decide:
            out["decide"] = self.decide  # env_configs deciding at once stay as they were
        if self.turn_rounds != MobileSpec.turn_rounds:
            out["turn_rounds"] = self.turn_rounds
        if self.turn_obs != MobileSpec.turn_obs:
            out["turn_obs"] = self.turn_obs
        return out

    def on_layout(self, name: str) -> MobileSpec:
        """The same settings on the built-in or user layout `name`."""
        from mobrl import scenarios
        from mobrl.scenarios import classes

        layout = scenarios.load(scenarios.path_of(name))
        classes.check_settings(layout, name, self.obs, self.reward)
        return replace(self, layout=layout, engine=engine_for(layout, self.engine, name))

    def core(self, kwargs: dict | None = None, render_mode: str | None = None) -> Any:
        """A mobile-env core of this spec (`kwargs`: mobile-env config entries on top)."""
        mode = "ma" if self.mode in CELL_MODES else self.mode  # cell agents step UEs' links
        return make_mobile_core(
            self.layout, mode, self.engine, kwargs, render_mode, self.obs, self.topk,
            self.reward,
        )  # fmt: skip


class MobileKind(ScenarioKind):
    name = "mobile"
    default_policies = "shared"
    eval_metric = "utility"  # mobile-env's central reward: its return can be gamed
    transferable = True
    draws_own_frames = True  # mobrl.rendering.frames draws the network, not mobile-env's view

    def check(self, cfg: Any) -> None:
        from mobrl.core.errors import UserError, unknown_choice

        if not cfg.scenario.path:
            raise UserError(
                f"scenario={cfg.scenario.name} has no layout file. Set scenario.path=<file.yaml>."
            )
        if cfg.env.mode not in MOBILE_MODES:
            raise unknown_choice(
                "env mode",
                cfg.env.mode,
                MOBILE_MODES,
                "Use env=ma, central, cells or hierarchical.",
            )
        if cfg.engine not in MOBILE_ENGINES:
            raise unknown_choice("engine", cfg.engine, MOBILE_ENGINES, "Use engine=fast or stock.")
        check_topk(cfg.env.get("topk"))  # also when env.obs does not use it

    def env_fields(self, cfg: Any) -> dict[str, Any]:
        # a layout loaded with scenario.path is named after its file
        return {"id": cfg.scenario.name, **MobileSpec.from_config(cfg).fields()}

    def retarget(self, env_config: dict[str, Any], scenario: str) -> dict[str, Any]:
        spec = MobileSpec.of(env_config).on_layout(scenario)
        return {**env_config, "scenario": scenario, "id": scenario, **spec.fields()}

    def policy_settings(self, env_config: dict[str, Any]) -> dict[str, str]:
        # what a UE observes and how its action is read (per UE or one central agent); the
        # engine, rewards and team reward change neither, so they stay the user's to choose
        spec = MobileSpec.of(env_config)
        if spec.mode in CELL_MODES:
            settings = {
                "env": spec.mode,
                "env.neighbours": str(spec.neighbours),
                "env.guard": spec.guard,
            }
            if spec.mode == "hierarchical":
                settings["env.period"] = str(spec.period)
            if spec.decide != MobileSpec.decide:
                settings["env.decide"] = spec.decide
            if spec.decide == "in_turns":  # what its turns observed, 0 included
                settings["env.gain_floor"] = str(spec.gain_floor)
            return settings
        settings = {"env": spec.mode, "env.obs": spec.obs}
        if spec.obs in TOPK_OBSERVATIONS:
            settings["env.topk"] = str(spec.topk)
        if spec.decide != MobileSpec.decide:
            settings["env.decide"] = spec.decide
        if spec.turn_rounds != MobileSpec.turn_rounds:
            settings["env.turn_rounds"] = str(spec.turn_rounds)
        if spec.turn_obs != MobileSpec.turn_obs:
            settings["env.turn_obs"] = spec.turn_obs
        return settings

    def cannot_play(
        self, trained: dict[str, Any], env_config: dict[str, Any], label: str
    ) -> str | None:
        spec = MobileSpec.of(trained)
        if spec.mode in CELL_MODES:
            return cells_cannot_play(spec.layout, MobileSpec.of(env_config).layout, label)
        if spec.mode == "ma" and spec.obs in TOPK_OBSERVATIONS:
            return None  # k slots on every layout: what differs is not the layout
        here = trained.get("scenario") or trained["id"]
        there = env_config.get("scenario") or env_config["id"]
        (stations, ues), (their_stations, their_ues) = map(
            _size, (spec.layout, MobileSpec.of(env_config).layout)
        )
        fix = (
            f"Play it on {here} (or a layout of its size), or use a policy trained with env=ma "
            "env.obs=topk_gain, which acts on every layout (e.g. zoo:small)."
        )
        if spec.mode == "central" and (stations, ues) != (their_stations, their_ues):
            return (
                f"{label} is one central agent (env=central) that observes and acts for every "
                f"station and UE: {here} has {stations} stations and {ues} UEs, {there} "
                f"{their_stations} and {their_ues}. {fix}"
            )
        if spec.mode == "ma" and stations != their_stations:
            return (
                f"{label} observes env.obs={spec.obs}, one entry per station: {here} has "
                f"{stations} stations, {there} {their_stations}. {fix}"
            )
        return None

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        spec = MobileSpec.of(env_config)
        core = spec.core(dict(env_config.get("kwargs") or {}), env_config.get("render_mode"))
        if spec.mode == "central":
            return core
        if spec.mode in CELL_MODES:
            return _cell_env(spec, core, rllib)
        if spec.decide == "in_turns":
            if rllib:
                from mobrl.envs.rllib_env import MobileTurnsEnv as UEEnv
            else:
                from mobrl.envs.turns import UETurnsEnv as UEEnv
        elif rllib:
            from mobrl.envs.rllib_env import MobileMultiAgentEnv as UEEnv
        else:
            from mobrl.envs.wrappers import UEAgentsEnv as UEEnv

        if spec.decide == "in_turns":
            return UEEnv(
                core, team_reward=spec.team_reward, rounds=spec.turn_rounds, view=spec.turn_obs
            )
        return UEEnv(core, team_reward=spec.team_reward)

    def action_space(self, cfg: Any) -> str:
        # one central agent picks a station for every UE; each UE, cell or network agent one
        # action of a few
        return "multidiscrete" if cfg.env.mode == "central" else "discrete"

    def agents(self, env_config: dict[str, Any]) -> list[str]:
        from mobrl.envs.wrappers import agent_id

        layout = env_config.get("layout")
        if env_config.get("mode") in CELL_MODES:
            from mobrl.envs.cells import cell_agent
            from mobrl.envs.hierarchy import NETWORK

            if env_config.get("cell_policy"):  # the cells held fixed: the network agent alone
                return [NETWORK]
            cells = [cell_agent(b) for b in range(_size(layout)[0])]
            return [NETWORK, *cells] if env_config["mode"] == "hierarchical" else cells
        count = (
            layout["ues"]["count"]
            if layout
            else len(make_mobile_core(env_config["id"], "ma").users)
        )
        return [agent_id(u) for u in range(count)]

    def ue_slots(self, env_config: dict[str, Any]) -> bool | None:
        from mobrl.envs import slots

        return env_config["mode"] == "ma" and slots.applies(env_config)

    def callbacks(self, cfg: Any, env_config: dict[str, Any]) -> type | None:
        from mobrl.envs.slots import uses_slots

        if not cfg.run.ue_metrics or uses_slots(env_config):
            return None  # the UE-slot env logs its own metrics
        from mobrl.envs.callbacks import EpisodeMetricsCallback

        return EpisodeMetricsCallback

    def seeded(self, env_config: dict[str, Any], seed: int) -> dict[str, Any]:
        # mobile-env draws movement and arrivals from its config seed, not from reset(seed=...);
        # the return of an evaluation is mobile-env's own (env.reward changes only what UEs
        # learn from, never what they observe), so returns compare across policies
        # (and the network agent's return is the objective, not its difference to a copy's)
        kwargs = {**(env_config.get("kwargs") or {}), "seed": seed}
        out = {**env_config, "kwargs": kwargs, "reward": "mobile"}
        if "network_reward" in env_config:
            out["network_reward"] = "objective"
        return out

    def baselines(self, env_config: dict[str, Any]) -> list[str]:
        from mobrl.scenarios import classes

        layout = env_config.get("layout")
        if env_config.get("mode") in CELL_MODES:  # cell agents are played against cell rules
            # and a network agent above held cells against those cells alone
            return [*CELL_RULES, *(["cells_alone"] if env_config.get("cell_policy") else [])]
        rules = ["random", "noop", "greedy", "greedy_fill", "full", "capped", "oracle"]
        demand = ((layout or {}).get("traffic") or {}).get("demand") or {}
        if classes.own_service(layout) or demand.get("model", "full_buffer") != "full_buffer":
            # these score link sets with mobile-env's stock utility and full-buffer shares
            rules = [r for r in rules if r not in ("capped", "oracle")]
        if isinstance(layout, dict) and "power" in layout:  # cells that sleep (docs/energy.md)
            rules += list(CELL_RULES)
        return rules

    def default_policy_mapping(self, env_config: dict[str, Any]) -> Any:
        if env_config.get("mode") == "hierarchical":  # a policy per level
            if env_config.get("cell_policy"):
                return {"network": ["network"]}
            return {"network": ["network"], "cells": ["cell_*"]}
        return self.default_policies

    def where(self, cfg: Any) -> str:
        return f"scenario={cfg.scenario.name} env={cfg.env.mode}"

    def other_mode(self, cfg: Any) -> str:
        return " or env=ma" if cfg.env.mode == "central" else ""

    def intermittent_agents(self, cfg: Any) -> tuple[str, str]:
        if cfg.env.mode == "hierarchical":  # the network agent decides every env.period steps
            return "env=hierarchical", "env=cells for the cell agents alone"
        return "", ""


def _size(layout: str | dict[str, Any]) -> tuple[int, int]:
    """(stations, UEs) of a layout's data, or of a built-in layout's name (older runs)."""
    if not isinstance(layout, dict):
        from mobrl import scenarios

        layout = scenarios.load(scenarios.path_of(layout))
    return len(layout["stations"]), int(layout["ues"]["count"])


def make_slot_env(env_config: dict[str, Any], num_envs: int) -> Any:
    """The UE-slot vector env with `num_envs` slots (a whole number of env copies)."""
    from mobrl.envs.slots import UESlotVectorEnv, copy_seed

    n_ues = len(KIND.agents(env_config))
    if num_envs % n_ues:
        raise ValueError(f"{num_envs} slots are not a whole number of {n_ues}-UE env copies")
    kwargs = dict(env_config.get("kwargs") or {})
    spec = MobileSpec.of(env_config)

    def make(seed: int) -> Any:
        return spec.core({**kwargs, "seed": seed})

    run_seed = int(env_config.get("seed") or 0)
    seeds = [copy_seed(run_seed, 0, c) for c in range(num_envs // n_ues)]
    return UESlotVectorEnv(
        make,
        seeds,
        track_metrics=env_config.get("ue_metrics", True),
        team_reward=spec.team_reward,
    )


def make_gym_env(
    layout: str, mode: str, config: dict | None = None, render_mode: str | None = None
) -> Any:
    """Entry point of the Gymnasium ids `mobrl/mobile-{layout}-{mode}-v0` (fast engine): the
    same arguments as mobile-env's `mobile-{layout}-{mode}-v0`."""
    return make_mobile_core(layout, mode, "fast", config, render_mode)


def register_gym_ids() -> None:
    """Register `mobrl/mobile-{layout}-{ma,central}-v0` for every built-in layout."""
    import gymnasium as gym

    from mobrl import scenarios

    for path in sorted(scenarios.builtin_dir().glob("*.yaml")):
        for mode in MOBILE_MODES:
            env_id = f"mobrl/mobile-{path.stem}-{mode}-v0"
            if env_id not in gym.registry:
                gym.register(
                    env_id,
                    entry_point="mobrl.scenarios.kinds.mobile:make_gym_env",
                    kwargs={"layout": path.stem, "mode": mode},
                )


KIND = MobileKind()


def _cell_env(spec: MobileSpec, core: Any, rllib: bool) -> Any:
    """The env of `env=cells` or `env=hierarchical` on `core` (RLlib's `MultiAgentEnv` with
    `rllib`; Ray is imported only then)."""
    if rllib:
        from mobrl.envs.rllib_env import MobileCellsEnv as CellsEnv
        from mobrl.envs.rllib_env import MobileCellTurnsEnv as CellTurnsEnv
        from mobrl.envs.rllib_env import MobileHierarchicalEnv as HierarchicalEnv
    else:
        from mobrl.envs.cell_turns import CellTurnsEnv
        from mobrl.envs.cells import CellsEnv
        from mobrl.envs.hierarchy import HierarchicalEnv
    settings = spec.cell_settings()
    if spec.mode == "cells":
        if spec.decide == "in_turns":
            return CellTurnsEnv(core, gain_floor=spec.gain_floor, **settings)
        return CellsEnv(core, **settings)
    return HierarchicalEnv(
        core,
        period=spec.period,
        cell_policy=spec.cell_policy,
        network_reward=spec.network_reward,
        **settings,
    )
