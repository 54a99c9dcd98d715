"""UEs deciding in turns within a step (`env.decide=in_turns`, env=ma with a slot observation).

With `env.decide=at_once` (the default) every active UE observes the step's state and acts
at the same time, so two UEs cannot know each other's move: under interference a station's
UEs each gain nothing by leaving it alone while leaving together pays, and a UE that joins
a station cannot know whether another one hands over. With `env.decide=in_turns` a step is
played in turns, as a sequence model decodes agents' actions each given the ones before it
(Wen et al., "Multi-Agent Reinforcement Learning is a Sequence Modeling Problem", NeurIPS
2022), or as a network's controller would commit handovers one neighbourhood after another:

- the step's active UEs are split into groups that share no slot station, each UE in the
  first group it fits, UEs taken by their best single-toggle gain (`turn_groups`);
- one group acts per env step: each UE of it observes its slot observation (computed once
  at the step's start), then per slot the change of the team's summed utility if it toggled
  that station given the moves of the groups before it (`gains_given`), then the share of
  UEs already decided;
- after the last group the step is played with every group's actions, and the rewards of
  the step arrive (a UE's reward reaches its next observation, as RLlib's multi-agent
  episodes carry rewards of agents that are not acting).

With `env.turn_rounds=2` (or more) the groups take their turns again once every group has
decided: in a later round each group observes its slots' gains given every other UE's move
of the step so far (its own undone) and may keep, undo or change its move, as a controller
would let a neighbourhood revise after its neighbours committed. A move that pays only
together with a later group's move can then be made once that move is known. The turn's
observation carries one more column, the round (0 first, 1 last), and its gains g as
sign(g) ln(1 + |g| / 10^-4) (`signed_log`), so that a network tells a small gain from none
(in one round they stay as they were, for the policies trained so).

With `env.turn_obs=greedy_ahead` a turn of the first round also observes what the UEs after
it would do by the rule the field starts from: per slot the gain given the moves before it and
every UE yet to decide playing greedy's move (the strongest-SINR station, `greedy`), which slot
is greedy's own move, and the team's gain if every UE yet to decide played greedy's move at
once (`TURN_OBS`). A step's best joint move often starts from greedy's moves of many UEs at
once (a station's UEs leaving it together so it falls silent), which no UE's gain given only
the moves before it shows; a controller can compute greedy's moves of its neighbours from the
same measurements. In a later round every UE has moved, so its slots' gains there are given
again, and the team's gain is 0.

The moves are those of UEs deciding at once, so the network's dynamics do not change: only
what each UE knows when it acts. A policy that reads no observation (the baselines) plays
the env at once (`play` switches `in_turns` off); so does the UE-slot sampler's test of
whether it applies (`mobrl.envs.slots.applies`: it does not here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from mobrl.envs.wrappers import UEAgentsEnv, ue_id

#: `env.decide`: every UE at once, or groups in turns within a step
DECIDE = ("at_once", "in_turns")
#: `env.turn_rounds` above this is refused: each round adds a turn per group to every step
MAX_ROUNDS = 4
#: with several rounds a turn observes its gains g as sign(g) ln(1 + |g| / GAIN_SCALE): a
#: revision's gains are often 1e-4 of the team's summed utility, which a tanh network reads
#: as 0 unless they are scaled
GAIN_SCALE = 1e-4


class GainsView:
    """`env.turn_obs=gains`: the turn's gains given the moves before it, nothing more."""

    name = "gains"

    def bounds(self, k: int) -> tuple[list[float], list[float]]:
        """The low and high of each column this view adds after the turn's gains."""
        return [], []

    def columns(self, turns: StepTurns, group: np.ndarray, scale: Callable) -> list[np.ndarray]:
        """The columns it adds for `group` (`scale`: the turn's scale of gains)."""
        return []


class GreedyAheadView(GainsView):
    """`env.turn_obs=greedy_ahead`: also each slot's gain given the UEs yet to decide playing
    greedy's move, the UE's greedy slot and the team's gain of those moves (`StepTurns.ahead`)."""

    name = "greedy_ahead"

    def bounds(self, k: int) -> tuple[list[float], list[float]]:
        return [-np.inf] * k + [0.0] * k + [-np.inf], [np.inf] * k + [1.0] * k + [np.inf]

    def columns(self, turns: StepTurns, group: np.ndarray, scale: Callable) -> list[np.ndarray]:
        ahead, mine, team = turns.ahead(group)
        return [scale(ahead), mine, np.full((len(group), 1), scale(np.array(team)))]


