"""Envs mobrl did not write, in the one shape its machinery reads: a PettingZoo `ParallelEnv`,
a PettingZoo AEC env or an RLlib-style multi-agent env (dict observations, rewards,
terminations and truncations with `"__all__"`) becomes an RLlib-style multi-agent env; a
Gymnasium env stays one. Either way the values the user names in `scenario.metrics` are read
from the env's `infos` and counted per episode (`InfoMetrics`), the way mobrl's metrics
callback and evaluation read an env's own counts (`core.protocols.EpisodeStats`).

No Ray here: evaluation and rendering play these envs without it; `rllib_env.py` adds RLlib's
`MultiAgentEnv` base class for RLlib's runners.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

#: how a metric's values over an episode become one number (`KEY:REDUCE`; mean by default)
REDUCTIONS = ("mean", "sum", "last", "max", "min")
#: which way a metric is better (`KEY:REDUCE:BETTER`): higher (max, by default) or lower (min:
#: a cost, e.g. energy); evaluation's paired tables say which side each difference favours
BETTER = {"max": "higher is better", "min": "lower is better"}
#: the key of values an RLlib-style env reports for the whole env (mobile-env's, mobrl's)
COMMON = "__common__"
#: result tags of the metrics: over all agents (or the env) and per agent
INFO_TAG, AGENT_TAG = "info/{key}", "agent/{agent}/{key}"


class MetricSpec(NamedTuple):
    """One entry of `scenario.metrics`: the `infos` key, how an episode's values become one
    number, and which way is better."""

    key: str
    reduce: str = "mean"
    better: str = "max"


def parse_metrics(specs: Any) -> list[MetricSpec]:
    """`scenario.metrics` (`KEY`, `KEY:REDUCE` or `KEY:REDUCE:BETTER`) as `MetricSpec`s; a
    `ValueError` naming a bad entry, its bad part and the choices."""
    out: list[MetricSpec] = []
    for spec in list(specs or []):
        parts = str(spec).split(":")
        key, reduce, better = [*parts, "", ""][:3]
        reduce, better = reduce or "mean", better or "max"
        if not key or len(parts) > 3:
            raise ValueError(
                f"scenario.metrics entry '{spec}' is not KEY, KEY:REDUCE or KEY:REDUCE:BETTER"
            )
        if reduce not in REDUCTIONS:
            raise ValueError(
                f"scenario.metrics entry '{spec}': REDUCE '{reduce}' is not one of "
                f"{', '.join(REDUCTIONS)}"
            )
        if better not in BETTER:
            raise ValueError(
                f"scenario.metrics entry '{spec}': BETTER '{better}' is not one of "
                + ", ".join(f"{way} ({words})" for way, words in BETTER.items())
            )
        out.append(MetricSpec(key, reduce, better))
    return out


def metric_senses(specs: Any) -> dict[str, str]:
    """Which way each metric of `scenario.metrics` is better (`max` or `min`), by its result
    column (`info/KEY`); the last entry of a key wins, as it does in the counts."""
    return {INFO_TAG.format(key=spec.key): spec.better for spec in parse_metrics(specs)}


class _Series:
    """One metric's values over an episode, reduced as they come."""

    __slots__ = ("count", "total", "last", "high", "low")

    def __init__(self) -> None:
        self.count, self.total, self.last = 0, 0.0, math.nan
        self.high, self.low = -math.inf, math.inf

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.last = value
        self.high = max(self.high, value)
        self.low = min(self.low, value)

    def reduced(self, how: str) -> float:
        if how == "mean":
            return self.total / self.count
        return {"sum": self.total, "last": self.last, "max": self.high, "min": self.low}[how]


#: how the agents' reduced values make the env's: summed for sums, extremes for extremes
_ACROSS = {"mean": np.mean, "sum": np.sum, "last": np.mean, "max": np.max, "min": np.min}


class InfoMetrics:
    """The values of named `infos` keys over one episode, per agent (or for the env)."""

    def __init__(self, specs: list[MetricSpec], per_agent: bool = True) -> None:
        self.specs, self.per_agent = specs, per_agent
        self.series: dict[str, dict[Any, _Series]] = {spec.key: {} for spec in specs}

    def reset(self) -> None:
        for per_agent in self.series.values():
            per_agent.clear()

    def add(self, who: Any, info: Any) -> None:
        """The values of one info dict (`who`: its agent, None for the env's)."""
        if not isinstance(info, dict):
            return
        for key, per_agent in self.series.items():
            if key in info:
                value = info[key]
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    raise ValueError(
                        f"infos['{key}'] is {type(value).__name__} {value!r:.40}, not a number; "
                        "scenario.metrics names numeric info values"
                    ) from None
                series = per_agent.get(who)
                if series is None:
                    series = per_agent[who] = _Series()
                series.add(number)

    def add_agents(self, infos: Any) -> None:
        """An RLlib-style step's infos: per agent, and the env's under `__common__`."""
        if isinstance(infos, dict):
            for who, info in infos.items():
                self.add(None if who == COMMON else who, info)

    def episode_stats(self) -> dict[str, float]:
        """Each metric over the episode: the env's value, or the agents' combined."""
        out = {}
        for key, how, _ in self.specs:
            per_agent = self.series[key]
            if None in per_agent:
                out[INFO_TAG.format(key=key)] = per_agent[None].reduced(how)
            elif per_agent:
                values = [s.reduced(how) for s in per_agent.values()]
                out[INFO_TAG.format(key=key)] = float(_ACROSS[how](values))
        return out

    def agent_stats(self) -> dict[str, float]:
        """Each metric of each agent over the episode (none when not `per_agent`)."""
        if not self.per_agent:
            return {}
        return {
            AGENT_TAG.format(agent=who, key=key): series.reduced(how)
            for key, how, _ in self.specs
            for who, series in self.series[key].items()
            if who is not None
        }


