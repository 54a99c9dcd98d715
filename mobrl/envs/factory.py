"""Env factory: build any scenario from a plain env_config dict (called inside RLlib workers)."""

from __future__ import annotations

from typing import Any

#: name under which mobrl registers its env creator with Ray Tune
ENV_NAME = "mobrl"
#: policy id of the policy all UEs share in `env=ma`
SHARED_POLICY = "shared"
#: RLlib's module id for single-agent envs
DEFAULT_POLICY = "default_policy"

MOBILE_MODES = ("ma", "central")
#: how RLlib samples `env=ma`: `ue_slots` (a single-agent vector env with a slot per UE,
#: mobrl.envs.slots), `multi_agent` (RLlib's multi-agent runner) or `auto` (slots wherever
#: they apply: one shared policy, every UE present for the whole episode, fast engine)
SAMPLERS = ("auto", "ue_slots", "multi_agent")
#: `fast`: mobrl's array engine (mobrl.envs.engine); `stock`: mobile-env's own step
MOBILE_ENGINES = ("fast", "stock")
#: values of `env.obs` (the handlers behind them: mobrl.envs.observations.HANDLERS)
OBSERVATIONS = ("mobile", "extended", "topk")
#: station slots of `env.obs=topk` unless `env.topk` says otherwise
TOPK_DEFAULT = 3


def env_config_from(cfg: Any, render_mode: str | None = None) -> dict[str, Any]:
    """The plain, picklable dict that `make_env` needs, taken from the composed config.

    For mobile-env scenarios it holds the validated layout itself, so Ray workers and other
    machines rebuild the env without the scenario file."""
    from omegaconf import OmegaConf

    kind = cfg.scenario.kind
    env_config = {
        "scenario": cfg.scenario.name,
        "kind": kind,
        # a layout loaded with scenario.path is named after its file
        "id": cfg.scenario.name if kind == "mobile" else cfg.scenario.id,
        "kwargs": OmegaConf.to_container(cfg.scenario.kwargs, resolve=True),
        "mode": cfg.env.mode if kind == "mobile" else ("ma" if kind == "arena" else "gym"),
        "engine": cfg.engine,
        "render_mode": render_mode,
    }
    if kind == "mobile":
        from mobrl import scenarios

        env_config["layout"] = scenarios.load(cfg.scenario.path)
        env_config["obs"] = check_obs(cfg.env.get("obs", "mobile"), cfg.env.mode)
        if env_config["obs"] == "topk":
            env_config["topk"] = check_topk(cfg.env.get("topk"))
        env_config["team_reward"] = check_team_reward(cfg.env.get("team_reward", 0.0))
    env_config["policies"] = policy_spec(env_config, cfg.env.get("policies"))
    env_config["sampler"] = resolve_sampler(env_config, cfg.env.get("sampler", "auto"))
    if env_config["sampler"] == "ue_slots":
        env_config["seed"] = int(cfg.run.seed)
        env_config["ue_metrics"] = bool(cfg.run.ue_metrics)
    return env_config


def check_obs(obs: str, mode: str = "ma") -> str:
    """A known `env.obs` value that applies to `env.mode`, or a one-line error."""
    from mobrl.errors import UserError, unknown_choice

    if obs not in OBSERVATIONS:
        raise unknown_choice(
            "env.obs", str(obs), OBSERVATIONS, "Use env.obs=mobile, extended or topk."
        )
    if obs == "topk" and mode != "ma":
        raise UserError(
            f"env.obs=topk needs one agent per UE (env=ma), not env.mode={mode}: a central "
            f"agent's observation grows with the UE count anyway. Use env=ma or env.obs=extended."
        )
    return obs


def check_topk(value: Any) -> int:
    """`env.topk` as a positive slot count (None: the default), or a one-line error."""
    from mobrl.errors import UserError

    if value is None:
        return TOPK_DEFAULT
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(
            f"env.topk={value} is not a positive whole number of station slots. "
            f"Use e.g. env.topk={TOPK_DEFAULT}."
        )
    return value


