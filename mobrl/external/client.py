"""The trainer's side: `connect` reaches a simulator (waiting for one that starts slowly),
says hello, and returns a client env: `RemoteEnv` (a `gymnasium.Env`) for a single-agent
simulator, `RemoteMultiAgentEnv` (RLlib's multi-agent API, without importing Ray) for a
multi-agent one. Every step is one request and one reply on the connection."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import gymnasium as gym
import numpy as np

from mobrl.core.errors import first_line
from mobrl.external import spaces as wire_spaces
from mobrl.external.measures import RemoteCore
from mobrl.external.spaces import SpaceError, outside, unplain
from mobrl.external.wire import (
    ENCODINGS,
    PROTOCOL_VERSION,
    Channel,
    ExternalConnectError,
    ExternalStepError,
    WireClosed,
    WireError,
    WireTimeout,
    codec,
    parse_address,
)


def _open(host: str, port: int, where: str, timeout: float) -> socket.socket:
    """A connected socket, retried until `timeout` so a simulator still starting is waited
    for; a one-line `ExternalConnectError` when nothing answered in time."""
    deadline, pause, last = time.monotonic() + timeout, 0.05, None
    while True:
        left = deadline - time.monotonic()
        try:
            return socket.create_connection((host, port), timeout=max(left, 0.05))
        except OSError as err:  # refused, unreachable, timed out, unknown host
            last = err
        if time.monotonic() + pause >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    reason = getattr(last, "strerror", None) or first_line(last or "no answer")
    raise ExternalConnectError(
        f"external env at {where}: no simulator answered within {timeout:g} s ({reason}). "
        "Start it first (e.g. python -m mobrl.external MODULE:CALLABLE --address "
        f"{where}) or fix the address."
    )


class Connection:
    """One connection to a simulator: framing, encoding, timeouts and one-line errors."""

    def __init__(self, address: str, timeout: float, encoding: str,
                 step_timeout: float | None) -> None:  # fmt: skip
        if encoding not in ENCODINGS:
            raise ExternalConnectError(
                f"external env at {address}: unknown encoding {encoding!r}. Use msgpack or json."
            )
        host, port = parse_address(address)
        self.address = address
        deadline = time.monotonic() + timeout
        sock = _open(host, port, address, timeout)
        self.channel = Channel(sock)
        self.closed = False
        try:
            sock.settimeout(max(deadline - time.monotonic(), 1.0))
            hello = {"type": "hello", "version": PROTOCOL_VERSION, "encoding": encoding}
            self.channel.send(json.dumps(hello).encode())
            reply = json.loads(bytes(self.channel.recv()))
        except (UnicodeDecodeError, ValueError) as err:
            self.close()
            raise ExternalConnectError(
                f"external env at {address}: its hello reply is not valid JSON. Is a mobrl.external "
                "simulator listening there?"
            ) from err
        except WireError as err:
            self.close()
            raise ExternalConnectError(f"external env at {address}: hello failed: {err}.") from err
        self.announce = self._check_hello(reply)
        self.encoding = self.announce.get("encoding", "json")
        self.codec = codec(self.encoding if self.encoding in ENCODINGS else "json")
        sock.settimeout(step_timeout)
        self.step_timeout = step_timeout

    def _check_hello(self, reply: Any) -> dict[str, Any]:
        where = f"external env at {self.address}"
        if not isinstance(reply, dict):
            self.close()
            raise ExternalConnectError(f"{where}: its hello reply is not a JSON object.")
        if "error" in reply:
            self.close()
            raise ExternalConnectError(
                f"{where}: the simulator refused: {first_line(reply['error'])}"
            )
        if reply.get("version") != PROTOCOL_VERSION:
            self.close()
            raise ExternalConnectError(
                f"{where}: the simulator speaks protocol version {reply.get('version')!r}, "
                f"mobrl.external speaks {PROTOCOL_VERSION}. Update one of them."
            )
        keys = (("possible_agents", "observation_spaces", "action_spaces")
                if reply.get("multi_agent") else ("observation_space", "action_space"))  # fmt: skip
        missing = [k for k in ("multi_agent", *keys) if k not in reply]
        if missing:
            self.close()
            raise ExternalConnectError(f"{where}: its hello reply lacks {', '.join(missing)}.")
        return reply

    def fail(self, what: str, closed: bool = False) -> ExternalStepError:
        if closed:
            self.close()
        return ExternalStepError(f"external env at {self.address}: {what}")

    def call(self, request: dict[str, Any], what: str) -> dict[str, Any]:
        """Send `request` and return the reply dict, or raise a one-line `ExternalStepError`."""
        if self.closed:
            raise self.fail(f"the connection is closed; cannot {what}")
        try:
            self.channel.send(self.codec.dumps(request))
            reply = self.codec.loads(self.channel.recv())
        except WireTimeout as err:
            raise self.fail(f"no reply to {what} within {self.step_timeout:g} s", True) from err
        except WireClosed as err:
            raise self.fail(f"the simulator closed the connection ({what}): it stopped or "
                            f"died", True) from err  # fmt: skip
        except WireError as err:
            raise self.fail(f"{err} (in reply to {what})", True) from err
        if type(reply) is not dict:
            raise self.fail(f"its reply to {what} is not a map but {type(reply).__name__}", True)
        if "error" in reply:
            raise self.fail(f"the simulator failed to {what}: {first_line(str(reply['error']))}")
        return reply

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.channel.close()

    def goodbye(self) -> None:
        if not self.closed:
            try:
                self.channel.sock.settimeout(2.0)
                self.channel.send(self.codec.dumps({"type": "close"}))
                self.channel.recv()
            except (WireError, OSError):
                pass
            self.close()


def _same_box(a: gym.Space, b: gym.Space) -> bool:
    return (
        isinstance(a, gym.spaces.Box)
        and isinstance(b, gym.spaces.Box)
        and (a is b or (a.dtype == b.dtype and a.shape == b.shape
                        and np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)))
    )  # fmt: skip


class _Client:
    """What both client envs share: the connection, decoders, checks, measures, render."""

    def _setup(self, connection: Connection, check: bool) -> None:
        self._connection = connection
        self.announce = connection.announce
        self.address = connection.address
        self.render_mode = self.announce.get("render_mode")
        self.metadata = {"render_modes": list(self.announce.get("render_modes") or [])}
        if self.announce.get("max_episode_steps") is not None:
            self.max_episode_steps = int(self.announce["max_episode_steps"])
        #: what mobrl's metric recorder reads of a mobile-env core (None without measures)
        self.core: RemoteCore | None = None
        self._check = check

    def _spaces(self, data: dict[str, Any], where: str) -> dict[Any, gym.Space]:
        try:
            return {k: wire_spaces.space_from_wire(v) for k, v in data.items()}
        except (SpaceError, AttributeError, TypeError) as err:
            self._connection.close()
            raise ExternalConnectError(f"external env at {self.address}: {where}: {err}.") from err

    def _codecs(self, obs_spaces: dict[Any, gym.Space], act_spaces: dict[Any, gym.Space]) -> None:
        self._decode = {a: wire_spaces.decoder(s) for a, s in obs_spaces.items()}
        self._contains = {a: wire_spaces.checker(s) for a, s in obs_spaces.items()}
        self._encode = {a: wire_spaces.encoder(s, False) for a, s in act_spaces.items()}
        self._obs_spaces = obs_spaces
        first = next(iter(obs_spaces.values()), None)
        shared = first is not None and all(_same_box(first, s) for s in obs_spaces.values())
        self._batch = wire_spaces.batch_decoder(first, self._check) if shared else None

    def _observation(self, agent: Any, value: Any, what: str) -> Any:
        decode = self._decode.get(agent)
        label = "the observation" if agent is None else f"the observation of {agent!r}"
        if decode is None:
            raise self._connection.fail(f"its reply to {what} has an observation of {agent!r}, "
                                        "which is not one of its announced agents")  # fmt: skip
        try:
            obs = decode(value)
        except (SpaceError, TypeError, ValueError, KeyError, IndexError) as err:
            space = self._obs_spaces[agent]
            raise self._connection.fail(
                f"{label} in its reply to {what} does not fit its announced space {space}: "
                f"{first_line(err)}"
            ) from err
        if self._check and not self._contains[agent](obs):
            space = self._obs_spaces[agent]
            raise self._connection.fail(
                f"{label} in its reply to {what} is outside its announced space {space}: "
                f"{outside(space, obs)}"
            )
        return obs

    def _measures(self, reply: dict[str, Any]) -> None:
        measures = reply.get("measures")
        if measures is None:
            return
        try:
            if self.core is None:
                self.core = RemoteCore(measures)
            else:
                self.core.update(measures)
        except (KeyError, TypeError, ValueError) as err:
            raise self._connection.fail(f"its measures are malformed ({first_line(err)})") from err

    def _missing(self, err: KeyError, what: str) -> ExternalStepError:
        return self._connection.fail(f"its reply to {what} lacks {err}")

    def render(self) -> Any:
        reply = self._connection.call({"type": "render"}, "render")
        frame = reply.get("frame")
        if frame is None:
            return None
        try:
            return wire_spaces.array_from_wire(frame)
        except (KeyError, TypeError, ValueError) as err:
            raise self._connection.fail(f"its rendered frame is malformed ({err})") from err

    def close(self) -> None:
        connection = getattr(self, "_connection", None)
        if connection is not None:
            connection.goodbye()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.announce.get('name')} at {self.address})"


class RemoteEnv(_Client, gym.Env):
    """A single-agent simulator as a Gymnasium env (Gymnasium's step and reset semantics)."""

    def __init__(self, connection: Connection, check_observations: bool = True) -> None:
        super().__init__()
        self._setup(connection, check_observations)
        found = self._spaces({"observation": self.announce["observation_space"],
                              "action": self.announce["action_space"]}, "its spaces")  # fmt: skip
        self.observation_space, self.action_space = found["observation"], found["action"]
        self._codecs({None: self.observation_space}, {None: self.action_space})
        self._act = self._encode[None]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        request = {"type": "reset", "seed": seed, "options": wire_spaces.plain(options, False)}
        reply = self._connection.call(request, "reset")
        try:
            obs, info = reply["observation"], reply.get("info") or {}
        except KeyError as err:
            raise self._missing(err, "reset") from err
        obs = self._observation(None, obs, "reset")
        self._measures(reply)
        return obs, unplain(info)

    def step(self, action: Any):
        try:
            request = {"type": "step", "action": self._act(action)}
        except (TypeError, ValueError, KeyError, IndexError) as err:
            raise ValueError(f"action {action!r} does not fit {self.action_space}") from err
        reply = self._connection.call(request, "step")
        try:
            obs, reward = reply["observation"], reply["reward"]
            terminated, truncated = bool(reply["terminated"]), bool(reply["truncated"])
        except KeyError as err:
            raise self._missing(err, "step") from err
        obs = self._observation(None, obs, "step")
        self._measures(reply)
        return obs, reward, terminated, truncated, unplain(reply.get("info") or {})


class RemoteMultiAgentEnv(_Client):
    """A multi-agent simulator with RLlib's `MultiAgentEnv` API (without importing Ray):
    dict observations, rewards, terminateds and truncateds (with `"__all__"`) and infos,
    keyed by agent; only the agents that act next observe. A PettingZoo simulator's
    `"__all__"` is made here: the episode ends when every agent in the reply is done."""

    def __init__(self, connection: Connection, check_observations: bool = True) -> None:
        self._setup(connection, check_observations)
        self.possible_agents = list(self.announce["possible_agents"])
        self.agents = list(self.possible_agents)
        self.observation_spaces = self._spaces(self.announce["observation_spaces"],
                                               "its observation spaces")  # fmt: skip
        self.action_spaces = self._spaces(self.announce["action_spaces"], "its action spaces")
        missing = [a for a in self.possible_agents
                   if a not in self.observation_spaces or a not in self.action_spaces]  # fmt: skip
        if missing:
            connection.close()
            raise ExternalConnectError(
                f"external env at {self.address}: agent {missing[0]!r} has no announced space."
            )
        self.observation_space = gym.spaces.Dict(
            [(a, self.observation_spaces[a]) for a in self.possible_agents]
        )
        self.action_space = gym.spaces.Dict(
            [(a, self.action_spaces[a]) for a in self.possible_agents]
        )
        self._codecs(self.observation_spaces, self.action_spaces)

    def get_observation_space(self, agent_id: Any) -> gym.Space:
        return self.observation_spaces[agent_id]

    def get_action_space(self, agent_id: Any) -> gym.Space:
        return self.action_spaces[agent_id]

    def _observations(self, values: dict[str, Any], what: str) -> dict[str, Any]:
        batch = self._batch
        if batch is not None and values and values.keys() <= self._decode.keys():
            rows = batch(values)
            if rows is not None:
                return rows
        observe = self._observation
        return {a: observe(a, v, what) for a, v in values.items()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        request = {"type": "reset", "seed": seed, "options": wire_spaces.plain(options, False)}
        reply = self._connection.call(request, "reset")
        try:
            observations = self._observations(reply["observations"], "reset")
        except KeyError as err:
            raise self._missing(err, "reset") from err
        except AttributeError as err:
            raise self._connection.fail("its observations in reply to reset are not a map") from err
        agents = reply.get("agents")
        self.agents = list(agents) if agents is not None else list(observations)
        self._measures(reply)
        return observations, unplain(reply.get("infos") or {})

    def step(self, action_dict: dict[Any, Any]):
        encode = self._encode
        try:
            actions = {a: encode[a](x) for a, x in action_dict.items()}
        except KeyError as err:
            raise ValueError(
                f"action for unknown agent {err} (agents: {self.possible_agents})"
            ) from None
        reply = self._connection.call({"type": "step", "actions": actions}, "step")
        try:
            observations = self._observations(reply["observations"], "step")
            rewards, terms, truncs = reply["rewards"], reply["terminations"], reply["truncations"]
        except KeyError as err:
            raise self._missing(err, "step") from err
        except AttributeError as err:
            raise self._connection.fail("its observations in reply to step are not a map") from err
        if not (type(rewards) is dict and type(terms) is dict and type(truncs) is dict):
            raise self._connection.fail("its rewards, terminations and truncations are not maps")
        if "__all__" not in terms or "__all__" not in truncs:
            done = all(terms.get(a) or truncs.get(a) for a in {*terms, *truncs} - {"__all__"})
            ended = all(terms.get(a) for a in terms if a != "__all__")
            terms = {**terms, "__all__": terms.get("__all__", bool(done and ended))}
            truncs = {**truncs, "__all__": truncs.get("__all__", bool(done and not ended))}
        agents = reply.get("agents")
        self.agents = (list(agents) if agents is not None
                       else [a for a in observations if not (terms.get(a) or truncs.get(a))])  # fmt: skip
        self._measures(reply)
        return observations, rewards, terms, truncs, unplain(reply.get("infos") or {})


def connect(
    address: str,
    *,
    timeout: float = 30.0,
    encoding: str = "msgpack",
    step_timeout: float | None = 60.0,
    check_observations: bool = True,
) -> RemoteEnv | RemoteMultiAgentEnv:
    """The env served at `address` (`HOST:PORT`): a `RemoteEnv` or a `RemoteMultiAgentEnv`.

    `timeout`: seconds to keep trying to reach the simulator and get its hello reply;
    `encoding`: `msgpack` (arrays as raw bytes; a simulator without it answers in JSON and
    the connection falls back) or `json`; `step_timeout`: seconds a reset, step or render
    may take (None: no limit); `check_observations`: each observation against its announced
    space. Failures are one-line `ExternalEnvError`s naming the address: at connect time an
    `ExternalConnectError` (a `UserError`), afterwards an `ExternalStepError` (a
    `RuntimeError`)."""
    connection = Connection(address, timeout, encoding, step_timeout)
    if connection.announce["multi_agent"]:
        return RemoteMultiAgentEnv(connection, check_observations)
    return RemoteEnv(connection, check_observations)
