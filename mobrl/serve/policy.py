"""The policy `mobrl serve` answers with: a zoo entry (numpy alone) or a checkpoint's RLModules,
loaded as `mobrl evaluate` loads them (`targets.target_for`, `policies.load_policy` or
`policy_for_env`), acting through their own `act`; and what a client must send it (the input
size, the actions and the agent ids of each of its networks), checked before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: how many ids a one-line error lists before "..."
_LISTED = 6


class BadRequest(Exception):
    """A request the policy cannot act on: the service answers `status` with the message as
    one line (the value at fault and the fix)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Network:
    """One network of the policy: the agents it acts for (None: any id), what it observes
    and how many actions it has (a list: one count per sub-action, MultiDiscrete)."""

    policy_id: str
    agents: tuple[str, ...] | None
    obs_shape: tuple[int, ...]
    actions: int | list[int]

    @property
    def obs_size(self) -> int:
        return math.prod(self.obs_shape)

    def describe(self) -> dict[str, Any]:
        return {
            "policy_id": self.policy_id,
            "agents": "any" if self.agents is None else list(self.agents),
            "observation_size": self.obs_size,
            "actions": self.actions,
        }


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _LISTED else "")


def _action_count(space: Any) -> int | list[int]:
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return [int(n) for n in space.nvec]
    from mobrl.core.errors import UserError

    raise UserError(
        f"mobrl serve answers policies with discrete actions; this one acts in {space}. "
        "Serve a policy of a mobile-env layout or a discrete Gymnasium task."
    )


def _zoo_networks(policy: Any) -> list[Network]:
    """The one network of a zoo entry: its first layer's width in, its head's logits out."""
    linear = [value for kind, value in policy.layers if kind == "linear"]
    width = int(linear[0][0].shape[1])
    actions: int | list[int] = (
        int(linear[-1][1].shape[0]) if policy.nvec is None else list(policy.nvec)
    )
    return [Network("shared", None, (width,), actions)]


def _module_networks(policy: Any, env_config: dict[str, Any]) -> list[Network]:
    """A checkpoint's networks: one RLModule for every agent (any id), or one per group of
    the env's agents (`env.policies`), each with the agents mapped to it."""
    modules = policy.modules
    mapping = env_config.get("policies") or {}
    shared = len(modules) == 1 or not mapping
    networks = []
    for module_id, module in sorted(modules.items()):
        agents = None if shared else tuple(a for a, p in mapping.items() if p == module_id)
        shape = tuple(int(n) for n in (module.observation_space.shape or ()))
        networks.append(Network(module_id, agents, shape, _action_count(module.action_space)))
    return networks


