"""Policies behind one interface: `act(observation) -> action`, for trained RLModules."""

from __future__ import annotations

import copy
import math
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
# the rules live in mobrl.evaluation.baselines (one module per rule or family); the link-set
# references below pick a step's whole link set through mobrl.envs.service


class _LinkSetPolicy(_PerUEBaseline):
    """A rule that decides every UE's action of a step at once from every UE's SNRs
    (mobrl.envs.service): by default one toggle per UE towards the link set `links` picks."""

    frees_slots = True

    def links(self, state: Any) -> np.ndarray:
        raise NotImplementedError

    def ue_action(self, core: Any, ue: Any) -> int:
        from mobrl.envs.observations import ue_columns

        return int(self.station_actions(core)[ue_columns(core)[ue.ue_id]])

    def station_actions(self, core: Any) -> np.ndarray:
        from mobrl.envs.service import link_state, toward

        state = link_state(core)
        return toward(state, self.links(state))


class CappedPolicy(_LinkSetPolicy):
    """Greedy, but each station keeps only its strongest UE; the others stay unconnected. A
    probe, not a policy to use: it scores high on mobile-env's multi-agent return while
    serving the UEs badly, so a trained policy that resembles it games that reward."""

    name = "capped"

    def links(self, state: Any) -> np.ndarray:
        from mobrl.envs.service import capped_links

        return capped_links(state)


class OraclePolicy(_LinkSetPolicy):
    """An upper reference: each step, the actions mobile-env allows (each UE keeps its links
    or toggles one station) with the highest mean UE utility of that step, from every UE's
    SNR (mobrl.evaluation.oracle). It sees what no UE agent sees, so no policy is bound by it;
    the room between greedy and it is what coordination can gain."""

    name = "oracle"
    lookahead = False

    def reset(self, seed: int | None = None) -> None:
        from mobrl.evaluation.oracle import StepSearch

        super().reset(seed)
        self.search, self._step = StepSearch(self.lookahead), None

    def station_actions(self, core: Any) -> np.ndarray:
        if not hasattr(self, "search"):
            self.reset()
        if self._step != (id(core), core.time):  # one decision per step for all UEs
            self._actions = self._decide(core)
            self._step = (id(core), core.time)
        return self._actions.copy()

    def _decide(self, core: Any) -> np.ndarray:
        return self.search.decide(core, GreedyPolicy().station_actions(core))


class LookaheadOraclePolicy(OraclePolicy):
    """`oracle` planning two steps ahead: the first step of the best pair of steps, this
    step's SNRs held for the next (measured above `oracle`: docs/evaluation.md)."""

    name = "oracle2"
    lookahead = True


class RolloutOraclePolicy(OraclePolicy):
    """A whole-episode reference for small layouts (rollout over `oracle`): each step it plays
    candidate moves to the episode's end on a copy of the env, each followed by `oracle`, and
    takes the one that serves the most. The candidates: the rest of the plan it follows,
    `oracle`'s step, that step with any one UE's action changed (kept, or toggling another
    station it can), greedy's step and no change. UE movement and arrivals do not depend on
    the actions, so the copy plays the episode's real future: this reference knows where every
    UE will be, which no policy does. It is never below `oracle` on an episode (each step's
    choice serves at least as much as carrying on the plan chosen before, and the first step's
    candidates include `oracle`'s whole episode). Its cost is about (UEs x stations) times
    the remaining episode of `oracle` per step, so it plays layouts of at most `MAX_UES` UEs.

    `HORIZON` and `CHANGES` bound it (`oracle_horizon`): each candidate played that many steps
    ahead instead of to the episode's end, and only that many one-UE changes of `oracle`'s
    step tried, those that lose the least in the step itself."""

    name = "oracle_rollout"
    applies_like = "oracle"
    #: the largest layout it plays (UEs): 8 UEs on 7 stations take about 40 s per 30 steps
    MAX_UES: int | None = 16
    #: steps each candidate is played (None: to the episode's end)
    HORIZON: int | None = None
    #: one-UE changes of `oracle`'s step tried (None: all)
    CHANGES: int | None = None
    #: the copies move the UEs on a sampled future instead of the episode's real one
    SAMPLED = False
    #: it plans ahead: `step_oracle` holds the step's best alone its move departs from
    PLANS = True

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.seed = 0 if seed is None else int(seed)
        #: the steps still ahead in the plan followed: (station actions, the step's utility)
        self.plan: list[tuple[np.ndarray, float]] = []
        #: what the plan chosen at the first step serves (the sum of its steps' utilities)
        self.first_value: float | None = None

    @classmethod
    def check_plays(cls, env_config: dict[str, Any], flag: str = "--baselines") -> None:
        layout = env_config.get("layout")
        if isinstance(layout, dict):
            ues = int(layout["ues"]["count"])
            cls._check_size(ues, env_config.get("engine") != "stock", flag)

    @classmethod
    def _check_size(cls, ues: int, fast: bool, flag: str = "--baselines") -> None:
        """A one-line error unless the env is one this reference plays: at most `MAX_UES` UEs,
        on mobrl's fast engine (whose copies it steps)."""
        if cls.MAX_UES is not None and ues > cls.MAX_UES:
            raise UserError(
                f"baseline '{cls.name}' plays layouts of at most {cls.MAX_UES} UEs (this one has "
                f"{ues}). Use {flag} oracle_horizon, oracle2 or oracle here."
            )
        if not fast:
            raise UserError(
                f"baseline '{cls.name}' plays on mobrl's fast engine only. Drop engine=stock, "
                f"or use {flag} oracle2 or oracle."
            )

    def _decide(self, core: Any) -> np.ndarray:
        from mobrl.evaluation.ascent import EPS

        self._check_size(core.NUM_USERS, hasattr(core, "step_stations"))
        best = self.plan
        if best and self.HORIZON is not None:  # the plan's window moved on by a step
            best = self._continue(core, [move for move, _ in best])
        tried = [best[0][0]] if best else []
        for first in self._candidates(core):
            if any(np.array_equal(first, seen) for seen in tried):
                continue
            tried.append(first)
            plan = self._continue(core, [first])
            if not best or _served(plan) > _served(best) + EPS:
                best = plan
        if self.first_value is None:
            self.first_value = _served(best)
        self.plan = best[1:]
        return best[0][0].copy()

    def _candidates(self, core: Any) -> list[np.ndarray]:
        """`oracle`'s step first, then each one-UE change of it (or the `CHANGES` that lose
        the least in the step), greedy's step, no change: only moves the env's actions can
        make (with `env.obs=topk`, stations in the UE's slots)."""
        from mobrl.envs.service import link_state
        from mobrl.evaluation.oracle import toggleable

        greedy = GreedyPolicy().station_actions(core)
        oracle = self.search.decide(core, greedy)
        #: `oracle`'s step at this step's start: where the plan's move differs from it, the
        #: plan prepares ahead (`run.imitate` labels those moves: `planned_ahead`)
        self.step_oracle = oracle
        state = link_state(core)
        can = state.reach if (allowed := toggleable(core)) is None else state.reach & allowed
        ues = np.arange(greedy.size)
        greedy = np.where(can[np.maximum(greedy - 1, 0), ues] | (greedy == 0), greedy, 0)
        changes = [
            (ue, action)
            for ue in np.flatnonzero(state.active).tolist()
            for action in (0, *(np.flatnonzero(can[:, ue]) + 1).tolist())
            if action != oracle[ue]
        ]
        if self.CHANGES is not None and len(changes) > self.CHANGES:
            changes = _least_lost(state, oracle, changes, self.CHANGES)
        out = [oracle]
        for ue, action in changes:
            out.append(oracle.copy())
            out[-1][ue] = action
        return [*out, greedy, np.zeros_like(greedy)]

    def _continue(self, core: Any, moves: list[np.ndarray]) -> list[tuple[np.ndarray, float]]:
        """`moves`, then `oracle` to the episode's end (or to `HORIZON` steps), played on a
        copy of `core`: each step's station actions and mean UE utility (0 for a step
        without active UEs)."""
        twin, search = copy.deepcopy(core), copy.deepcopy(self.search)
        if self.SAMPLED:  # the same sample for every candidate of a step
            twin.sample_future([self.seed, int(core.time)])
        plan: list[tuple[np.ndarray, float]] = []
        while True:
            if len(plan) < len(moves):
                move = moves[len(plan)]
            else:
                move = search.decide(twin, GreedyPolicy().station_actions(twin))
            value, done = twin.step_stations(move)
            plan.append((move, 0.0 if math.isnan(value) else value))
            if done or (self.HORIZON is not None and len(plan) >= self.HORIZON):
                return plan