class _Counted:
    """What every adapter shares: the wrapped env as `env` (so mobrl finds a mobile-env core
    behind it), the info metrics, rendering and closing."""

    env: Any
    metrics: InfoMetrics | None

    def episode_stats(self) -> dict[str, float]:
        return self.metrics.episode_stats() if self.metrics is not None else {}

    def agent_stats(self) -> dict[str, float]:
        return self.metrics.agent_stats() if self.metrics is not None else {}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        close(self.env)


def close(env: Any) -> None:
    """Close an env that may have no `close` (duck-typed PettingZoo envs need not)."""
    closing = getattr(env, "close", None)
    if callable(closing):
        closing()


class MultiAgentAdapter(_Counted):
    """An RLlib-style multi-agent env over another multi-agent env; subclasses translate."""

    def __init__(self, env: Any, metrics: InfoMetrics | None = None) -> None:
        self.env = env
        self.metrics = metrics
        agents = list(env.possible_agents)
        # mobrl names policies, metrics and files after agents: ids that are not strings
        # (RLlib envs often count agents 0, 1, ...) are their str() outside the env
        self.renamed = any(not isinstance(a, str) for a in agents)
        self._inside = {str(a): a for a in agents}
        self._outside_ids = set(agents)
        self.possible_agents = [str(a) for a in agents]
        self.observation_spaces = {str(a): agent_space(env, "observation", a) for a in agents}
        self.action_spaces = {str(a): agent_space(env, "action", a) for a in agents}
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        self.render_mode = getattr(env, "render_mode", None)
        self.agents: list[Any] = []
        self._agent_ids = set(self.possible_agents)  # what RLlib's env checker looks for

    def _out(self, result: tuple) -> tuple:
        """A reset's or step's dicts with the agents' names as mobrl's (str) ones."""
        if not self.renamed:
            return result
        return tuple(
            {str(k) if k in self._outside_ids else k: v for k, v in d.items()}
            if isinstance(d, dict)
            else d
            for d in result
        )

    def _in(self, actions: dict) -> dict:
        if not self.renamed:
            return actions
        return {self._inside.get(a, a): act for a, act in actions.items()}

    def get_observation_space(self, agent: Any) -> Any:
        return self.observation_spaces[agent]

    def get_action_space(self, agent: Any) -> Any:
        return self.action_spaces[agent]


def agent_space(env: Any, what: str, agent: Any) -> Any:
    """An agent's observation or action space, however the env offers it."""
    spaces = getattr(env, f"{what}_spaces", None)
    if isinstance(spaces, dict) and agent in spaces:
        return spaces[agent]
    for name in (f"get_{what}_space", f"{what}_space"):
        method = getattr(env, name, None)
        if callable(method):
            return method(agent)
    space = getattr(env, f"{what}_space", None)
    if isinstance(space, gym.spaces.Dict):
        return space[agent]
    raise ValueError(f"the env gives no {what} space for agent {agent!r}")