#: `env.turn_obs`: what a turn observes beyond its slot observation (`StepTurns.extra`), by
#: name; a new view is a class with `bounds` and `columns`
TURN_OBS = {view.name: view() for view in (GainsView, GreedyAheadView)}


def signed_log(gains: np.ndarray) -> np.ndarray:
    """`gains` on the signed log scale of a turn with several rounds (`GAIN_SCALE`)."""
    return np.sign(gains) * np.log1p(np.abs(gains) / GAIN_SCALE)


def turn_groups(order: np.ndarray, cols: np.ndarray, priority: np.ndarray) -> list[np.ndarray]:
    """The UEs at `cols` in groups that share no slot station (`order`: `topk_slots`, (k, UE)),
    each UE in the first group it fits, UEs taken by descending `priority` (ties: `cols`'
    order; callers list UEs by agent name, so that the env and /v1/decide agree)."""
    groups: list[list[int]] = []
    used: list[set[int]] = []
    for c in cols[np.argsort(-priority, kind="stable")].tolist():
        mine = set(order[:, c][order[:, c] >= 0].tolist())
        for group, taken in zip(groups, used):
            if not mine & taken:
                group.append(c)
                taken |= mine
                break
        else:
            groups.append([c])
            used.append(mine)
    return [np.array(g, dtype=int) for g in groups]


