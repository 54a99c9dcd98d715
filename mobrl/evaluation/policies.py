"""Policies behind one interface: `act(observation) -> action`, for trained RLModules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.checkpoints import load_rl_modules
from mobrl.core.errors import UserError, unknown_choice
from mobrl.core.rundir import find_manifest
from mobrl.envs.factory import policy_setup
from mobrl.evaluation.baselines import (  # noqa: F401 (imported from here by others)
    RULES,
    Baseline,
    FullPolicy,
    GreedyPolicy,
    NoopPolicy,
    PoleAnglePolicy,
    RandomPolicy,
    _PerUEBaseline,
)
from mobrl.evaluation.energy_oracle import EnergyGreedyPolicy, EnergyOraclePolicy
from mobrl.evaluation.references import (
    CappedPolicy,
    HorizonOraclePolicy,
    LookaheadOraclePolicy,
    MpcOraclePolicy,
    OraclePolicy,
    RolloutOraclePolicy,
)


class TrainedPolicy:
    """A checkpoint's RLModules, run directly for inference (no Ray, no env runners)."""

    name = "trained"

    def __init__(self, modules: dict[str, Any], env_config: dict[str, Any], explore: bool = False):
        self.modules = modules
        self.env_config = env_config
        self.explore = explore
        _, self._mapping = policy_setup(env_config)
        # deterministic actions of RLlib's default MLP modules with numpy: a forward pass of a
        # few rows costs torch more in overhead than in arithmetic
        self._numpy = {} if explore else {id(m): _numpy_actor(m) for m in modules.values()}

    @classmethod
    def from_checkpoint(
        cls,
        checkpoint: Path,
        env_config: dict[str, Any] | None = None,
        explore: bool = False,
        trust: bool = False,
    ) -> TrainedPolicy:
        """Restore from `checkpoint`; the env comes from the run's manifest unless given.
        `trust`: skip the check that its pickles need nothing but RLlib's own classes."""
        if env_config is None:
            manifest = find_manifest(Path(checkpoint))
            if manifest is None:
                raise UserError(
                    f"no {'manifest.json'} found for '{checkpoint}'. Name the scenario with "
                    "overrides, e.g. scenario=small env=ma."
                )
            env_config = manifest["env_config"]
        return cls(load_rl_modules(Path(checkpoint), trust=trust), env_config, explore=explore)

    def module_for(self, agent_id: Any) -> Any:
        if self._mapping is None or len(self.modules) == 1:
            # single agent, or one module for all (also plain RLlib checkpoints of other names)
            return next(iter(self.modules.values()))
        return self.modules[self._mapping(agent_id, None)]

    def check_spaces(self, env: Any) -> None:
        """Fail with a clear message when the checkpoint was trained on other spaces."""
        if hasattr(env, "observation_spaces") and isinstance(env.observation_spaces, dict):
            pairs = [
                (a, env.observation_spaces[a], env.action_spaces[a]) for a in env.possible_agents
            ]
        else:
            pairs = [(None, env.observation_space, env.action_space)]
        for agent, obs_space, act_space in pairs:
            try:
                module = self.module_for(agent)
            except KeyError as err:
                raise UserError(
                    f"the checkpoint has modules {sorted(self.modules)}, none for agent "
                    f"{agent}. Evaluate it with the scenario and env mode it was trained on."
                ) from err
            m_obs, m_act = module.observation_space, module.action_space
            if getattr(m_obs, "shape", None) != getattr(obs_space, "shape", None) or str(
                m_act
            ) != str(act_space):
                raise UserError(
                    f"the checkpoint's spaces (observation {m_obs}, action {m_act}) do not match "
                    f"the scenario's ({obs_space}, {act_space}). Evaluate it with the scenario "
                    "and env mode it was trained on."
                )

    def reset(self, seed: int | None = None) -> None:
        """Trained policies keep no per-episode state."""

    def act(self, observation: Any, env: Any = None) -> Any:
        """Actions for one env step: a dict per agent for multi-agent envs, else one action."""
        if isinstance(observation, dict):
            by_module: dict[int, list[Any]] = {}
            for agent in observation:
                by_module.setdefault(id(self.module_for(agent)), []).append(agent)
            actions: dict[Any, Any] = {}
            for agents in by_module.values():
                module = self.module_for(agents[0])
                batch = np.stack([observation[a] for a in agents])
                for agent, action in zip(agents, self._forward(module, batch)):
                    actions[agent] = action
            return actions
        module = next(iter(self.modules.values()))
        return self._forward(module, np.asarray(observation)[None])[0]

    def _forward(self, module: Any, batch: np.ndarray) -> list[Any]:
        actor = self._numpy.get(id(module))
        if actor is not None:
            actions = actor.decide(batch)
            if actions is not None:
                return [a.item() if a.ndim == 0 else a for a in actions]
        return self._torch_forward(module, batch)

    def _torch_forward(self, module: Any, batch: np.ndarray) -> list[Any]:
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(batch, dtype=torch.float32)
            if self.explore:
                out = module.forward_exploration({"obs": obs})
                dist_cls = module.get_exploration_action_dist_cls()
            else:
                out = module.forward_inference({"obs": obs})
                dist_cls = module.get_inference_action_dist_cls()
            if "actions" in out:  # e.g. DQN's modules pick actions themselves
                actions = out["actions"]
            else:
                dist = dist_cls.from_logits(out["action_dist_inputs"])
                if not self.explore:
                    dist = dist.to_deterministic()
                actions = dist.sample()
        actions = actions.cpu().numpy()
        return [a.item() if a.ndim == 0 else a for a in actions]