class ServedPolicy:
    """The loaded policy, what it expects, and `act` on a request's observations."""

    def __init__(
        self,
        ref: str,
        model: str,
        policy: Any,
        env_config: dict[str, Any],
        networks: list[Network],
        note: str,
    ) -> None:
        self.ref = ref
        self.model = model  # the name of /v1/models/NAME:predict
        self.policy = policy
        self.env_config = env_config
        self.networks = networks
        self.note = note
        self._explorer: Any = None
        self._by_agent = {a: n for n in networks if n.agents for a in n.agents}
        self.multi_agent = env_config.get("mode") in ("ma", "cells", "hierarchical")

    @classmethod
    def load(
        cls, checkpoint: str, overrides: list[str], pick: str = "best", trust: bool = False
    ) -> ServedPolicy:
        """The policy `mobrl evaluate --checkpoint CHECKPOINT OVERRIDES` would play, in the env
        it would play it in (a zoo entry on its own env loads with numpy alone)."""
        from mobrl.evaluation import zoo
        from mobrl.evaluation.policies import load_policy, policy_for_env
        from mobrl.evaluation.targets import target_for

        target = target_for(Path(checkpoint), overrides, pick)
        if zoo.is_ref(checkpoint):
            # its record's env needs no check; a layout named by overrides does
            load = policy_for_env if overrides else load_policy
            policy = load(checkpoint, target.env_config)
            networks = _zoo_networks(policy)
            model = checkpoint.removeprefix(zoo.PREFIX)
        else:
            policy = policy_for_env(target.checkpoint, target.env_config, trust=trust)
            networks = _module_networks(policy, target.env_config)
            model = "policy"
        ref = checkpoint if zoo.is_ref(checkpoint) else str(target.checkpoint)
        return cls(ref, model, policy, target.env_config, networks, target.note)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled in a Ray Serve replica: a checkpoint's policy made again there (its
        numpy actors are keyed by its modules' ids, which unpickling changes)."""
        import sys

        self.__dict__.update(state)
        self._explorer = None
        policies = sys.modules.get("mobrl.evaluation.policies")  # imported if it is one
        p = self.policy
        if policies is not None and isinstance(p, policies.TrainedPolicy):
            self.policy = policies.TrainedPolicy(p.modules, p.env_config, p.explore)

    # --- what it expects ---------------------------------------------------------------------

    @property
    def scenario(self) -> str:
        return str(self.env_config.get("scenario") or self.env_config.get("id"))

    @property
    def observation(self) -> dict[str, Any]:
        """What it observes: the env's `env.obs` (and `env.topk`), a cell's observation with
        its `env.neighbours` slots (mobrl.envs.cells; a turn's columns after them with
        `decide: in_turns`, mobrl.envs.cell_turns), the network agent's above cells held
        at a zoo policy (mobrl.envs.hierarchy), or the task's own."""
        obs = self.env_config.get("obs")
        out: dict[str, Any] = {"name": obs or "the task's own"}
        if self.env_config.get("mode") in ("cells", "hierarchical"):
            out = {"name": "cell", "neighbours": self.env_config.get("neighbours")}
            if self.env_config.get("decide") == "in_turns":  # mobrl.envs.cell_turns
                out["decide"] = "in_turns"
            if self.env_config.get("cell_policy"):  # the network agent alone
                out = {"name": "network", "cells": self.env_config["cell_policy"]}
        if self.env_config.get("topk") is not None and obs and obs.startswith("topk"):
            out["topk"] = self.env_config["topk"]
        if len(self.networks) == 1:
            out["size"] = self.networks[0].obs_size
        return out

    def layout_agents(self) -> list[str]:
        mapping = self.env_config.get("policies") or {}
        return list(mapping)

    def agents_text(self) -> str:
        """Which agent ids a request may name, in words."""
        if self._by_agent:
            return f"the layout's agents: {_listed(sorted(self._by_agent))}"
        layout = self.layout_agents()
        own = f" (the layout's are {layout[0]} ... {layout[-1]})" if layout else ""
        if not self.multi_agent:
            return "any id: each observation is one env's, acted on alone"
        return f"any id: one shared policy acts for every agent{own}"

    def describe(self) -> dict[str, Any]:
        """What /healthz tells: ready, the policy, its scenario and what it expects."""
        out: dict[str, Any] = {
            "status": "ready",
            "policy": self.ref,
            "model": self.model,
            "scenario": self.scenario,
            "env_mode": self.env_config.get("mode"),
            "observation": self.observation,
        }
        if len(self.networks) == 1:
            out["actions"] = self.networks[0].actions
        out["agents"] = self.agents_text()
        out["networks"] = [n.describe() for n in self.networks]
        out["explore_default"] = False
        return out

    def network_for(self, agent: str) -> Network:
        if not self._by_agent:
            return self.networks[0]
        network = self._by_agent.get(agent)
        if network is None:
            from mobrl.core.errors import closest_first

            raise BadRequest(
                f"unknown agent id {agent!r}: this policy acts for "
                f"{_listed(closest_first(agent, self._by_agent))}. Name one of those."
            )
        return network

    # --- acting -----------------------------------------------------------------------------

    def observations(
        self, given: dict[str, list[float]], label: str = "agent "
    ) -> dict[str, np.ndarray]:
        """Each agent's observation as the network's array, or a `BadRequest` naming the first
        agent whose observation has the wrong size or a value that is not finite (`label`: how
        messages name an agent, before its id; empty: the id is a name already)."""
        if not given:
            raise BadRequest(
                'no observations: send {"observations": {"<agent id>": [numbers]}} with at '
                "least one agent."
            )
        out = {}
        for agent, values in given.items():
            network = self.network_for(agent)
            who = f"{label}{agent!r}" if label else agent
            row = np.asarray(values, dtype=np.float64)
            if row.shape != (network.obs_size,):
                raise BadRequest(
                    f"observation of {who} has {row.size} values; "
                    f"{self._what(network)} takes {network.obs_size}. Send {network.obs_size} "
                    "numbers per agent (GET /healthz tells what it observes)."
                )
            bad = ~np.isfinite(row)
            if bad.any():
                i = int(np.argmax(bad))
                raise BadRequest(
                    f"observation of {who} has {values[i]} at index {i}. Send finite "
                    "numbers only (no NaN or Infinity)."
                )
            out[agent] = row.reshape(network.obs_shape)
        return out

    def _what(self, network: Network) -> str:
        if len(self.networks) > 1:
            return f"its network {network.policy_id!r}"
        obs = self.observation["name"]
        k = self.observation.get("topk")
        return f"the policy (env.obs={obs}" + (f", env.topk={k})" if k else ")")

    def act(self, observations: dict[str, np.ndarray], explore: bool = False) -> dict[str, Any]:
        """Each agent's action, by the policy's own `act` (deterministic unless `explore`)."""
        policy = self.explorer() if explore else self.policy
        if self.multi_agent:
            chosen = policy.act(observations)
        else:  # each observation is one env's
            chosen = {agent: policy.act(obs) for agent, obs in observations.items()}
        return {agent: _plain(chosen[agent]) for agent in observations}

    def explorer(self) -> Any:
        """The same networks sampling their actions (made on first use)."""
        if self._explorer is None:
            from mobrl.evaluation.policies import TrainedPolicy
            from mobrl.evaluation.zoo import ZooPolicy

            p = self.policy
            if isinstance(p, ZooPolicy):
                self._explorer = ZooPolicy(p.layers, p.env_config, p.nvec, explore=True)
            elif isinstance(p, TrainedPolicy):
                self._explorer = TrainedPolicy(p.modules, p.env_config, explore=True)
            else:
                raise BadRequest('this policy cannot sample actions. Send "explore": false.')
        return self._explorer


def _plain(action: Any) -> int | list[int]:
    """An action as JSON: an int, or a list of ints for a MultiDiscrete one."""
    a = np.asarray(action)
    return int(a) if a.ndim == 0 else [int(x) for x in a.ravel()]
