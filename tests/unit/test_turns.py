"""`env.decide=in_turns` (mobrl.envs.turns): UE groups act one after another within a step,
each observing its slots' gains given the moves before it; the network's dynamics are those
of UEs deciding at once."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from
from mobrl.training.checks import validate_command_line


def _env(*args: str) -> dict:
    return env_config_from(validate_command_line(list(args)))


def test_groups_share_no_slot_station_and_go_by_priority() -> None:
    from mobrl.envs.turns import turn_groups

    # (k=2, UE): UE 0 and 1 share station 0, UE 2 hears 1 and 2, UE 3 station 2 only
    order = np.array([[0, 0, 1, 2], [1, -1, 2, -1]])
    cols = np.arange(4)
    groups = turn_groups(order, cols, np.array([0.1, 0.5, 0.3, 0.2]))
    assert [g.tolist() for g in groups] == [[1, 2], [3, 0]]
    for g in groups:
        stations = [s for c in g.tolist() for s in order[:, c].tolist() if s >= 0]
        assert len(stations) == len(set(stations))
    assert sorted(np.concatenate(groups).tolist()) == cols.tolist()


class _SlotRule:
    """Reads each UE's own slot observation only (its `topk_gain` gains): toggles the slot of
    the largest positive gain. The same actions whether UEs act in turns or at once."""

    name = "slot_rule"

    def __init__(self, k: int, width: int):
        self.k, self.width = k, width

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: dict, env: object = None) -> dict:
        out = {}
        for agent, row in observation.items():
            gains = row[self.width - self.k : self.width]
            out[agent] = int(np.argmax(gains)) + 1 if gains.max() > 1e-9 else 0
        return out


@pytest.mark.parametrize("scenario", ["small", "umi_dense"])
def test_turns_change_what_ues_know_not_the_network(scenario: str) -> None:
    """A rule reading only the slot observation plays the same episode in turns as at once;
    every turn observes the gains a toggle would bring given the moves before it, the team's
    summed utility recomputed from the links (interference counted on umi_dense)."""
    from mobrl.envs.observations import topk_size
    from mobrl.evaluation.rollout import episode_env, run_episode
    from mobrl.network.service import utility_sums

    at_once = _env(f"scenario={scenario}", "env.obs=topk_gain")
    in_turns = _env(f"scenario={scenario}", "env.obs=topk_gain", "env.decide=in_turns")
    twice = _env(f"scenario={scenario}", "env.obs=topk_gain", "env.decide=in_turns",
                 "env.turn_rounds=2")  # fmt: skip
    assert in_turns["decide"] == "in_turns" and "decide" not in at_once
    assert "turn_rounds" not in in_turns and twice["turn_rounds"] == 2
    assert in_turns["sampler"] == "multi_agent"  # not every slot acts each env step
    width = topk_size(3) + 3
    rule = _SlotRule(3, width)
    rows = [run_episode(c, rule, 7, max_steps=12) for c in (at_once, in_turns, twice)]
    assert rows[0] == rows[1] == rows[2]  # a move made again in a later round replaces itself

    env = episode_env(in_turns, 7)
    obs, _ = env.reset(seed=7)
    checked, turns_seen, steps = 0, 0, 0
    while checked < 20 and steps < 30:
        turns = env.turns
        state, links = turns.state, turns.links.copy()
        before = utility_sums(state, links[None])[0]
        for agent, row in obs.items():
            assert row.shape == env.observation_spaces[agent].shape
            c = turns.group[list(obs).index(agent)]
            assert row[-1] == pytest.approx(turns.decided[np.concatenate(turns.groups)].mean())
            for j in range(3):
                station = turns.order[j, c]
                if station < 0 or not state.reach[station, c]:
                    assert row[width + j] == 0.0
                    continue
                after = links.copy()
                after[station, c] = ~after[station, c]
                want = utility_sums(state, after[None])[0] - before
                assert row[width + j] == pytest.approx(want, rel=1e-5, abs=1e-5)
                checked += 1
        obs, rewards, _, _, _ = env.step(rule.act(obs))
        turns_seen += 1
        if env.mid_step:
            assert rewards == {}
        else:
            steps += 1
    assert checked >= 20 and turns_seen > steps
    env.close()


def test_the_baselines_play_in_turns_envs_at_once() -> None:
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import run_episode

    at_once = _env("scenario=small", "env.obs=topk_gain")
    in_turns = _env("scenario=small", "env.obs=topk_gain", "env.decide=in_turns")
    for name in ("greedy", "oracle"):
        rows = [run_episode(c, BASELINES[name](), 3, max_steps=20) for c in (at_once, in_turns)]
        assert rows[0] == rows[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["env.obs=topk", "env.decide=sometimes"], "Use env.decide=at_once"),
        (["env.obs=mobile", "env.decide=in_turns"], "env=ma with a slot observation"),
        (["env=central", "env.decide=in_turns"], "env=ma with a slot observation"),
        (["env.obs=topk", "env.turn_rounds=2"], "Add env.decide=in_turns"),
        (["env.obs=topk", "env.decide=in_turns", "env.turn_rounds=0"], "env.turn_rounds=0 is"),
        (["env.obs=topk", "env.decide=in_turns", "env.turn_rounds=9"], "from 1 to 4"),
        (["env.obs=topk", "env.decide=in_turns", "env.turn_rounds=1.5"], "env.turn_rounds=1.5"),
        (["env.obs=topk", "env.decide=in_turns", "env.turn_obs=later"], "Use env.turn_obs=gains"),
        (["env.obs=topk", "env.turn_obs=greedy_ahead"], "Add env.decide=in_turns"),
    ],
)
def test_decide_where_it_applies_only(args: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        _env("scenario=small", *args)


def test_turn_labels_search_given_the_moves_before() -> None:
    """The oracle's labels in turns: the first group's are its search with nothing decided;
    a group's labels never name a station out of its slots; the expert's episode in turns
    scores at least greedy's."""
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import run_episode
    from mobrl.training.labels import TurnCollector

    in_turns = _env("scenario=small", "env.obs=topk_gain", "env.decide=in_turns")
    x, y, played, revised, _ = TurnCollector(in_turns, 3).episode(1_000_000)
    assert not revised.any()  # one round: no move is revised
    assert x.shape[1] == 5 * 3 + 2 + 3 + 3 + 1 and len(x) == len(y) == len(played)
    assert (played == y).all() and ((0 <= y) & (y <= 3)).all() and (y > 0).any()

    class Labels:
        name, reads_observation = "labels", True

        def reset(self, seed: int | None = None) -> None:
            self.i = 0

        def act(self, observation: dict, env: object = None) -> dict:
            out = dict(zip(observation, y[self.i : self.i + len(observation)].tolist()))
            self.i += len(observation)
            return out

    expert = run_episode(in_turns, Labels(), 1_000_000)
    greedy = run_episode(in_turns, BASELINES["greedy"](), 1_000_000)
    assert expert["ue/utility/mean"] >= greedy["ue/utility/mean"] - 1e-9