#: logits closer than this to the best one leave the choice to torch, so that numpy and
#: torch (float32 sums in different orders) never pick different actions
_TIE = 1e-4


class _NumpyActor:
    """The argmax action of an exported MLP (`mobrl.evaluation.zoo.export_layers`), or None when two
    logits of any row are too close to call without torch's own arithmetic."""

    def __init__(self, layers: list[tuple[str, Any]], nvec: list[int] | None):
        self.layers = layers
        self.nvec = nvec

    def decide(self, batch: np.ndarray) -> np.ndarray | None:
        from mobrl.evaluation.zoo import logit_parts, logits

        chosen = []
        for part in logit_parts(logits(self.layers, batch), self.nvec):
            top2 = np.sort(part, axis=-1)[..., -2:] if part.shape[-1] > 1 else None
            if top2 is not None and (top2[..., 1] - top2[..., 0] < _TIE).any():
                return None
            chosen.append(part.argmax(axis=-1))
        return chosen[0] if self.nvec is None else np.stack(chosen, axis=-1)


def _numpy_actor(module: Any) -> _NumpyActor | None:
    """A numpy actor for RLlib's default MLP modules with discrete actions, else None."""
    from gymnasium import spaces

    from mobrl.evaluation.zoo import export_layers

    space = getattr(module, "action_space", None)
    if not isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return None
    try:
        layers = export_layers(module)
    except (UserError, AttributeError):
        return None
    nvec = [int(n) for n in space.nvec] if isinstance(space, spaces.MultiDiscrete) else None
    return _NumpyActor(layers, nvec)


def load_policy(
    checkpoint: Any, env_config: dict[str, Any], explore: bool = False, trust: bool = False
) -> Any:
    """A checkpoint's policy, or a zoo entry's for `zoo:<name>` (no Ray, no torch)."""
    from mobrl.evaluation import zoo

    if zoo.is_ref(checkpoint):
        return zoo.ZooPolicy.load(str(checkpoint), explore=explore)
    return TrainedPolicy.from_checkpoint(Path(checkpoint), env_config, explore, trust)


def policy_for_env(
    checkpoint: Any, env_config: dict[str, Any], explore: bool = False, trust: bool = False
) -> Any:
    """`load_policy`, checked against the env of `env_config` (one-line errors)."""
    from mobrl.envs.factory import make_env

    policy = load_policy(checkpoint, env_config, explore, trust)
    env = make_env({**env_config, "render_mode": None})
    try:
        policy.check_spaces(env)
    finally:
        env.close()
    return policy


# --- heuristic baselines: the same `act(observation, env)` interface as TrainedPolicy ---------
# the rules live in mobrl.evaluation.baselines (one module per rule or family), the link-set
# references (`oracle` and its planners) in mobrl.evaluation.references


BASELINES: dict[str, type[Baseline]] = {
    **{
        cls.name: cls
        for cls in (
            RandomPolicy,
            NoopPolicy,
            GreedyPolicy,
            FullPolicy,
            CappedPolicy,
            OraclePolicy,
            LookaheadOraclePolicy,
            RolloutOraclePolicy,
            HorizonOraclePolicy,
            MpcOraclePolicy,
            PoleAnglePolicy,
            EnergyOraclePolicy,
            EnergyGreedyPolicy,
        )
    },
    **RULES,
}


