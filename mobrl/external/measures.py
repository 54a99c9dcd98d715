"""mobrl's own mobile-env envs behind the protocol: `mobile(...)`, the env `python -m
mobrl.external mobrl.external:mobile` serves (a scenario as mobrl trains it with RLlib's
multi-agent runner, without Ray), and the measures a served mobile-env core adds to each reply
(`Measures`), which the client exposes as `env.core` (`RemoteCore`)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from mobrl.external.spaces import arrays_from_wire, arrays_to_wire


def mobile(
    scenario: str = "small",
    mode: str = "ma",
    *,
    path: str | None = None,
    engine: str = "fast",
    obs: str = "mobile",
    topk: int = 3,
    team_reward: float = 0.0,
    reward: str = "mobile",
    kwargs: dict[str, Any] | None = None,
    render_mode: str | None = None,
) -> Any:
    """The env mobrl trains on for `scenario=<scenario> env=<mode>` with RLlib's multi-agent
    runner (`env.sampler=multi_agent`), without Ray: `UEAgentsEnv` for `ma`, the mobile-env
    core for `central`. The other arguments are mobrl's config keys with its defaults
    (`engine`, `env.obs`, `env.topk`, `env.team_reward`, `env.reward`; `kwargs`: mobile-env
    config entries such as `seed`, as `scenario.kwargs`; `path`: a layout file instead of a
    scenario name). The env is made as training makes it: the kind's config check, its
    `env_config` entries as `mobrl.envs.factory.env_config_from` writes them (less the policy
    mapping and sampler, which only RLlib reads), and the kind's `make_env(env_config,
    rllib=False)`. Bad values are one-line `UserError`s, as from `mobrl train`."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from mobrl import scenarios
    from mobrl.core.errors import UserError
    from mobrl.scenarios.kinds import env_config_of, kind_of

    if kwargs is not None and not isinstance(kwargs, dict):
        raise UserError(f"kwargs={kwargs!r} is not a mapping of mobile-env config entries.")
    layout = Path(path).expanduser() if path else scenarios.path_of(scenario)
    name = layout.stem
    # the keys of mobrl's composed config that the kind reads (conf/env/ma.yaml,
    # conf/config.yaml, a layout's scenario node of mobrl.config.schema.register_schema)
    cfg = OmegaConf.create({
        "scenario": {"name": name, "kind": "mobile", "id": name, "path": str(layout),
                     "kwargs": dict(kwargs or {})},
        "env": {"mode": mode, "policies": None, "sampler": "multi_agent", "obs": obs,
                "topk": topk, "team_reward": team_reward, "reward": reward},
        "engine": engine,
        "run": {"seed": 0, "ue_metrics": True},
    })  # fmt: skip
    kind = kind_of(cfg)
    kind.check(cfg)
    # the factory's env_config without the agents' policies (scenarios.kinds.external imports
    # this package, and scenarios/ never imports the factory: pyproject's contracts)
    env = kind.make_env(env_config_of(cfg, render_mode), rllib=False)
    env.mobrl_name = f"mobrl scenario {name} (env={mode})"
    return env


class Measures:
    """What the server adds to each reset and step reply of an env with a mobile-env core
    behind it: its last step as `mobrl.envs.netstats.step_arrays` returns it, exactly."""

    def __init__(self, core: Any, binary: bool) -> None:
        from mobrl.envs.netstats import step_arrays

        self.core, self.binary, self._arrays = core, binary, step_arrays
        self.users = sorted(core.users)

    @classmethod
    def of(cls, env: Any, binary: bool) -> Measures | None:
        """The measures of `env`, or None without a mobile-env core (mobile-env is never
        imported for an env that does not have one: it would be in `sys.modules` already)."""
        if "mobile_env" not in sys.modules:
            return None
        from mobrl.envs.wrappers import find_core

        core = find_core(env)
        return cls(core, binary) if core is not None else None

    def wire(self, reset: bool) -> dict[str, Any]:
        if reset:
            self.users = sorted(self.core.users)
            try:  # a core that has not stepped yet may have nothing to hand over
                arrays = arrays_to_wire(self._arrays(self.core, self.users), self.binary)
            except (AttributeError, KeyError, TypeError, ValueError):
                arrays = None
        else:
            arrays = arrays_to_wire(self._arrays(self.core, self.users), self.binary)
        return {"num_stations": int(self.core.NUM_STATIONS), "users": self.users,
                "arrays": arrays}  # fmt: skip


class RemoteCore:
    """`env.core` of a client env whose simulator sends measures: what mobrl's metric
    recorder reads of a mobile-env core (`NUM_STATIONS`, `users`, `metric_arrays()`), taken
    from the last reset or step reply."""

    def __init__(self, measures: dict[str, Any]) -> None:
        self.NUM_STATIONS = 0
        self.users: list[Any] = []
        self._wire: Any = None
        self._arrays: tuple[np.ndarray, ...] | None = None
        self.update(measures)

    def update(self, measures: dict[str, Any]) -> None:
        self.NUM_STATIONS = int(measures["num_stations"])
        users = measures["users"]
        if users != self.users:
            self.users = list(users)
        self._wire, self._arrays = measures.get("arrays"), None  # decoded when asked

    def metric_arrays(self) -> tuple[Any, ...]:
        """The last step as the served env's `step_arrays` gave it: (utility, rate, links,
        snr_db), links and snr_db as (BS, UE) arrays, or on the sparse path links as a tuple
        of (station, UE) index arrays and the links' SNRs; dtypes and bits kept."""
        if self._arrays is None:
            if self._wire is None:
                raise RuntimeError("the external env has not stepped yet: no measures")
            self._arrays = arrays_from_wire(self._wire)
        return self._arrays

    def __repr__(self) -> str:
        return f"RemoteCore(NUM_STATIONS={self.NUM_STATIONS}, users={len(self.users)})"