def check_team_reward(value: Any) -> float:
    """`env.team_reward` as a float in [0, 1], or a one-line error."""
    from mobrl.errors import UserError

    share = float(value)  # the schema has made it a float already
    if not 0.0 <= share <= 1.0:
        raise UserError(
            f"env.team_reward={value} is not a share between 0 and 1. Use env.team_reward=0 "
            f"(each UE learns from its own reward) up to 1 (from the mean over all UEs)."
        )
    return share


def resolve_sampler(env_config: dict[str, Any], requested: str) -> str | None:
    """`ue_slots` or `multi_agent` for multi-agent mobile scenarios (`env.sampler`), None for
    the others; a `ue_slots` request that cannot apply is a one-line error naming why."""
    from mobrl.envs import slots
    from mobrl.errors import UserError, unknown_choice

    if requested not in SAMPLERS:
        raise unknown_choice("env.sampler", str(requested), SAMPLERS, "Use env.sampler=auto.")
    if not is_multi_agent(env_config) or env_config["kind"] != "mobile":
        return None
    fits = slots.applies(env_config)
    if requested == "ue_slots" and not fits:
        raise UserError(
            f"env.sampler=ue_slots needs one shared policy (env.policies=shared), UEs present "
            f"for the whole episode (arrival model 'always') and engine=fast; scenario="
            f"{env_config['scenario']} does not qualify. Use env.sampler=auto or multi_agent."
        )
    return "ue_slots" if fits and requested != "multi_agent" else "multi_agent"


def uses_slots(env_config: dict[str, Any]) -> bool:
    return env_config.get("sampler") == "ue_slots"


def num_ues(env_config: dict[str, Any]) -> int:
    return len(agent_ids(env_config))


