"""The link-set references of `mobrl evaluate` (`--baselines`): rules that pick a step's
whole link set through `mobrl.network.service` (`capped`), the step searches (`oracle`, `oracle2`:
`mobrl.evaluation.oracle`) and the planners over copies of the fast engine (`oracle_rollout`,
`oracle_horizon`, `oracle_mpc`). `mobrl.evaluation.policies.BASELINES` names them beside the
heuristic rules of `mobrl.evaluation.baselines`."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.evaluation.baselines import GreedyPolicy, _PerUEBaseline


class _LinkSetPolicy(_PerUEBaseline):
    """A rule that decides every UE's action of a step at once from every UE's SNRs
    (mobrl.network.service): by default one toggle per UE towards the link set `links` picks."""

    frees_slots = True

    def links(self, state: Any) -> np.ndarray:
        raise NotImplementedError

    def ue_action(self, core: Any, ue: Any) -> int:
        from mobrl.envs.observations import ue_columns

        return int(self.station_actions(core)[ue_columns(core)[ue.ue_id]])

    def station_actions(self, core: Any) -> np.ndarray:
        from mobrl.network.service import link_state, toward

        state = link_state(core)
        return toward(state, self.links(state))


class CappedPolicy(_LinkSetPolicy):
    """Greedy, but each station keeps only its strongest UE; the others stay unconnected. A
    probe, not a policy to use: it scores high on mobile-env's multi-agent return while
    serving the UEs badly, so a trained policy that resembles it games that reward."""

    name = "capped"

    def links(self, state: Any) -> np.ndarray:
        from mobrl.network.service import capped_links

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
        from mobrl.evaluation.oracle import toggleable
        from mobrl.network.service import link_state

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
    from mobrl.evaluation.coupled import columns_after
    from mobrl.network.service import column_changes, links_after

    ues, acts = np.array(changes, dtype=np.int64).reshape(-1, 2).T
    change = column_changes(
        state, links_after(state, actions), ues, columns_after(state, ues, acts)
    )
    return [changes[i] for i in np.argsort(-change, kind="stable")[:keep].tolist()]


def _served(plan: list[tuple[np.ndarray, float]]) -> float:
    """The sum of a plan's step utilities."""
    return math.fsum(value for _, value in plan)