class UserRule(Baseline):
    """A user's rule by import path (`--baselines MODULE:CLASS`): a class constructed with no
    arguments, or with the env as the user's callable made it, at each episode's start (so a
    rule with memory starts afresh); its instances are called with the step's observations
    (per agent: a dict) and return the actions (a dict per agent). A plain function is called
    the same way."""

    def __init__(self, spec: str, flag: str = "--baselines") -> None:
        from mobrl.core.imports import import_object

        self.name = spec
        self.made = import_object(spec, flag)
        if not callable(self.made):
            raise UserError(
                f"{flag} {spec} is a {type(self.made).__name__}, not a class or function. "
                "Name a class whose instances take the observations and return actions."
            )
        self.rule: Any = None

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.rule = None

    def act(self, observation: Any, env: Any = None) -> Any:
        if self.rule is None:
            self.rule = self._construct(env)
        return self.rule(observation)

    def _construct(self, env: Any) -> Any:
        import inspect

        made = self.made
        if not isinstance(made, type):
            return made  # a function: the rule itself
        try:
            params = [
                p
                for p in inspect.signature(made).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            params = []
        return made(users_env(env)) if params else made()


def users_env(env: Any) -> Any:
    """The env as the user's code made it, behind mobrl's adapters and wrappers."""
    from mobrl.envs.foreign import GymInfoMetrics, MultiAgentAdapter
    from mobrl.envs.wrappers import OneHotObservation

    while isinstance(env, (MultiAgentAdapter, GymInfoMetrics, OneHotObservation)):
        env = env.env
    return env


def make_baseline(name: str) -> Baseline:
    """The baseline `name`: one of mobrl's (`BASELINES`), a cell rule with a UE rule
    (`CELL+UE`), or a user's rule by import path."""
    from mobrl.core.imports import is_import_path

    if is_import_path(name):
        return UserRule(name)
    if "+" in name:
        from mobrl.evaluation.baselines.energy import ComposedPolicy

        cell, ue = name.split("+", 1)
        return ComposedPolicy(BASELINES[cell](), make_baseline(ue), name)
    return BASELINES[name]()


def _check_composed(name: str, env_config: dict[str, Any], flag: str) -> None:
    """`CELL+UE`: a cell rule and a UE rule that both play `env_config`, or a one-line error."""
    from mobrl.evaluation.baselines.energy import CellRule

    cell, ue = name.split("+", 1)
    cells = [n for n, cls in BASELINES.items() if issubclass(cls, CellRule)]
    if cell not in cells:
        raise unknown_choice(
            f"cell rule of {flag} {name}", cell, cells, "Write CELL+UE, e.g. threshold+a3."
        )
    if "+" in ue or ue not in BASELINES or issubclass(BASELINES[ue], CellRule):
        others = [n for n, cls in BASELINES.items() if not issubclass(cls, CellRule)]
        raise unknown_choice(
            f"UE rule of {flag} {name}", ue, others, "Write CELL+UE, e.g. threshold+a3."
        )
    check_baselines([cell, ue], env_config, flag)


def baselines_for(env_config: dict[str, Any]) -> list[str]:
    """Baselines that make sense for a scenario (the default set of `mobrl evaluate`)."""
    from mobrl.scenarios.kinds import kind_of

    return kind_of(env_config).baselines(env_config)


def check_baselines(
    names: list[str], env_config: dict[str, Any], flag: str = "--baselines"
) -> None:
    """Every name is a baseline that applies to the scenario, or a one-line error for `flag`."""
    from mobrl.core.imports import is_import_path

    applicable = baselines_for(env_config)
    for name in names:
        if is_import_path(name):  # a user's rule: it must import; it applies where they say
            UserRule(name, flag)
            continue
        if "+" in name:  # a cell rule with a UE rule
            _check_composed(name, env_config, flag)
            continue
        if name not in BASELINES:
            raise unknown_choice("baseline", name, BASELINES, f"Fix {flag}.")
        if name not in applicable and BASELINES[name].applies_like not in applicable:
            raise UserError(
                f"baseline '{name}' does not apply to {env_config['id']}. "
                f"Use {flag} {','.join(applicable)}."
            )
        BASELINES[name].check_plays(env_config, flag)
