"""One env behind one connection, on the server's side: the hello reply announcing it, and
each request (reset, step, render) answered as a plain reply dict, with encoders built once.

Three kinds of env are served: a Gymnasium `Env` (single agent), a PettingZoo `ParallelEnv`
(`possible_agents`, `observation_space(agent)`) and an RLlib-style multi-agent env
(`possible_agents`, `observation_spaces` dicts, `"__all__"` in its done dicts), duck-typed.
The multi-agent replies carry what the env returned, `"__all__"` and `"__common__"` included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.external import spaces as wire_spaces
from mobrl.external.measures import Measures
from mobrl.external.spaces import SpaceError, frame_to_wire, plain
from mobrl.external.wire import PROTOCOL_VERSION


def is_multi_agent(env: Any) -> bool:
    return getattr(env, "possible_agents", None) is not None


def agent_spaces(env: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each agent's observation and action space, PettingZoo's methods or RLlib's dicts."""
    agents = list(env.possible_agents)
    bad = [a for a in agents if not isinstance(a, str)]
    if bad:
        raise SpaceError(f"agent id {bad[0]!r} is not a string (agent ids travel as map keys)")
    from mobrl.envs.foreign import agent_space

    return ({a: agent_space(env, "observation", a) for a in agents},
            {a: agent_space(env, "action", a) for a in agents})  # fmt: skip


def describe(env: Any) -> str:
    """A short name of an env for the startup line and the hello reply."""
    named = getattr(env, "mobrl_name", None)
    if named:
        return str(named)
    spec = getattr(env, "spec", None)
    if getattr(spec, "id", None):
        return str(spec.id)
    inner = getattr(env, "unwrapped", env)
    return type(inner).__name__


def _flags(flags: dict[Any, Any]) -> dict[Any, bool]:
    return {k: bool(v) for k, v in flags.items()}


class Served:
    """An env answering requests for one connection (`binary`: msgpack's raw bytes)."""

    def __init__(self, env: Any, binary: bool, name: str | None = None) -> None:
        self.env, self.binary = env, binary
        self.name = name or describe(env)
        self.multi_agent = is_multi_agent(env)
        if self.multi_agent:
            self.obs_spaces, self.act_spaces = agent_spaces(env)
        else:
            self.obs_spaces = {None: env.observation_space}
            self.act_spaces = {None: env.action_space}
        self.encode = {a: wire_spaces.encoder(s, binary) for a, s in self.obs_spaces.items()}
        self.decode = {a: wire_spaces.action_decoder(s) for a, s in self.act_spaces.items()}
        self.measures = Measures.of(env, binary)
        self.has_agents = self.multi_agent and hasattr(env, "agents")

    def announce(self) -> dict[str, Any]:
        """The hello reply's description of the env (before any reset)."""
        out: dict[str, Any] = {"version": PROTOCOL_VERSION, "name": self.name,
                               "multi_agent": self.multi_agent}  # fmt: skip
        to_wire = wire_spaces.space_to_wire
        if self.multi_agent:
            out["possible_agents"] = list(self.env.possible_agents)
            out["observation_spaces"] = {a: to_wire(s) for a, s in self.obs_spaces.items()}
            out["action_spaces"] = {a: to_wire(s) for a, s in self.act_spaces.items()}
        else:
            out["observation_space"] = to_wire(self.obs_spaces[None])
            out["action_space"] = to_wire(self.act_spaces[None])
        metadata = getattr(self.env, "metadata", None) or {}
        out["render_modes"] = [str(m) for m in metadata.get("render_modes", ()) or ()]
        out["render_mode"] = getattr(self.env, "render_mode", None)
        steps = getattr(self.env, "max_episode_steps", None)
        spec = getattr(self.env, "spec", None)
        steps = steps if steps is not None else getattr(spec, "max_episode_steps", None)
        if steps is not None:
            out["max_episode_steps"] = int(steps)
        out["measures"] = self.measures is not None
        return out

    def reset(self, request: dict[str, Any]) -> dict[str, Any]:
        seed, options = request.get("seed"), request.get("options")
        observations, infos = self.env.reset(seed=seed, options=options)
        binary = self.binary
        if self.multi_agent:
            encode = self.encode
            reply = {"observations": {a: encode[a](o) for a, o in observations.items()},
                     "infos": plain(infos, binary)}  # fmt: skip
            if self.has_agents:
                reply["agents"] = list(self.env.agents)
        else:
            reply = {"observation": self.encode[None](observations), "info": plain(infos, binary)}
        if self.measures is not None:
            reply["measures"] = self.measures.wire(reset=True)
        return reply

    def step(self, request: dict[str, Any]) -> dict[str, Any]:
        binary = self.binary
        if self.multi_agent:
            decode, encode = self.decode, self.encode
            actions = {a: decode[a](x) for a, x in request["actions"].items()}
            observations, rewards, terminations, truncations, infos = self.env.step(actions)
            reply = {
                "observations": {a: encode[a](o) for a, o in observations.items()},
                "rewards": {a: float(r) for a, r in rewards.items()},
                "terminations": _flags(terminations),
                "truncations": _flags(truncations),
                "infos": plain(infos, binary),
            }
            if self.has_agents:
                reply["agents"] = list(self.env.agents)
        else:
            action = self.decode[None](request["action"])
            observation, reward, terminated, truncated, info = self.env.step(action)
            reply = {"observation": self.encode[None](observation), "reward": float(reward),
                     "terminated": bool(terminated), "truncated": bool(truncated),
                     "info": plain(info, binary)}  # fmt: skip
        if self.measures is not None:
            reply["measures"] = self.measures.wire(reset=False)
        return reply

    def render(self, request: dict[str, Any]) -> dict[str, Any]:
        frame = self.env.render()
        if frame is None:
            return {"frame": None}
        frame = np.asarray(frame)
        return {"frame": frame_to_wire(frame, self.binary)}

    def close(self) -> None:
        self.env.close()