class StepTurns:
    """One step's turns on a core: the groups (`turn_groups`), played `rounds` times, the
    links after the moves decided so far and each UE's slot action. `extra(group)` is what a
    group observes beyond its slot observation; `decide(group, actions)` records its moves
    (in a later round, in place of its earlier ones); `advance()` moves to the next turn."""

    def __init__(self, core: Any, k: int, cols: np.ndarray, rounds: int = 1, view: str = "gains"):
        from mobrl.envs.observations import gains_given, station_arrays, topk_slots
        from mobrl.network.service import link_state

        self.core, self.k, self.view = core, k, view
        self.state = link_state(core)
        self.order = topk_slots(station_arrays(core), k)
        self.links = self.state.conn.copy()
        n = self.state.conn.shape[1]
        self.decided = np.zeros(n, dtype=bool)
        self.slots = np.zeros(n, dtype=np.int64)
        #: the step's acting UEs (columns)
        self.cols = cols = np.asarray(cols, dtype=int)
        first = gains_given(self.state, self.order, self.links, cols, k)
        priority = first.max(axis=1) if first.size else np.zeros(len(cols))
        self.groups = turn_groups(self.order, cols, priority) if len(cols) else []
        self.rounds = rounds
        self.turn = self.round = 0
        #: `gains`' last (group, gains), until the next move changes the links
        self._gains: tuple[bytes, np.ndarray] | None = None
        self._greedy: np.ndarray | None = None

    @property
    def group(self) -> np.ndarray:
        """The UE columns acting in this turn."""
        return self.groups[self.turn]

    @property
    def last(self) -> bool:
        """Whether this is the step's last turn (the last group's in the last round)."""
        return self.round == self.rounds - 1 and self.turn == len(self.groups) - 1

    def advance(self) -> None:
        """On to the next turn: the next group, or the first group of the next round (whose
        UEs have not decided in it yet)."""
        self.turn += 1
        if self.turn == len(self.groups):
            self.turn, self.round = 0, self.round + 1
            self.decided[:] = False

    def allowed(self) -> np.ndarray:
        """(BS, UE) the stations each UE may toggle: its slot stations in range."""
        from mobrl.envs.observations import slot_mask

        return slot_mask(self.order, self.state.conn.shape[0]) & self.state.reach

    def gains(self, group: np.ndarray) -> np.ndarray:
        """(len(group), k) each slot's gain to the team given the moves decided so far (the
        group's own earlier moves undone); computed once between two moves (the turn's
        observation and `run.imitate`'s label of a later round both read it)."""
        from mobrl.envs.observations import gains_given

        key = group.tobytes()
        if self._gains is None or self._gains[0] != key:
            self._gains = (key, gains_given(self.state, self.order, self.links, group, self.k))
        return self._gains[1]

    @property
    def greedy(self) -> np.ndarray:
        """Greedy's station action of every UE (UE order) from the step's start, computed
        once a step (`env.turn_obs=greedy_ahead` and `run.imitate`'s expert read it)."""
        if self._greedy is None:
            from mobrl.network.service import step_greedy_moves

            self._greedy = step_greedy_moves(self.core)
        return self._greedy

    def extra(self, group: np.ndarray) -> np.ndarray:
        """(len(group), `extra_width(k, rounds, view)`) float32: the group's `gains`, the
        view's columns (`TURN_OBS`), then the share of the step's UEs decided in this
        round and, with several rounds, the round (0 to 1). Gains are on the `signed_log`
        scale with several rounds."""
        scale = signed_log if self.rounds > 1 else np.asarray
        gains, done = self.gains(group), np.full((len(group), 1), self.decided[self.cols].mean())
        columns = [scale(gains), *TURN_OBS[self.view].columns(self, group, scale), done]
        if self.rounds > 1:
            columns.append(np.full_like(done, self.round / (self.rounds - 1)))
        return np.concatenate(columns, axis=1).astype(np.float32)

    def ahead(self, group: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """What `env.turn_obs=greedy_ahead` adds for `group`: (len(group), k) each slot's gain
        to the team given the moves decided so far and every UE yet to decide in this round
        (the group aside) playing greedy's move; (len(group), k) 1 at the slot of the UE's own
        greedy move; and the team's summed-utility gain if every UE yet to decide played
        greedy's move at once. In a later round (every UE has moved): `gains`, and 0."""
        from dataclasses import replace

        from mobrl.envs.observations import gains_given, slots_of
        from mobrl.network.service import links_after

        mine = slots_of(self.order[:, group], self.greedy[group])
        flags = (mine[:, None] == np.arange(1, self.k + 1)[None, :]).astype(float)
        if self.round > 0:
            return self.gains(group), flags, 0.0
        now = replace(self.state, conn=self.links.copy())
        act = np.where(self.decided, 0, self.greedy)
        team = float(now.utility_sum(links_after(now, act)) - now.utility_sum())
        act[group] = 0
        ahead = gains_given(self.state, self.order, links_after(now, act), group, self.k)
        return ahead, flags, team

    def play(self, act: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Every turn at once, `act(group, extra)` giving each group's slot actions: the
        step's slot actions of every UE (columns' order; 0 for UEs not acting)."""
        while self.groups:
            group = self.group
            self.decide(group, act(group, self.extra(group)))
            if self.last:
                break
            self.advance()
        return self.slots.copy()

    def decide(self, group: np.ndarray, actions: np.ndarray) -> None:
        """Record the slot actions of `group` (0 keeps, j toggles slot j's station) and apply
        them, in place of the group's earlier moves of the step, to the links the next turns
        see."""
        from mobrl.envs.observations import stations_of
        from mobrl.network.service import toggle

        self.slots[group] = actions
        self._gains = None
        self.links[:, group] = self.state.conn[:, group]
        station = stations_of(self.order[:, group], actions)
        on = station > 0
        toggle(self.links, self.state.reach, station[on] - 1, group[on])
        self.decided[group] = True


def extra_width(k: int, rounds: int = 1, view: str = "gains") -> int:
    """The columns a turn appends to the slot observation (`StepTurns.extra`)."""
    return k + len(TURN_OBS[view].bounds(k)[0]) + 1 + (rounds > 1)


def turn_space(
    space: gym.spaces.Box, k: int, rounds: int = 1, view: str = "gains"
) -> gym.spaces.Box:
    """A slot observation's space with a turn's columns appended (`StepTurns.extra`): k gains,
    the view's columns, then the decided share and (with several rounds) the round."""
    low, high = TURN_OBS[view].bounds(k)
    shares = 1 + (rounds > 1)
    low = np.concatenate([space.low, np.full(k, -np.inf), low, np.zeros(shares)])
    high = np.concatenate([space.high, np.full(k, np.inf), high, np.ones(shares)])
    return gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


class UETurnsEnv(UEAgentsEnv):
    """`UEAgentsEnv` with a step played in turns (`env.decide=in_turns`, see the module):
    each env step one group of UEs observes and acts; the core steps after the last turn.
    `mid_step` tells whether the last env step only recorded a turn. With `in_turns` off
    (set before `reset`) it is `UEAgentsEnv` itself, observations without the turn's
    columns."""

    def __init__(self, core: Any, team_reward: float = 0.0, rounds: int = 1, view: str = "gains"):
        super().__init__(core, team_reward)
        self.k = int(core.handler.topk)
        #: `env.turn_rounds`: how often the groups take their turns within a step
        self.rounds = int(rounds)
        #: `env.turn_obs`: what a turn observes beyond its slot observation
        self.view = view
        self.observation_spaces = {
            a: turn_space(s, self.k, self.rounds, view) for a, s in self.observation_spaces.items()
        }
        #: False: every UE decides at once (a policy that reads no observation plays so)
        self.in_turns = True
        #: whether the last `step` recorded a turn without stepping the core
        self.mid_step = False
        self.turns: StepTurns | None = None
        self._rows: dict[str, np.ndarray] = {}
        self._actions: dict[str, int] = {}
        self._agent_at: dict[int, str] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        self.mid_step = False
        if not self.in_turns:
            return obs, info
        return self._begin(obs), info

    def _begin(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Start a step's turns from the acting UEs' slot observations: the first group's."""
        from mobrl.envs.observations import ue_columns

        self._rows, self._actions = rows, {}
        column = ue_columns(self.core)
        agents = sorted(rows)  # ties of priority go by name, as /v1/decide breaks them
        cols = np.array([column[ue_id(a)] for a in agents], dtype=int)
        self._agent_at = dict(zip(cols.tolist(), agents))
        self.turns = StepTurns(self.core, self.k, cols, self.rounds, self.view)
        return self._observe()

    def _observe(self) -> dict[str, np.ndarray]:
        turns = self.turns
        if turns is None or not turns.groups:
            return {}
        group = turns.group
        extra = turns.extra(group)
        agents = [self._agent_at[c] for c in group.tolist()]
        return {a: np.concatenate([self._rows[a], e]) for a, e in zip(agents, extra)}

    def step(self, action_dict: dict[str, int]):
        if not self.in_turns:
            return super().step(action_dict)
        turns = self.turns
        if turns is not None and turns.groups:
            group = turns.group
            agents = [self._agent_at[c] for c in group.tolist()]
            acts = np.array([int(action_dict.get(a, 0)) for a in agents], dtype=np.int64)
            turns.decide(group, acts)
            self._actions.update(zip(agents, acts.tolist()))
            if not turns.last:
                turns.advance()
                self.mid_step = True
                obs = self._observe()
                flags = {a: False for a in obs}
                return obs, {}, {**flags, "__all__": False}, {**flags, "__all__": False}, {}
        self.mid_step = False
        obs, rewards, terms, truncs, info = super().step(self._actions)
        wide = {a: self._widen(a, o) for a, o in obs.items()}
        if terms["__all__"] or truncs["__all__"]:
            return wide, rewards, terms, truncs, info
        ended = {a for a, t in truncs.items() if t and a != "__all__"}
        live = {a: o for a, o in obs.items() if a not in ended}
        out = {a: wide[a] for a in sorted(ended, key=self._rank.__getitem__)}
        out.update(self._begin(live))
        flags = {a: a in ended for a in out}
        terms = {**{a: False for a in out}, "__all__": False}
        return out, rewards, terms, {**flags, "__all__": False}, info

    def _widen(self, agent: str, row: np.ndarray) -> np.ndarray:
        """A final observation in the turn's width: a slot row with zeros appended (a UE that
        leaves gets its final zeros in the turn's width already)."""
        if row.shape == self.observation_spaces[agent].shape:
            return row
        return np.concatenate(
            [row, np.zeros(extra_width(self.k, self.rounds, self.view), row.dtype)]
        )


def turn_env(env: Any) -> UETurnsEnv | None:
    """The `UETurnsEnv` behind `env` (wrappers), or None."""
    from mobrl.envs.wrappers import find_env

    return find_env(env, lambda node: isinstance(node, UETurnsEnv))
