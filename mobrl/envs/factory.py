"""Env factory: build any scenario from a plain env_config dict (called inside RLlib workers)."""

from __future__ import annotations

from typing import Any

#: name under which mobrl registers its env creator with Ray Tune
ENV_NAME = "mobrl"
#: policy id of the policy all UEs share in `env=ma`
SHARED_POLICY = "shared"
#: RLlib's module id for single-agent envs
DEFAULT_POLICY = "default_policy"

#: how RLlib samples `env=ma`: `ue_slots` (a single-agent vector env with a slot per UE,
#: mobrl.envs.slots), `multi_agent` (RLlib's multi-agent runner) or `auto` (slots wherever
#: they apply: one shared policy, every UE present for the whole episode, fast engine)
SAMPLERS = ("auto", "ue_slots", "multi_agent")


def env_config_from(cfg: Any, render_mode: str | None = None) -> dict[str, Any]:
    """The plain, picklable dict that `make_env` needs, taken from the composed config.

    For mobile-env scenarios it holds the validated layout itself, so Ray workers and other
    machines rebuild the env without the scenario file."""
    from mobrl.scenarios.kinds import env_config_of

    env_config = env_config_of(cfg, render_mode)
    policies, sampler = cfg.env.get("policies"), cfg.env.get("sampler", "auto")
    if (cfg.get("algo") or {}).get("critic"):
        check_pooled_critic(env_config, cfg.algo.name)
    return _with_agents(env_config, policies, sampler, cfg.run.seed, cfg.run.ue_metrics)


def check_pooled_critic(env_config: dict[str, Any], algo: str) -> None:
    """An algorithm whose critic pools the agents of each env step (algo=mappo) needs several:
    one line where the env has one. Both samplers keep a step's agents together (RLlib's
    multi-agent runner in one episode, UE slots by their copy's episode id)."""
    from mobrl.core.errors import UserError

    if env_config.get("mode") not in MULTI_AGENT_MODES:
        name = env_config.get("scenario") or env_config.get("id")
        raise UserError(
            f"algo={algo}'s critic pools the agents of each step; scenario={name} has one "
            "agent. Use a multi-agent env (env=ma, env=cells, ...) or algo=ppo."
        )


def _with_agents(
    env_config: dict[str, Any], policies: Any, sampler: str, seed: int, ue_metrics: bool
) -> dict[str, Any]:
    """`env_config` with its policy mapping and sampler (and what the UE-slot sampler reads)."""
    env_config["policies"] = policy_spec(env_config, policies)
    env_config["sampler"] = resolve_sampler(env_config, sampler)
    if env_config["sampler"] == "ue_slots":
        env_config["seed"] = int(seed)
        env_config["ue_metrics"] = bool(ue_metrics)
    return env_config


def retarget(env_config: dict[str, Any], scenario: str) -> dict[str, Any]:
    """`env_config` (of a policy shared by every agent) on another layout of its kind: the
    kind's settings kept (mode, engine, observation, reward), agents, policy mapping and
    sampler redone for that layout."""
    from mobrl.scenarios.kinds import kind_of

    moved = kind_of(env_config).retarget(env_config, scenario)
    for key in ("policies", "sampler", "seed", "ue_metrics"):
        moved.pop(key, None)
    seed, ue_metrics = env_config.get("seed", 0), env_config.get("ue_metrics", True)
    return _with_agents(moved, SHARED_POLICY, "auto", seed, ue_metrics)