def test_a_later_round_revises_each_move_given_every_other_ues() -> None:
    """With env.turn_rounds=2 every group takes a second turn once all have decided: its
    gains are the team's utility change of toggling given every other UE's move of the step
    (its own undone; on the signed log scale), its round column is 1, its new move replaces
    its first, and the core steps once, after the last group's second turn. The oracle's
    label there is each UE's best reply to the others' moves, which the turn's gains tell."""
    from mobrl.envs.turns import extra_width, signed_log
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import episode_env
    from mobrl.network.service import utility_sums
    from mobrl.training.labels import turn_labels

    config = _env("scenario=umi_dense", "env.obs=topk_gain", "env.decide=in_turns",
                  "env.turn_rounds=2")  # fmt: skip
    assert extra_width(3, 2) == 5
    # sign(g) ln(1 + |g| / 1e-4), by hand
    scaled = signed_log(np.array([1e-4, -9e-4, 0.0]))
    assert scaled == pytest.approx([np.log(2.0), -np.log(10.0), 0.0], rel=1e-12)
    env = episode_env(config, 11)
    obs, _ = env.reset(seed=11)
    width = env.observation_spaces[next(iter(obs))].shape[0]
    oracle = BASELINES["oracle"]()
    step, checked, revised, away = 0, 0, 0, 0
    while step < 2:
        turns = env.turns
        state, group = turns.state, turns.group
        rows = np.stack(list(obs.values()))
        assert rows.shape[1] == width and (rows[:, -1] == turns.round).all()
        if turns.round == 1:
            for i, c in enumerate(group.tolist()):
                others = turns.links.copy()
                others[:, c] = state.conn[:, c]
                before = utility_sums(state, others[None])[0]
                for j in range(3):
                    station = turns.order[j, c]
                    if station < 0 or not state.reach[station, c]:
                        continue
                    after = others.copy()
                    after[station, c] = ~after[station, c]
                    want = signed_log(utility_sums(state, after[None])[0] - before)
                    assert rows[i, width - 5 + j] == pytest.approx(want, rel=1e-5, abs=1e-5)
                    checked += 1
            # the oracle's label: each UE's best reply, the slot of its largest positive gain
            labels = turn_labels(env.core, turns, oracle)
            gains = rows[:, width - 5 : width - 2]
            assert labels.tolist() == np.where(gains.max(1) > 1e-6, gains.argmax(1) + 1, 0).tolist()
            other = int((labels != 1).sum())  # every UE toggled its slot 1 in round 1
            # a UE that toggled a station and toggles nothing now keeps its links
            moves = np.zeros(len(group), dtype=np.int64)
            obs, rewards, *_ = env.step(dict(zip(obs, moves.tolist())))
            assert np.array_equal(turns.links[:, group], state.conn[:, group])
            revised += 1
            away += other
        else:
            obs, rewards, *_ = env.step({a: 1 for a in obs})
        if not env.mid_step:
            assert turns.round == 1 and turns.last
            step += 1
        else:
            assert rewards == {}
    assert checked >= 10 and revised >= 2 and away > 0  # some labels revise the first move
    env.close()