class HorizonOraclePolicy(RolloutOraclePolicy):
    """`oracle_rollout` bounded for layouts of any size (a receding horizon): each step its
    candidates (the rest of the plan it follows, `oracle`'s step, the `CHANGES` one-UE changes
    of that step that lose the least in the step, greedy's step, no change) are played
    `HORIZON` steps ahead on a copy of the env, each followed by `oracle`, and it takes the
    one that serves the most over those steps. It knows the UEs' real future over the
    horizon, as `oracle_rollout` does over the episode. Its cost is (CHANGES + 4) x HORIZON
    steps of `oracle` per step."""

    name = "oracle_horizon"
    MAX_UES = None
    HORIZON = 8
    CHANGES = 12


class MpcOraclePolicy(HorizonOraclePolicy):
    """`oracle_horizon` without the UEs' real future (model-predictive control): its copies
    move the UEs on a future sampled from the mobility model (`FastEngine.sample_future`, one
    sample a step, the same for every candidate). It knows every link's SINR now, the radio
    map, the mobility model and each UE's motion so far, as a controller with a radio map
    could, but not where the UEs will go; arrival and departure times it does know."""

    name = "oracle_mpc"
    SAMPLED = True


def _least_lost(
    state: Any, actions: np.ndarray, changes: list[tuple[int, int]], keep: int
) -> list[tuple[int, int]]:
    """The `keep` one-UE changes (ue, action) of `actions` that lose the least of the step's
    summed utility (ties: in the order given)."""
    from mobrl.envs.service import column_changes, links_after
    from mobrl.evaluation.coupled import columns_after

    ues, acts = np.array(changes, dtype=np.int64).reshape(-1, 2).T
    change = column_changes(
        state, links_after(state, actions), ues, columns_after(state, ues, acts)
    )
    return [changes[i] for i in np.argsort(-change, kind="stable")[:keep].tolist()]


def _served(plan: list[tuple[np.ndarray, float]]) -> float:
    """The sum of a plan's step utilities."""
    return math.fsum(value for _, value in plan)


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
    """The baseline `name`: one of mobrl's (`BASELINES`) or a user's rule by import path."""
    from mobrl.core.imports import is_import_path

    return UserRule(name) if is_import_path(name) else BASELINES[name]()


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
        if name not in BASELINES:
            raise unknown_choice("baseline", name, BASELINES, f"Fix {flag}.")
        if name not in applicable and BASELINES[name].applies_like not in applicable:
            raise UserError(
                f"baseline '{name}' does not apply to {env_config['id']}. "
                f"Use {flag} {','.join(applicable)}."
            )
        BASELINES[name].check_plays(env_config, flag)
