"""A simulator in its own process (`scenario=external scenario.address=HOST:PORT`), in any
language, speaking `mobrl.external`'s protocol (docs/external.md).

The driver connects once to learn the simulator's agents and spaces; each env runner then
connects to its own address (`scenario.address=[A, B]`: env runner i to the i-th, cycling;
one address serves every runner if the simulator takes several connections), and every
evaluation episode opens a connection of its own. Connection settings are `scenario.kwargs`:
`timeout` (seconds to reach the simulator, default 30), `step_timeout` (seconds a reset or
step may take, default 60) and `encoding` (`msgpack` or `json`).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from mobrl.scenarios.kinds.custom import CustomKind, check_metrics, env_fields_seen

#: connection settings `scenario.kwargs` may hold, with their defaults
SETTINGS = {"timeout": 30.0, "step_timeout": 60.0, "encoding": "msgpack"}


class ExternalKind(CustomKind):
    name = "external"
    remote = True

    def check(self, cfg: Any) -> None:
        addresses(cfg.scenario.get("address"))
        settings(cfg.scenario.kwargs)
        check_metrics(cfg)

    def env_fields(self, cfg: Any) -> dict[str, Any]:
        self.check(cfg)
        found = addresses(cfg.scenario.address)
        connection = settings(cfg.scenario.kwargs)
        probed = probe(found[0], json.dumps(connection, sort_keys=True))
        return {
            "id": found[0],
            "addresses": found,
            "connection": connection,
            **env_fields_seen(cfg, probed),
        }

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        from mobrl.external import connect
        from mobrl.scenarios.kinds.custom import adapted

        env = connect(runner_address(env_config), **env_config["connection"])
        return adapted(env, env_config, rllib)

    def label(self, env_config: dict[str, Any]) -> str:
        return f"scenario.address={runner_address(env_config)}"

    def check_native(self, env_config: dict[str, Any]) -> None:
        """The protocol's client checks observations against the announced spaces itself."""

    def check_fix(self, env_config: dict[str, Any]) -> str:
        return f"Fix the simulator at {env_config['id']}."

    def callbacks(self, cfg: Any, env_config: dict[str, Any]) -> type | None:
        from mobrl.envs.callbacks import EpisodeMetricsCallback

        return EpisodeMetricsCallback

    def baselines(self, env_config: dict[str, Any]) -> list[str]:
        return ["random"]

    def spaces(self, conf: dict[str, Any]) -> str:
        return "a simulator over the network (scenario.address=HOST:PORT)"

    def where(self, cfg: Any) -> str:
        return f"scenario.address={cfg.scenario.get('address')}"


def runner_address(env_config: dict[str, Any]) -> str:
    """The simulator an env runner connects to: RLlib's EnvContext says which runner builds
    the env (0: the driver's own), and runner i takes the i-th address, cycling."""
    found = env_config["addresses"]
    runner = max(int(getattr(env_config, "worker_index", 0) or 0), 1) - 1
    return found[runner % len(found)]


def addresses(value: Any) -> list[str]:
    """`scenario.address` as a list of `HOST:PORT`, or a one-line error."""
    from mobrl.core.errors import UserError

    if value is None or value == "" or (not isinstance(value, str) and len(value) == 0):
        raise UserError(
            "scenario=external needs the simulator's address. Add scenario.address=HOST:PORT "
            "(or a list, one per env runner: 'scenario.address=[h1:5555,h2:5555]')."
        )
    found = [str(value)] if isinstance(value, str) else [str(v) for v in value]
    for address in found:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(
                f"scenario.address '{address}' is not HOST:PORT. Write it like "
                "scenario.address=127.0.0.1:5555."
            )
    return found


def settings(kwargs: Any) -> dict[str, Any]:
    """The connection settings of `scenario.kwargs`, defaults filled in, or a one-line error."""
    from omegaconf import DictConfig, OmegaConf

    from mobrl.core.errors import UserError, unknown_choice

    given = (
        OmegaConf.to_container(kwargs, resolve=True)
        if isinstance(kwargs, DictConfig)
        else dict(kwargs or {})
    )
    for key in given:
        if key not in SETTINGS:
            raise unknown_choice(
                "scenario.kwargs key of scenario=external", key, SETTINGS, "Fix scenario.kwargs."
            )
    out = {**SETTINGS, **given}
    for key in ("timeout", "step_timeout"):
        try:
            out[key] = float(out[key])
        except (TypeError, ValueError):
            out[key] = -1.0
        if not out[key] > 0:
            raise UserError(
                f"scenario.kwargs.{key}={given.get(key)} is not a positive number of seconds. "
                f"Fix it (default {SETTINGS[key]})."
            )
    if out["encoding"] not in ("msgpack", "json"):
        raise unknown_choice(
            "scenario.kwargs.encoding", str(out["encoding"]), ("msgpack", "json"), "Fix it."
        )
    return out


@cache
def probe(address: str, connection_json: str) -> dict[str, Any]:
    """What the driver learns from the simulator's hello (once per address and settings)."""
    from mobrl.envs.foreign import close
    from mobrl.external import connect
    from mobrl.scenarios.kinds.custom import seen

    env = connect(address, **json.loads(connection_json))
    try:
        if hasattr(env, "possible_agents"):
            agents = [str(a) for a in env.possible_agents]
            spaces = [
                (env.observation_spaces[a], env.action_spaces[a]) for a in env.possible_agents
            ]
            flavour = "rllib"
        else:
            agents, spaces, flavour = [], [(env.observation_space, env.action_space)], "gym"
    finally:
        close(env)
    return seen(flavour, agents, spaces)


KIND = ExternalKind()