def test_run_imitate_finds_the_rows_that_revise_a_move() -> None:
    """In two rounds, a row is a revision (`Labelled.revised`, weighed by
    run.imitate.revisions) exactly where a second turn's label changes the UE's first move of
    the step: replaying the moves played turn by turn finds the same rows. A learner that
    toggles its first slot in every turn is revised often; the expert, in one round, never."""
    from mobrl.evaluation.rollout import episode_env
    from mobrl.training.labels import TurnCollector

    class FirstSlot:
        def reset(self, seed: int | None = None) -> None:
            pass

        def act(self, observation: dict, env: object = None) -> dict:
            return {a: 1 for a in observation}

    config = _env("scenario=small", "env.obs=topk_gain", "env.decide=in_turns",
                  "env.turn_rounds=2")  # fmt: skip
    x, y, played, revised, _ = TurnCollector(config, 3).episode(1_000_003, learner=FirstSlot())
    assert (played == 1).all() and (x[revised, -1] == 1).all()
    env = episode_env(config, 1_000_003)
    obs, _ = env.reset(seed=1_000_003)
    want, i = [], 0
    while obs:
        turns, n = env.turns, len(obs)
        first = turns.slots[turns.group]
        want += ((y[i : i + n] != first) & (turns.round == 1)).tolist()
        obs, _, term, trunc, _ = env.step(dict(zip(obs, played[i : i + n].tolist())))
        i += n
        if term["__all__"] or trunc["__all__"]:
            break
    env.close()
    assert i == len(y) and revised.tolist() == want and revised.sum() > 10