def make_slot_env(env_config: dict[str, Any], num_envs: int) -> Any:
    """The UE-slot vector env with `num_envs` slots (a whole number of env copies)."""
    from mobrl.envs.slots import UESlotVectorEnv, copy_seed

    n_ues = num_ues(env_config)
    if num_envs % n_ues:
        raise ValueError(f"{num_envs} slots are not a whole number of {n_ues}-UE env copies")
    kwargs = dict(env_config.get("kwargs") or {})
    layout = env_config["layout"]

    def make_core(seed: int) -> Any:
        obs, topk = env_config.get("obs", "mobile"), env_config.get("topk")
        return make_mobile_core(layout, "ma", "fast", {**kwargs, "seed": seed}, obs=obs, topk=topk)

    run_seed = int(env_config.get("seed") or 0)
    seeds = [copy_seed(run_seed, 0, c) for c in range(num_envs // n_ues)]
    return UESlotVectorEnv(
        make_core,
        seeds,
        track_metrics=env_config.get("ue_metrics", True),
        team_reward=float(env_config.get("team_reward") or 0.0),
    )


def make_env(env_config: dict[str, Any], rllib: bool = False) -> Any:
    """Create the environment described by `env_config` (see `env_config_from`). `rllib`:
    for RLlib's runners, whose multi-agent envs must subclass its `MultiAgentEnv` (and so
    import Ray); evaluation and rendering get the same env without that import."""
    render_mode = env_config.get("render_mode")
    if uses_slots(env_config) and "num_envs" in env_config:  # RLlib's vector entry point
        return make_slot_env(env_config, env_config["num_envs"])
    kwargs = dict(env_config.get("kwargs") or {})
    if env_config["kind"] == "mobile":
        engine = env_config.get("engine", "fast")
        layout = env_config.get("layout") or env_config["id"]  # runs from before layouts as data
        obs, topk = env_config.get("obs", "mobile"), env_config.get("topk")
        core = make_mobile_core(layout, env_config["mode"], engine, kwargs, render_mode, obs, topk)
        if env_config["mode"] == "central":
            return core
        if rllib:
            from mobrl.envs.rllib_env import MobileMultiAgentEnv as UEEnv
        else:
            from mobrl.envs.wrappers import UEAgentsEnv as UEEnv

        return UEEnv(core, team_reward=float(env_config.get("team_reward") or 0.0))
    if env_config["kind"] == "arena":
        from mobrl.envs.arena import GridArena

        return GridArena(render_mode=render_mode, **kwargs)
    import gymnasium as gym

    env = gym.make(env_config["id"], render_mode=render_mode, **kwargs)
    if isinstance(env.observation_space, gym.spaces.Discrete):
        from mobrl.envs.wrappers import OneHotObservation

        env = OneHotObservation(env)
    return env


def make_mobile_core(
    layout: str | dict[str, Any],
    mode: str,
    engine: str = "fast",
    kwargs: dict[str, Any] | None = None,
    render_mode: str | None = None,
    obs: str = "mobile",
    topk: int | None = None,
) -> Any:
    """A mobile-env core (`MComCore`) of a layout (a scenario name, or validated layout data)
    with the handler of `mode` (`ma`: dict observations per UE, `central`: one flat vector) on
    the chosen engine. `kwargs` are mobile-env config entries that override the layout's;
    `obs` picks the observation (mobrl.envs.observations; `topk`: its slot count)."""
    from mobile_env.core.base import MComCore
    from mobile_env.core.util import deep_dict_merge

    from mobrl import scenarios
    from mobrl.envs.observations import handler_for

    if isinstance(layout, str):
        layout = scenarios.load(scenarios.path_of(layout))
    stations, users, config = scenarios.build_config(layout)
    config = deep_dict_merge(config, {"handler": handler_for(obs, mode, topk), **(kwargs or {})})
    if engine == "fast":
        from mobrl.envs.engine import FastCore

        return FastCore(stations, users, config, render_mode=render_mode)
    return MComCore(stations, users, config, render_mode=render_mode)


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
                    entry_point="mobrl.envs.factory:make_gym_env",
                    kwargs={"layout": path.stem, "mode": mode},
                )


def find_env(env: Any, wanted: Any, env_index: int = 0) -> Any | None:
    """The first env for which `wanted(env)` holds behind whatever RLlib hands a callback
    (vector env, Gymnasium wrappers, mobrl's multi-agent wrapper)."""
    node = env
    envs = getattr(node, "envs", None)
    if envs is not None:
        node = envs[env_index]
    for _ in range(8):
        if wanted(node):
            return node
        node = getattr(node, "core", None) or getattr(node, "env", None)
        if node is None:
            return None
    return None


def find_core(env: Any, env_index: int = 0) -> Any | None:
    """The mobile-env core behind whatever RLlib hands a callback (vector env, wrappers)."""
    from mobile_env.core.base import MComCore

    return find_env(env, lambda node: isinstance(node, MComCore), env_index)


def is_multi_agent(env_config: dict[str, Any]) -> bool:
    return env_config["mode"] == "ma" and env_config["kind"] in ("mobile", "arena")


def agent_ids(env_config: dict[str, Any]) -> list[str]:
    """The agents of a multi-agent scenario (empty for single-agent ones)."""
    if not is_multi_agent(env_config):
        return []
    if env_config["kind"] == "arena":
        from mobrl.envs.arena_rules import AGENTS

        return list(AGENTS)
    from mobrl.envs.wrappers import agent_id

    layout = env_config.get("layout")
    count = (
        layout["ues"]["count"] if layout else len(make_mobile_core(env_config["id"], "ma").users)
    )
    return [agent_id(u) for u in range(count)]


#: the policy mapping a scenario gets when env.policies is not set
DEFAULT_POLICIES = {"mobile": "shared", "arena": "per_agent"}
POLICY_MAPPINGS = ("shared", "per_agent")


def policy_spec(env_config: dict[str, Any], requested: Any) -> dict[str, str] | None:
    """Agent id -> policy id for `env.policies`: `shared` (one policy, id "shared"),
    `per_agent` (one policy per agent, named like it) or {policy: [agent ids]}; None for
    single-agent scenarios."""
    from mobrl.errors import UserError, unknown_choice

    agents = agent_ids(env_config)
    if not agents:
        return None
    requested = DEFAULT_POLICIES[env_config["kind"]] if requested is None else requested
    if hasattr(requested, "items"):  # a mapping of groups (DictConfig or dict)
        mapping: dict[str, str] = {}
        for policy, members in requested.items():
            members = [members] if isinstance(members, str) else list(members)
            for agent in members:
                if agent not in agents:
                    raise unknown_choice(
                        f"agent in env.policies.{policy}:", str(agent), agents, "Fix the group."
                    )
                if agent in mapping:
                    raise UserError(
                        f"agent '{agent}' is in two groups of env.policies ({mapping[agent]}, "
                        f"{policy}). Put each agent in one group."
                    )
                mapping[agent] = str(policy)
        missing = [a for a in agents if a not in mapping]
        if missing:
            raise UserError(
                f"env.policies leaves agents without a policy: {', '.join(missing[:5])}"
                f"{' ...' if len(missing) > 5 else ''}. Add them to a group."
            )
        return mapping
    if requested == "shared":
        return {a: SHARED_POLICY for a in agents}
    if requested == "per_agent":
        return {a: a for a in agents}
    raise unknown_choice(
        "env.policies",
        str(requested),
        POLICY_MAPPINGS,
        "Use env.policies=shared, per_agent or a mapping {policy: [agent ids]}.",
    )


class AgentPolicyMap:
    """RLlib's policy_mapping_fn for a fixed agent -> policy table (picklable)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = dict(mapping)

    def __call__(self, agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        return self.mapping[agent_id]


def policy_setup(env_config: dict[str, Any]) -> tuple[list[str] | None, Any]:
    """Policy ids and mapping function for RLlib's `multi_agent(...)` (None: single agent)."""
    if not is_multi_agent(env_config):
        return None, None
    mapping = env_config.get("policies") or policy_spec(env_config, None)  # older manifests
    return sorted(set(mapping.values())), AgentPolicyMap(mapping)


def policy_ids(env_config: dict[str, Any]) -> list[str]:
    """The RLModule ids a checkpoint of this scenario holds (UE slots: RLlib's single one)."""
    if uses_slots(env_config):
        return [DEFAULT_POLICY]
    policies, _ = policy_setup(env_config)
    return policies or [DEFAULT_POLICY]


#: Gymnasium's checkers only warn; warnings with these words mean the env breaks its own
#: contract (other warnings, such as dtype advice, are not errors)
_BROKEN_ENV_WARNINGS = ("not within the observation space", "must be", "Expects")


def check_env(env_config: dict[str, Any], rllib: bool = True) -> None:
    """Build the scenario once and run RLlib's multi-agent checker (`rllib`, before training)
    or Gymnasium's passive checks (reset and one step, against the spaces; each agent's for
    multi-agent envs, without importing Ray) on it; a failure is a one-line `UserError`,
    not a traceback from inside a Ray worker later."""
    import warnings

    from mobrl.errors import UserError, first_line

    name = env_config.get("scenario") or env_config["id"]
    problem = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            env = make_env({**env_config, "render_mode": None}, rllib=rllib)
            try:
                if is_multi_agent(env_config) and rllib:
                    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

                    check_multiagent_environments(env)
                elif is_multi_agent(env_config):
                    _check_agents(env)
                else:
                    from gymnasium.utils import passive_env_checker as passive

                    passive.env_reset_passive_checker(env, seed=0)
                    passive.env_step_passive_checker(env, env.action_space.sample())
            finally:
                env.close()
        except UserError:
            raise
        except Exception as err:
            problem = first_line(err)
    if problem is None:
        broken = [str(w.message) for w in caught]
        broken = [m for m in broken if any(words in m for words in _BROKEN_ENV_WARNINGS)]
        problem = broken[0].replace("\n", " ") if broken else None
    if problem is not None:
        raise UserError(
            f"scenario '{name}' fails the env check: {problem}. Fix the scenario's definition "
            "(or the Gymnasium env it names)."
        )


def _check_agents(env: Any) -> None:
    """Reset and one step of a multi-agent env, every agent's observation against its space."""
    observations, _ = env.reset(seed=0)
    for _ in range(2):
        for agent, obs in observations.items():
            if not env.observation_spaces[agent].contains(obs):
                raise ValueError(f"the observation of {agent} is not within the observation space")
        actions = {agent: env.action_spaces[agent].sample() for agent in observations}
        observations, *_ = env.step(actions)


def register() -> None:
    """Register `make_env` with Tune so every Ray worker can build the env by name."""
    from ray.tune import registry

    from mobrl.envs.rllib_env import make_rllib_env

    # Tune keys its registry by the Ray job id it saw first in this process; a process that
    # joins Ray again (the next job of a parallel multirun) is a new job whose workers would
    # not find the env under the old key
    registry._global_registry._prefix = None
    registry.register_env(ENV_NAME, make_rllib_env)
