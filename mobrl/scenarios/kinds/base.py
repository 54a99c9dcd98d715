"""The shape every scenario kind follows (`mobrl.scenarios.kinds`): one class, one module, one instance.

A kind owns everything that differs between families of scenarios: which settings of the
composed config it reads and checks, how its env is built from the plain `env_config` dict,
its agents and their default policy mapping, the RLlib callbacks that log its metrics, how an
episode is fixed by a seed, which heuristic baselines apply, how it is drawn and how it is
listed. Code outside `mobrl.scenarios.kinds` asks the kind (`mobrl.scenarios.kinds.kind_of`) instead of testing
its name. Methods import their heavy libraries when called: checking a config must not
import Ray, torch or mobile-env.
"""

from __future__ import annotations

from typing import Any


class ScenarioKind:
    """Defaults of a single-agent kind; a kind overrides what differs."""

    #: the value of `scenario.kind` in the config (and of `env_config["kind"]`)
    name: str = ""
    #: the policy mapping of `env.policies` when it is not set (multi-agent kinds only)
    default_policies: str | None = None
    #: what evaluation during training ranks by unless run.eval.metric says (metrics.EVAL_METRICS)
    eval_metric = "return"
    #: whether `mobrl evaluate --scenarios` can move its policies to other layouts
    transferable: bool = False
    #: whether `mobrl render` draws the env itself (True) or uses the env's rgb_array frames
    draws_own_frames: bool = False
    #: whether `env_fields` builds the env, or connects to it, to learn its agents and spaces
    #: (a check that runs nothing, `mobrl train --cfg`, leaves it out)
    probes: bool = False
    #: whether its env lives in another process reached over the network (a simulator): the
    #: env a policy was trained in is not rebuilt to compare spaces, it may be gone
    remote: bool = False

    def check(self, cfg: Any) -> None:
        """One-line `UserError`s for the settings this kind reads, before anything runs."""

    def env_fields(self, cfg: Any) -> dict[str, Any]:
        """The kind's own entries of `env_config`: at least `id` and `mode`."""
        return {"id": cfg.scenario.id, "mode": "gym"}

    def retarget(self, env_config: dict[str, Any], scenario: str) -> dict[str, Any]:
        """`env_config` with its kind's settings kept on the layout `scenario` (`transferable`
        kinds only; the factory redoes agents, policy mapping and sampler)."""
        raise NotImplementedError

    def policy_settings(self, env_config: dict[str, Any]) -> dict[str, str]:
        """The settings of `env_config` a policy trained in it is made for (what it observes,
        how its actions are read), as override key -> value, e.g. {"env.obs": "topk"}: they
        carry over to whatever scenario of the kind the policy plays (`evaluation.targets`)."""
        return {}

    def cannot_play(
        self, trained: dict[str, Any], env_config: dict[str, Any], label: str
    ) -> str | None:
        """Why `label`, a policy trained in `trained`, cannot act in `env_config` (whose spaces
        differ from its own), with the fix, in one line; None when the kind cannot tell why."""
        return None

    def make_env(self, env_config: dict[str, Any], rllib: bool) -> Any:
        """The env of `env_config` (`rllib`: for RLlib's runners, which need its base classes)."""
        raise NotImplementedError

    def action_space(self, cfg: Any) -> str:
        """`discrete`, `multidiscrete`, `box` or `other`: what the agents' actions look like."""
        raise NotImplementedError

    def agents(self, env_config: dict[str, Any]) -> list[str]:
        """The agent ids of a multi-agent env (empty: single agent)."""
        return []

    def intermittent_agents(self, cfg: Any) -> tuple[str, str]:
        """The setting under which some agents act only every few env steps (RLlib's
        hierarchical pattern) and the one to use instead where every agent acts at every step,
        in words; empty if every agent acts at every step."""
        return "", ""

    def default_policy_mapping(self, env_config: dict[str, Any]) -> str | None:
        """`env.policies` when it is not set (multi-agent kinds)."""
        return self.default_policies

    def check_native(self, env_config: dict[str, Any]) -> None:
        """The env's own library's checks (PettingZoo's, Gymnasium's) on the env as its author
        wrote it, before mobrl wraps it, raising what they raise (`factory.check_env` turns
        it into one line)."""

    def check_fix(self, env_config: dict[str, Any]) -> str:
        """What to fix when the env fails its check, in words."""
        return "Fix the scenario's definition (or the Gymnasium env it names)."

    def ue_slots(self, env_config: dict[str, Any]) -> bool | None:
        """Whether the env can be sampled as UE slots (None: the kind has no UEs)."""
        return None

    def callbacks(self, cfg: Any, env_config: dict[str, Any]) -> type | None:
        """The RLlibCallback class that logs the kind's metrics during training, if any."""
        return None

    def seeded(self, env_config: dict[str, Any], seed: int) -> dict[str, Any]:
        """The env_config of one evaluation episode fixed by `seed` (beyond `reset(seed=...)`),
        paying the scenario's own reward whatever the policy learned from."""
        return env_config

    def baselines(self, env_config: dict[str, Any]) -> list[str]:
        """The heuristic baselines `mobrl evaluate` compares with by default."""
        return ["random"]

    def spaces(self, conf: dict[str, Any]) -> str:
        """Observation and action spaces in short, for `mobrl scenarios list`."""
        return ""

    def where(self, cfg: Any) -> str:
        """The scenario in words for messages, e.g. `scenario=small env=ma`."""
        return f"scenario={cfg.scenario.name}"

    def label(self, env_config: dict[str, Any]) -> str:
        """The env of `env_config` in words for a failure's one line, e.g. `scenario=small`
        (an env runner's own env where runners differ: its `EnvContext`)."""
        return f"scenario={env_config.get('scenario') or env_config['id']}"

    def other_mode(self, cfg: Any) -> str:
        """An override of this kind that gives other action spaces (for error messages)."""
        return ""


def action_kind(space: Any) -> str:
    """`discrete`, `multidiscrete`, `box` or `other`: what a Gymnasium action space is."""
    import gymnasium as gym

    for kind, cls in (
        ("discrete", gym.spaces.Discrete),
        ("multidiscrete", gym.spaces.MultiDiscrete),
        ("box", gym.spaces.Box),
    ):
        if isinstance(space, cls):
            return kind
    return "other"