def test_greedy_ahead_observes_the_later_ues_playing_greedy() -> None:
    """With env.turn_obs=greedy_ahead a first-round turn also observes, per slot, the team's
    summed-utility change of toggling given the moves before it and every UE yet to decide
    (the group aside) playing greedy's move; which slot is the UE's own greedy move; and the
    team's gain if every UE yet to decide played greedy's move at once: each recomputed here
    from the links (interference and proportional fair on umi_dense). In the second round the
    ahead gains are the turn's gains and the team's gain is 0."""
    from dataclasses import replace

    from mobrl.envs.observations import topk_size
    from mobrl.envs.turns import extra_width, signed_log
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import episode_env
    from mobrl.network.service import links_after, utility_sums

    config = _env("scenario=umi_dense", "env.obs=topk_gain", "env.decide=in_turns",
                  "env.turn_rounds=2", "env.turn_obs=greedy_ahead")  # fmt: skip
    assert config["turn_obs"] == "greedy_ahead"
    assert extra_width(3, 2, "greedy_ahead") == 3 + 7 + 2
    base = topk_size(3) + 3  # topk_gain: the slot observation with its k gains
    env = episode_env(config, 5)
    obs, _ = env.reset(seed=5)
    checked = {"ahead": 0, "team": 0, "flag": 0, "later": 0}
    moved = False
    for _ in range(60):
        turns = env.turns
        state, links, group = turns.state, turns.links.copy(), turns.group
        greedy = BASELINES["greedy"]().station_actions(env.core)
        assert np.array_equal(turns.greedy, greedy)
        rows = np.stack(list(obs.values()))
        assert rows.shape[1] == env.observation_spaces[next(iter(obs))].shape[0]
        gains = rows[:, base : base + 3]
        ahead, flags, team = (rows[:, base + 3 : base + 6], rows[:, base + 6 : base + 9],
                              rows[:, base + 9])  # fmt: skip
        now = replace(state, conn=links)
        if turns.round == 0:
            later = np.where(turns.decided, 0, greedy)
            want = utility_sums(state, links_after(now, later)[None])[0]
            want = signed_log(want - utility_sums(state, links[None])[0])
            assert team == pytest.approx(np.full(len(group), want), rel=1e-5, abs=1e-5)
            checked["team"] += 1
            later[group] = 0
            others = links_after(now, later)
            before = utility_sums(state, others[None])[0]
            for i, c in enumerate(group.tolist()):
                for j in range(3):
                    station = turns.order[j, c]
                    flag = greedy[c] > 0 and station == greedy[c] - 1
                    assert flags[i, j] == float(flag)
                    checked["flag"] += flag
                    if station < 0 or not state.reach[station, c]:
                        assert ahead[i, j] == 0.0
                        continue
                    after = others.copy()
                    after[station, c] = ~after[station, c]
                    want = signed_log(utility_sums(state, after[None])[0] - before)
                    assert ahead[i, j] == pytest.approx(want, rel=1e-5, abs=1e-5)
                    checked["ahead"] += 1
            moved |= bool((later != 0).any())
        else:
            assert np.array_equal(ahead, gains) and (team == 0).all()
            checked["later"] += 1
        # each UE plays its greedy slot, so later turns see moves made
        acts = {a: int(np.argmax(f)) + 1 if f.any() else 0 for a, f in zip(obs, flags)}
        obs, *_ = env.step(acts)
    env.close()
    assert moved and checked["ahead"] >= 30 and checked["flag"] > 0
    assert checked["team"] > 0 and checked["later"] > 0


def test_ues_that_leave_mid_episode_end_with_an_observation_of_their_space(tmp_path) -> None:
    """With UEs arriving and leaving (and a profile over the day), every observation a turn
    env hands out fits its agent's space: a UE that leaves ends with its final zeros in the
    turn's width, beside the next step's first group."""
    import yaml

    from mobrl import scenarios
    from mobrl.evaluation.rollout import episode_env

    raw = yaml.safe_load(scenarios.path_of("medium").read_text())
    raw["arrival"] = {"model": "random", "window": 40, "min_stay": 5, "max_stay": 30}
    path = tmp_path / "leaving.yaml"
    path.write_text(yaml.safe_dump(raw))
    config = _env(f"scenario.path={path}", "env.obs=topk_gain", "env.decide=in_turns")
    env = episode_env(config, 1)
    obs, _ = env.reset(seed=1)
    left = 0
    for _ in range(2000):
        for agent, row in obs.items():
            assert row.shape == env.observation_spaces[agent].shape, agent
        obs, _, terms, truncs, _ = env.step({a: 0 for a in obs})
        left += sum(1 for a, t in truncs.items() if t and a != "__all__")
        if terms["__all__"] or truncs["__all__"]:
            break
    assert left > 0  # some UE left mid-episode