class ParallelAdapter(MultiAgentAdapter):
    """A PettingZoo `ParallelEnv`: the episode ends when its `agents` are gone."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        obs, infos = self._out(self.env.reset(seed=seed, options=options))
        self.agents = [str(a) for a in self.env.agents]
        if self.metrics is not None:
            self.metrics.reset()
        return obs, infos or {}

    def step(self, actions: dict) -> tuple:
        live = set(self.agents)
        obs, rewards, terms, truncs, infos = self._out(
            self.env.step(self._in({a: act for a, act in actions.items() if a in live}))
        )
        terms, truncs = dict(terms), dict(truncs)
        self.agents = [str(a) for a in self.env.agents]
        over = not self.agents
        truncs["__all__"] = over and any(truncs.values())
        terms["__all__"] = over and not truncs["__all__"]
        if self.metrics is not None:
            self.metrics.add_agents(infos)
        return obs, rewards, terms, truncs, infos


class AECAdapter(MultiAgentAdapter):
    """A PettingZoo AEC env, turn by turn: each step the agent whose turn it is acts, and the
    next agent to act observes, with the reward it collected since it last acted (agents that
    are done get their last observation and reward on the way out)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        self.env.reset(seed=seed, options=options)
        if self.metrics is not None:
            self.metrics.reset()
        return self._next()[0], {}

    def step(self, actions: dict) -> tuple:
        acting = self.env.agent_selection
        self.env.step(actions[str(acting)])
        if self.metrics is not None:
            self.metrics.add(str(acting), self.env.infos.get(acting, {}))
        return self._next()

    def _next(self) -> tuple:
        env = self.env
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        while env.agents:
            agent = env.agent_selection
            obs[agent], reward, terms[agent], truncs[agent], infos[agent] = env.last()
            rewards[agent] = float(reward)
            if not (terms[agent] or truncs[agent]):
                break
            env.step(None)  # a done agent leaves
        self.agents = [str(a) for a in env.agents]
        over = not self.agents
        truncs["__all__"] = over and any(truncs.values())
        terms["__all__"] = over and not truncs["__all__"]
        return self._out((obs, rewards, terms, truncs, infos))


class RLlibStyleAdapter(MultiAgentAdapter):
    """An env that already speaks RLlib's multi-agent dicts (an RLlib `MultiAgentEnv`, or
    `mobrl.external`'s client): passed through, its infos counted."""

    def __init__(self, env: Any, metrics: InfoMetrics | None = None) -> None:
        if not getattr(env, "possible_agents", None):  # RLlib envs may name them later
            env.reset()
            env.possible_agents = list(getattr(env, "agents", []))
        super().__init__(env, metrics)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        obs, infos = self._out(self.env.reset(seed=seed, options=options))
        self.agents = [str(a) for a in getattr(self.env, "agents", None) or obs]
        if self.metrics is not None:
            self.metrics.reset()
        return obs, infos or {}

    def step(self, actions: dict) -> tuple:
        out = self._out(self.env.step(self._in(actions)))
        self.agents = [str(a) for a in getattr(self.env, "agents", None) or out[0]]
        if self.metrics is not None:
            self.metrics.add_agents(out[4])
        return out


class GymInfoMetrics(_Counted, gym.Wrapper):
    """A Gymnasium env whose info values are counted per episode."""

    def __init__(self, env: gym.Env, metrics: InfoMetrics) -> None:
        gym.Wrapper.__init__(self, env)
        self.metrics = metrics

    def reset(self, **kwargs: Any) -> tuple:
        self.metrics.reset()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple:
        out = self.env.step(action)
        self.metrics.add(None, out[4])
        return out


#: what the user's callable may return, in words, for messages
FLAVOURS = {
    "gym": "a Gymnasium Env",
    "parallel": "a PettingZoo ParallelEnv",
    "aec": "a PettingZoo AEC env",
    "rllib": "an RLlib MultiAgentEnv",
}


def flavour_of(env: Any) -> str | None:
    """Which kind of env `env` is (a key of `FLAVOURS`), or None."""
    import sys

    rllib = sys.modules.get("ray.rllib.env.multi_agent_env")
    if rllib is not None and isinstance(env, rllib.MultiAgentEnv):
        return "rllib"
    if callable(getattr(env, "last", None)) and callable(getattr(env, "observe", None)):
        return "aec"  # (an AEC env may hide agent_selection until it is reset)
    if getattr(env, "possible_agents", None) is not None and callable(getattr(env, "step", None)):
        pettingzoo = sys.modules.get("pettingzoo")
        if pettingzoo is not None and isinstance(env, pettingzoo.ParallelEnv):
            return "parallel"
        # mobrl.external's client, mobrl's own UE agents: RLlib's dicts without RLlib's class
        if getattr(env, "multi_agent_dicts", False) or isinstance(env, gym.Env):
            return "rllib"
        return "parallel"
    if isinstance(env, gym.Env):
        return "gym"
    return None


ADAPTERS = {"parallel": ParallelAdapter, "aec": AECAdapter, "rllib": RLlibStyleAdapter}


def adapt(
    env: Any,
    flavour: str,
    metrics: Any = (),
    adapters: dict | None = None,
    per_agent: bool = True,
) -> Any:
    """`env` in mobrl's shape (see the module's docstring), counting `metrics` (specs of
    `scenario.metrics`; `per_agent`: each agent's too); `adapters`: the multi-agent adapter
    classes by flavour (RLlib's runners take `rllib_env.FOREIGN`, subclasses of RLlib's
    `MultiAgentEnv`)."""
    counted = InfoMetrics(parse_metrics(metrics), per_agent) if metrics else None
    if flavour == "gym":
        if isinstance(env.observation_space, gym.spaces.Discrete):
            from mobrl.envs.wrappers import OneHotObservation

            env = OneHotObservation(env)
        return GymInfoMetrics(env, counted) if counted is not None else env
    return (adapters or ADAPTERS)[flavour](env, counted)
