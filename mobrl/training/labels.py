"""The labelled episodes of imitation (`run.imitate`, `mobrl.training.imitation`): the expert
labels every active UE's observation (or every cell's, `env=cells`) on mobrl's fast engine, or with UEs deciding in turns
(`env.decide=in_turns`) every group's turn: the oracle's search given the moves before, best
replies in a later round, and a planning expert's moves where its plan departs from the step's
search (`planned_ahead`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

# --- per-slot features a network could broadcast (docs/performance.md: the gain feature) -------


def gain_features(core: Any, cols: np.ndarray, k: int) -> np.ndarray:
    """(UE, k): the change of the team's summed utility if the UE toggled the station in each
    of its slots alone (`env.obs=topk_gain`'s last k columns; 0 for an empty slot)."""
    from mobrl.envs.observations import slot_gains, station_arrays

    return slot_gains(core, station_arrays(core), cols, k)


def with_features(core: Any, obs: dict[Any, np.ndarray], k: int, extra: str) -> np.ndarray:
    """The agents' observations (dict order), with the gain columns appended (`extra="gain"`)."""
    x = np.stack(list(obs.values()))
    if extra == "none":
        return x
    from mobrl.envs.observations import ue_columns
    from mobrl.envs.wrappers import ue_id

    column = ue_columns(core)
    cols = np.array([column[ue_id(a)] for a in obs], dtype=int)
    return np.concatenate([x, gain_features(core, cols, k)], axis=1)


# --- labels --------------------------------------------------------------------------------


def slot_labels(core: Any, station_actions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each UE's station action (UE order; 0 keep, b + 1 toggle b) as a slot action, and a
    mask of UEs whose toggle names a station outside their k slots (labelled 0)."""
    from mobrl.envs.observations import slots_of, station_arrays, topk_slots

    act = np.asarray(station_actions, dtype=np.int64)
    slots = slots_of(topk_slots(station_arrays(core), k), act)
    return slots, (act > 0) & (slots == 0)


class Labelled(NamedTuple):
    """A labelled episode (`Collector.episode`): a row per active UE-step (or turn)."""

    #: the observations
    x: np.ndarray
    #: the expert's slot labels
    y: np.ndarray
    #: the slot actions played (the expert's, or the learner's)
    played: np.ndarray
    #: rows of a later round of turns whose label changes the UE's earlier move of the step
    revised: np.ndarray
    #: rows whose label is a planning expert's move ahead of the step's search (`planned_ahead`)
    ahead: np.ndarray


class Collector:
    """Episodes on the fast engine in which the expert labels every active UE's observation
    (`TurnCollector`: every turn's, with UEs deciding in turns)."""

    #: whether a step without observations ends the episode (UEs deciding at once: no UE is
    #: active any more)
    ends_when_empty = True

    def __init__(
        self,
        cfg: dict[str, Any],
        k: int,
        extra: str = "none",
        expert: str = "oracle",
        horizon: int | None = None,
        weight: float | None = None,
        floor: float | None = None,
    ):
        self.cfg = {**cfg, "engine": "fast"}
        self.k, self.extra, self.expert = k, extra, expert
        #: a planning expert's steps ahead (its `HORIZON`; None: its own)
        self.horizon = horizon
        #: the λ a cell expert that weighs energy plans with (its `weight`; None: the layout's)
        self.weight = weight
        #: the price such an expert plans with of a UE's service lost (its `floor`; None: 0)
        self.floor = floor
        self.outside = 0  # UE-steps where the unrestricted oracle toggles outside the slots
        self.toggles = 0  # UE-steps where the unrestricted oracle toggles at all
        self.ue_steps = 0

    def episode(self, seed: int, learner: Any = None, count_outside: bool = False) -> Labelled:
        """Observations, expert slot labels, the actions played and which rows revise an
        earlier move, for every active UE-step (or turn) of episode `seed`; the expert plays
        unless `learner` is given."""
        from mobrl.envs.wrappers import find_core
        from mobrl.evaluation.policies import BASELINES
        from mobrl.evaluation.rollout import episode_env

        env = episode_env(self.cfg, seed)
        core = find_core(env)
        expert = BASELINES[self.expert]()
        if self.horizon is not None:
            expert.HORIZON = int(self.horizon)
        if self.weight is not None:
            expert.weight = float(self.weight)
        if self.floor is not None:
            expert.floor = float(self.floor)
        expert.reset(seed)
        self._start(count_outside)
        if learner is not None:
            learner.reset(seed)
        obs, _ = env.reset(seed=seed)
        xs, ys, played, revised, ahead = [], [], [], [], []
        try:
            while True:
                found = self._rows(env, core, obs, expert) if obs else None
                actions: dict[Any, int] = {}
                if found is not None:
                    (x, y, r, h), agents = found, list(obs)
                    if learner is None:
                        actions = {a: int(v) for a, v in zip(agents, y)}
                    else:
                        actions = learner.act(obs, env)
                        self._learner_plays(env)
                    xs.append(x)
                    ys.append(y)
                    revised.append(r)
                    ahead.append(h)
                    played.append(np.array([actions[a] for a in agents]))
                obs, _, term, trunc, _ = env.step(actions)
                if term["__all__"] or trunc["__all__"] or (self.ends_when_empty and not obs):
                    break
        finally:
            env.close()
        return Labelled(*map(np.concatenate, (xs, ys, played, revised, ahead)))

    def _learner_plays(self, env: Any) -> None:
        """The learner's actions, not the expert's, are played this env step."""

    def _start(self, count_outside: bool) -> None:
        from mobrl.evaluation.oracle import StepSearch
        from mobrl.evaluation.policies import BASELINES

        self._free = StepSearch() if count_outside else None
        self._greedy = BASELINES["greedy"]()

    def _rows(
        self, env: Any, core: Any, obs: dict[Any, np.ndarray], expert: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The rows the policy learns from this env step, the expert's labels, which of them
        revise an earlier move (`Labelled.revised`) and which are a planner's move ahead
        (`Labelled.ahead`; UEs deciding at once: none); None: no one acts."""
        from mobrl.envs.observations import ue_columns
        from mobrl.envs.wrappers import ue_id
        from mobrl.network.service import link_state

        column = ue_columns(core)
        cols = np.array([column[ue_id(a)] for a in obs], dtype=int)
        labels, _ = slot_labels(core, expert.station_actions(core), self.k)
        if self._free is not None:
            move = self._greedy.station_actions(core)
            unrestricted = self._free.decide_state(link_state(core), move, None)
            _, out = slot_labels(core, unrestricted, self.k)
            self.outside += int(out[cols].sum())
            self.toggles += int((unrestricted[cols] > 0).sum())
            self.ue_steps += len(cols)
        none = np.zeros(len(cols), dtype=bool)
        return with_features(core, obs, self.k, self.extra), labels[cols], none, none.copy()


#: experts whose labels in turns are their search given the moves before (`turn_labels`)
TURN_SEARCHES = ("oracle", "oracle2")
#: a later round's label toggles only for a gain to the team above this (float noise below)
GAIN_EPS = 1e-12


def best_reply(gains: np.ndarray) -> np.ndarray:
    """Each row's slot action from its slots' gains (n, k) given every other move: the slot of
    the largest gain above `GAIN_EPS`, else 0 (keep)."""
    return np.where(gains.max(axis=1) > GAIN_EPS, gains.argmax(axis=1) + 1, 0)


def turn_labels(core: Any, turns: Any, expert: Any) -> np.ndarray:
    """The slot labels of the group acting in `turns` (`mobrl.envs.turns.StepTurns`). With
    `oracle` (`oracle2`) as the expert: in the first round its one-step (two-step) search
    over the undecided UEs' slot stations with the links after the moves decided before,
    from no change and from greedy's move of the undecided UEs (`turns.greedy`); in a
    later round each UE's best reply to every other UE's move of the step so far (the slot
    of the largest positive gain the turn observes, or keeping). With a planning expert
    (`oracle_horizon`, `oracle_mpc`, `oracle_rollout`): its plan's move for the UEs where
    that differs from `oracle`'s step (`planned_ahead`: a link prepared ahead of what the
    step alone pays for), `oracle`'s labels as above for the others. With another expert,
    its own step actions as slot actions."""
    return turn_rows(core, turns, expert)[0]


def turn_rows(core: Any, turns: Any, expert: Any) -> tuple[np.ndarray, np.ndarray]:
    """`turn_labels`, and which of them are a planning expert's moves ahead (`planned_ahead`;
    none for another expert)."""
    group = turns.group
    if getattr(expert, "PLANS", False):
        plan, ahead = planned_ahead(core, turns, expert)
        return np.where(ahead, plan, _search_labels(core, turns, "oracle")), ahead
    if expert.name not in TURN_SEARCHES:
        labels = slot_labels(core, expert.station_actions(core), turns.k)[0][group]
    else:
        labels = _search_labels(core, turns, expert.name)
    return labels, np.zeros(len(group), dtype=bool)


def planned_ahead(core: Any, turns: Any, expert: Any) -> tuple[np.ndarray, np.ndarray]:
    """A planning expert's slot actions for the group acting in `turns`, and where they differ
    from `oracle`'s step (the step's best alone, which the planner's candidates start from);
    both of the step's start (the expert decides once a step), in the step's slots."""
    from mobrl.envs.observations import slots_of

    plan = slots_of(turns.order, expert.station_actions(core))[turns.group]
    return plan, plan != slots_of(turns.order, expert.step_oracle)[turns.group]


def _search_labels(core: Any, turns: Any, search_name: str) -> np.ndarray:
    """`turn_labels` of `oracle` (`oracle2`) for the group acting in `turns`."""
    import dataclasses

    from mobrl.envs.observations import slots_of

    group = turns.group
    if turns.round > 0:  # the gains the turn observed, not computed again
        return best_reply(turns.gains(group))
    from mobrl.evaluation.oracle import best_actions, lookahead_actions

    search = lookahead_actions if search_name == "oracle2" else best_actions
    given = dataclasses.replace(turns.state, conn=turns.links.copy())
    start = np.where(turns.decided, 0, turns.greedy)
    acts = search(given, [start], turns.allowed() & ~turns.decided[None, :])
    return slots_of(turns.order, acts)[group]


class TurnCollector(Collector):
    """`Collector` for UEs acting in turns (`env.decide=in_turns`, mobrl.envs.turns): every
    group's turn is labelled by `turn_labels` (the unrestricted oracle is not counted)."""

    ends_when_empty = False  # a step without acting UEs is played on

    def __init__(
        self, cfg: dict[str, Any], k: int, expert: str = "oracle", horizon: int | None = None
    ):
        super().__init__(cfg, k, expert=expert, horizon=horizon)

    def _start(self, count_outside: bool) -> None:
        super()._start(False)

    def _rows(
        self, env: Any, core: Any, obs: dict[Any, np.ndarray], expert: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        from mobrl.envs.turns import turn_env

        turns = turn_env(env).turns
        if turns is None or not turns.groups:
            return None
        labels, ahead = turn_rows(core, turns, expert)
        revised = (labels != turns.slots[turns.group]) & (turns.round > 0)
        return np.stack(list(obs.values())), labels, revised, ahead


class CellCollector(Collector):
    """`Collector` for cell agents (`env=cells`, mobrl.envs.cells): every cell's observation
    is labelled with the state a cell rule or the reference (`energy_oracle`) gives it, the
    rule's states being the cells' actions. With cells deciding in turns
    (`env.decide=in_turns`, mobrl.envs.cell_turns) every turn is labelled with the expert's
    states of the step, and where the requests before the turn depart from them (the learner
    playing), with the reference's search given those requests (`EnergyOraclePolicy.given`;
    a rule's states stay as they were)."""

    ends_when_empty = False  # every cell observes every step

    def _start(self, count_outside: bool) -> None:
        self._plan = np.zeros(0, dtype=np.int64)

    def _learner_plays(self, env: Any) -> None:
        from mobrl.evaluation.baselines.energy import _cells_env

        _cells_env(env)._as_given = False  # the learner's requests go through the guard

    def _rows(
        self, env: Any, core: Any, obs: dict[Any, np.ndarray], expert: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        from mobrl.envs.cell_turns import cell_turns_env
        from mobrl.envs.cells import cell_agent, cell_index

        turns = cell_turns_env(env)
        if turns is None or turns.turn == 0:
            chosen = expert.act(obs, env)  # once a step: a rule may keep count of its steps
            self._plan = np.array([chosen[cell_agent(b)] for b in range(len(core.stations))])
        elif hasattr(expert, "given"):
            on, told = turns.requests == 0, turns.decided
            if ((self._plan == 0) != on)[told].any():
                self._plan = expert.given(core, told, on)
        labels = self._plan[[cell_index(a) for a in obs]].astype(np.int64)
        none = np.zeros(len(labels), dtype=bool)
        return np.stack(list(obs.values())), labels, none, none.copy()


def collector(
    env_config: dict[str, Any],
    k: int,
    expert: str = "oracle",
    horizon: int | None = None,
    weight: float | None = None,
    floor: float | None = None,
) -> Any:
    """The collector of `env_config`'s env: cell agents, or UEs deciding at once or in turns
    (`horizon`: a planning expert's steps ahead, None: its own; `weight` and `floor`: the λ
    and the price of lost service a cell expert plans with, None: the layout's λ and 0)."""
    if env_config.get("mode") == "cells":
        return CellCollector(env_config, k, expert=expert, weight=weight, floor=floor)
    if env_config.get("decide", "at_once") == "in_turns":
        return TurnCollector(env_config, k, expert, horizon)
    return Collector(env_config, k, expert=expert, horizon=horizon)