def resolve_sampler(env_config: dict[str, Any], requested: str) -> str | None:
    """`ue_slots` or `multi_agent` for multi-agent mobile scenarios (`env.sampler`), None for
    the others; a `ue_slots` request that cannot apply is a one-line error naming why."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.scenarios.kinds import kind_of

    if requested not in SAMPLERS:
        raise unknown_choice("env.sampler", str(requested), SAMPLERS, "Use env.sampler=auto.")
    fits = kind_of(env_config).ue_slots(env_config)
    if fits is None or not is_multi_agent(env_config):
        return None
    if requested == "ue_slots" and env_config.get("decide", "at_once") != "at_once":
        raise UserError(
            "env.sampler=ue_slots samples every UE each env step; with env.decide="
            f"{env_config['decide']} one group of UEs acts per env step. Use env.sampler=auto "
            "or multi_agent."
        )
    if requested == "ue_slots" and not fits:
        raise UserError(
            f"env.sampler=ue_slots needs one shared policy (env.policies=shared), UEs present "
            f"for the whole episode (arrival model 'always') and engine=fast; scenario="
            f"{env_config['scenario']} does not qualify. Use env.sampler=auto or multi_agent."
        )
    return "ue_slots" if fits and requested != "multi_agent" else "multi_agent"


def num_ues(env_config: dict[str, Any]) -> int:
    return len(agent_ids(env_config))


def make_env(env_config: dict[str, Any], rllib: bool = False) -> Any:
    """Create the environment described by `env_config` (see `env_config_from`). `rllib`:
    for RLlib's runners, whose multi-agent envs must subclass its `MultiAgentEnv` (and so
    import Ray); evaluation and rendering get the same env without that import."""
    from mobrl.envs.slots import uses_slots
    from mobrl.scenarios.kinds import kind_of

    if uses_slots(env_config) and "num_envs" in env_config:  # RLlib's vector entry point
        from mobrl.scenarios.kinds.mobile import make_slot_env

        return make_slot_env(env_config, env_config["num_envs"])
    return kind_of(env_config).make_env(env_config, rllib)


#: env modes with several agents: one per UE (`ma`, also the arena's and custom envs'), one
#: per station (`cells`), and a network agent above them (`hierarchical`)
MULTI_AGENT_MODES = ("ma", "cells", "hierarchical")


def is_multi_agent(env_config: dict[str, Any]) -> bool:
    return env_config["mode"] in MULTI_AGENT_MODES


def agent_ids(env_config: dict[str, Any]) -> list[str]:
    """The agents of a multi-agent scenario (empty for single-agent ones)."""
    from mobrl.scenarios.kinds import kind_of

    return kind_of(env_config).agents(env_config) if is_multi_agent(env_config) else []


POLICY_MAPPINGS = ("shared", "per_agent")
#: characters that make a member of an `env.policies` group a pattern (fnmatch's)
_PATTERN = "*?["


def _is_pattern(member: str) -> bool:
    return any(c in member for c in _PATTERN)


def _matching(agents: list[str], members: list[str], policy: str) -> list[str]:
    """The agents a group's members name: agent ids, or patterns such as `relay_*` (fnmatch);
    a member that names no agent is a one-line error."""
    from fnmatch import fnmatchcase

    from mobrl.core.errors import UserError, unknown_choice

    found: list[str] = []
    for member in members:
        if _is_pattern(member):
            hits = [a for a in agents if fnmatchcase(str(a), member)]
            if not hits:
                shown = ", ".join(map(str, agents[:6])) + (" ..." if len(agents) > 6 else "")
                raise UserError(
                    f"the pattern '{member}' of env.policies.{policy} matches no agent (the "
                    f"agents: {shown}). Fix the pattern."
                )
            found += [a for a in hits if a not in found]
        elif member not in agents:
            raise unknown_choice(
                f"agent in env.policies.{policy}:", member, map(str, agents), "Fix the group."
            )
        elif member not in found:
            found.append(member)
    return found


def _group_mapping(agents: list[str], requested: Any) -> dict[str, str]:
    """Agent id -> policy of `env.policies` groups: the agents each group names outright,
    then those its patterns match that no group named; an agent in two groups (named twice,
    or matched by two groups' patterns) is a one-line error."""
    from mobrl.core.errors import UserError

    groups = {
        str(policy): [str(m) for m in ([members] if isinstance(members, str) else members)]
        for policy, members in requested.items()
    }
    named: dict[str, str] = {}
    matched: dict[str, str] = {}
    for patterns, found in ((False, named), (True, matched)):
        for policy, members in groups.items():
            chosen = [m for m in members if _is_pattern(m) == patterns]
            for agent in _matching(agents, chosen, policy):
                if patterns and agent in named:
                    continue
                if found.setdefault(agent, policy) != policy:
                    raise UserError(
                        f"agent '{agent}' is in two groups of env.policies ({found[agent]}, "
                        f"{policy}). Put each agent in one group."
                    )
    return {**named, **matched}


def policy_spec(env_config: dict[str, Any], requested: Any) -> dict[str, str] | None:
    """Agent id -> policy id for `env.policies`: `shared` (one policy, id "shared"),
    `per_agent` (one policy per agent, named like it) or {policy: [agent ids or patterns such
    as `relay_*`; an agent named outright is not taken by another group's pattern]}; None for
    single-agent scenarios."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.scenarios.kinds import kind_of

    agents = agent_ids(env_config)
    if not agents:
        return None
    if requested is None:
        requested = kind_of(env_config).default_policy_mapping(env_config)
    if hasattr(requested, "items"):  # a mapping of groups (DictConfig or dict)
        mapping = _group_mapping(agents, requested)
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
    from mobrl.envs.slots import uses_slots

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

    from mobrl.core.errors import UserError, first_line
    from mobrl.scenarios.kinds import kind_of

    name = env_config.get("scenario") or env_config["id"]
    problem = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            kind_of(env_config).check_native(env_config)
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
            f"scenario '{name}' fails the env check: {problem}. "
            f"{kind_of(env_config).check_fix(env_config)}"
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

    # Tune keys its registry by the Ray job id it saw first in this process; a process that
    # joins Ray again (the next job of a parallel multirun) is a new job whose workers would
    # not find the env under the old key
    registry._global_registry._prefix = None
    registry.register_env(ENV_NAME, make_rllib_env)


def make_rllib_env(env_config: dict[str, Any]) -> Any:
    """The env creator mobrl registers with Tune: `make_env` for RLlib's runners. Where the
    run says where env failures go (`env_config["failures"]`), an exception from making the
    env, its reset or its step is recorded there first (`core.envfailures`): an env runner
    whose env raises dies, and its log is not where the user looks."""
    from mobrl.core import envfailures
    from mobrl.core.faults import arm_env
    from mobrl.scenarios.kinds import kind_of

    folder = env_config.get("failures")
    runner = int(getattr(env_config, "worker_index", 0) or 0)
    label = kind_of(env_config).label(env_config) if folder else ""
    with envfailures.making(folder, label, runner):
        env = make_env(env_config, rllib=True)
    env = arm_env(env, env_config.get("fault"))
    if not folder:
        return env
    # a remote env runner (index 1 and up) that RLlib will not restart ends cleanly
    end = runner > 0 and not (env_config.get("watch") or {}).get("restart")
    return envfailures.guard(env, folder, label, runner, end)
