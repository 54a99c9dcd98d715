"""The user's own env by import path (`scenario=custom scenario.entry=MODULE:CALLABLE`).

The callable (found on the working directory and PYTHONPATH, called with `scenario.kwargs`)
returns a Gymnasium `Env`, a PettingZoo `ParallelEnv` or AEC env, or an RLlib `MultiAgentEnv`;
`mobrl.envs.foreign` puts it in the shape mobrl's machinery reads. The env is built once in
the driver to learn its agents and spaces (`probe`); `env_config` keeps the directory its
module came from, so a Ray worker or a later `mobrl evaluate` started elsewhere finds it.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from mobrl.scenarios.kinds.base import ScenarioKind, action_kind


class CustomKind(ScenarioKind):
    name = "custom"
    probes = True  # `probe`: the env built once (a simulator's: reached, `external`)

    def check(self, cfg: Any) -> None:
        from mobrl.core.errors import UserError

        if not cfg.scenario.get("entry"):
            raise UserError(
                f"scenario={cfg.scenario.name} needs the callable that makes the env. Add "
                "scenario.entry=MODULE:CALLABLE, e.g. scenario.entry=my_envs:make_env."
            )
        check_metrics(cfg)

    def env_fields(self, cfg: Any) -> dict[str, Any]:
        from omegaconf import OmegaConf

        from mobrl.core.imports import absolute

        self.check(cfg)
        entry = absolute(cfg.scenario.entry)
        kwargs = OmegaConf.to_container(cfg.scenario.kwargs, resolve=True)
        found = probe(entry, json.dumps(kwargs, sort_keys=True, default=str), os.getcwd())
        return {"id": entry, "entry": entry, **env_fields_seen(cfg, found)}

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        return adapted(build(env_config), env_config, rllib)

    def action_space(self, cfg: Any) -> str:
        return self.env_fields(cfg)["action_kind"]

    def agents(self, env_config: dict[str, Any]) -> list[str]:
        return list(env_config.get("agents") or [])

    def default_policy_mapping(self, env_config: dict[str, Any]) -> str | None:
        return "shared" if env_config.get("same_spaces") else "per_agent"

    def callbacks(self, cfg: Any, env_config: dict[str, Any]) -> type | None:
        from mobrl.envs.callbacks import EpisodeMetricsCallback

        return EpisodeMetricsCallback

    def check_native(self, env_config: dict[str, Any]) -> None:
        """PettingZoo's API tests, or Gymnasium's env checker, on the env as it is written
        (an RLlib env meets RLlib's checker in `factory.check_env`)."""
        import contextlib
        import io

        from mobrl.envs.foreign import close

        flavour = env_config["flavour"]
        if flavour == "rllib":
            return
        env = build({**env_config, "render_mode": None})
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                if flavour == "parallel":
                    from pettingzoo.test import parallel_api_test

                    parallel_api_test(env, num_cycles=50)
                elif flavour == "aec":
                    from pettingzoo.test import api_test

                    api_test(env, num_cycles=50)
                else:
                    from gymnasium.utils.env_checker import check_env

                    check_env(env.unwrapped, skip_render_check=True, skip_close_check=True)
        finally:
            close(env)

    def check_fix(self, env_config: dict[str, Any]) -> str:
        return f"Fix the env that scenario.entry={env_config['entry']} makes."

    def baselines(self, env_config: dict[str, Any]) -> list[str]:
        return ["random"]

    def spaces(self, conf: dict[str, Any]) -> str:
        return "your env by import path (scenario.entry=MODULE:CALLABLE)"

    def where(self, cfg: Any) -> str:
        return f"scenario.entry={cfg.scenario.get('entry')}"

    def label(self, env_config: dict[str, Any]) -> str:
        return f"scenario.entry={env_config['entry']}"


def check_metrics(cfg: Any) -> None:
    """`scenario.metrics` parses, or a one-line error."""
    from mobrl.core.errors import UserError
    from mobrl.envs.foreign import parse_metrics

    try:
        parse_metrics(cfg.scenario.get("metrics"))
    except ValueError as err:
        raise UserError(f"{err}. Fix scenario.metrics.") from None


def env_fields_seen(cfg: Any, found: dict[str, Any]) -> dict[str, Any]:
    """The `env_config` entries of an env the driver probed (`found`: `seen`'s and more) and
    of the metrics the config asks for."""
    return {
        **found,
        "mode": "ma" if found["agents"] else "gym",
        "metrics": [str(m) for m in cfg.scenario.get("metrics") or []],
        "agent_metrics": bool(cfg.run.ue_metrics),  # each agent's values, too
    }


def adapted(env: Any, env_config: dict[str, Any], rllib: bool) -> Any:
    """The user's env in mobrl's shape (`mobrl.envs.foreign`), counting `scenario.metrics`;
    `rllib`: multi-agent ones as RLlib `MultiAgentEnv`s, for RLlib's runners."""
    from mobrl.envs.foreign import adapt

    adapters = None
    if rllib and env_config["flavour"] != "gym":
        from mobrl.envs.rllib_env import FOREIGN as adapters
    per_agent = env_config.get("agent_metrics", True)
    return adapt(env, env_config["flavour"], env_config.get("metrics"), adapters, per_agent)


def build(env_config: dict[str, Any]) -> Any:
    """The env the user's callable makes for `env_config` (as they wrote it, not adapted)."""
    import inspect

    from mobrl.core.errors import UserError, first_line
    from mobrl.core.imports import import_object, on_sys_path
    from mobrl.envs.foreign import FLAVOURS, flavour_of

    on_sys_path([env_config.get("module_dir")])
    entry = env_config["entry"]
    make = import_object(entry, "scenario.entry")
    if not callable(make):
        raise UserError(
            f"scenario.entry={entry} is a {type(make).__name__}, not a callable. Name the "
            "function or class that makes the env."
        )
    kwargs = dict(env_config.get("kwargs") or {})
    render_mode = env_config.get("render_mode")
    if render_mode is not None and "render_mode" not in kwargs:
        try:
            params = inspect.signature(make).parameters
        except (TypeError, ValueError):
            params = {}
        if "render_mode" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
            kwargs["render_mode"] = render_mode
    try:
        env = make(**kwargs)
    except TypeError as err:
        raise UserError(
            f"scenario.kwargs do not fit scenario.entry={entry}: {first_line(err)}. Fix or "
            "remove scenario.kwargs."
        ) from err
    except UserError:
        raise
    except Exception as err:
        raise UserError(
            f"scenario.entry={entry} raised {type(err).__name__}: {first_line(err)}. Fix the "
            "callable or scenario.kwargs."
        ) from err
    if flavour_of(env) is None:
        kinds = ", ".join(FLAVOURS.values())
        raise UserError(
            f"scenario.entry={entry} returned a {type(env).__name__}, not an env mobrl can "
            f"train on ({kinds}). Return one of those."
        )
    if render_mode is not None and getattr(env, "render_mode", render_mode) is None:
        env.render_mode = render_mode  # an env that takes its render mode as an attribute
    return env


def seen(flavour: str, agents: list[str], spaces: list[tuple[Any, Any]]) -> dict[str, Any]:
    """What a probe tells: the flavour, the agents (empty: one), whether every agent has the
    same spaces (then one policy by default), and the kind of the first action space."""
    return {
        "flavour": flavour,
        "agents": agents,
        "same_spaces": all(s == spaces[0] for s in spaces),
        "action_kind": action_kind(spaces[0][1]),
    }


@cache
def probe(entry: str, kwargs_json: str, cwd: str) -> dict[str, Any]:
    """What the driver learns by building the env once: its flavour, agents (empty: single
    agent), whether every agent has the same spaces, its action space's kind, and the folder
    of its module (once per entry, kwargs and working directory in a process)."""
    from mobrl.core.errors import UserError, first_line
    from mobrl.core.imports import module_folder
    from mobrl.envs.foreign import adapt, close, flavour_of

    env_config = {"entry": entry, "kwargs": json.loads(kwargs_json)}
    raw = build(env_config)
    flavour = flavour_of(raw)
    try:
        env = adapt(raw, flavour)
        if flavour == "gym":
            agents: list[str] = []
            spaces = [(env.observation_space, env.action_space)]
        else:
            agents = list(env.possible_agents)
            spaces = [(env.observation_spaces[a], env.action_spaces[a]) for a in agents]
    except Exception as err:
        raise UserError(
            f"scenario.entry={entry}: its env does not say its agents and spaces "
            f"({first_line(err)}). Give it possible_agents and per-agent spaces."
        ) from err
    finally:
        close(raw)
    if flavour != "gym" and not agents:
        raise UserError(
            f"scenario.entry={entry} makes a multi-agent env without agents (possible_agents "
            "is empty). Set possible_agents before reset."
        )
    twice = sorted({a for a in agents if agents.count(a) > 1})
    if twice:
        raise UserError(
            f"scenario.entry={entry}: two agents share the name '{twice[0]}' (as text; mobrl "
            "names policies and metrics after agents). Give agents distinct names."
        )
    return {**seen(flavour, agents, spaces), "module_dir": module_folder(entry)}


KIND = CustomKind()
