"""Cells deciding in turns (`env=cells env.decide=in_turns`, mobrl.envs.cell_turns): groups
of cells that are not each other's neighbours take turns from the least loaded; a turn
observes the step's row with its neighbours' requests so far, a flag per slot and its
predicted gain; the same requests played in turns or at once give the same episode; the
rules play at once; the imitation's labels are the reference's, searched again given the
requests before a turn where those depart from its plan."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.envs.cell_turns import GAIN_SCALE, cell_groups, cell_turns_env, turn_width
from mobrl.envs.cells import NEIGHBOUR, OWN, cell_agent, cell_index, observation_size
from mobrl.envs.factory import env_config_from
from mobrl.evaluation.baselines.energy import ThresholdPolicy
from mobrl.evaluation.rollout import episode_env, run_episode
from mobrl.training.checks import validate_command_line

K = 6


def _config(*extra: str) -> dict:
    return env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells", *extra]))


class _Quiet:
    """Requests from a cell's own columns only (sleep where its last load is low), so at
    once and in turns it asks the same."""

    name = "quiet"

    def reset(self, seed=None):
        pass

    def act(self, observation, env=None):
        return {a: int(row[3] < 0.15) for a, row in observation.items()}


def test_groups_hold_no_two_neighbours_and_start_from_the_least_loaded() -> None:
    from mobrl.network.offload import Offload

    env = episode_env(_config("env.decide=in_turns"), 3)
    env.reset(seed=3)
    turns = cell_turns_env(env)
    groups = turns.groups
    flat = np.concatenate(groups)
    assert sorted(flat.tolist()) == list(range(19))
    slots = turns._view.slots
    for group in groups:
        for b in group.tolist():
            assert not set(slots[b].tolist()) & set(group.tolist())
    order = Offload(turns.core).by_load()
    assert groups[0][0] == order[0]
    # each cell is in the first group it fits, taken in the order of the loads
    assert cell_groups(order, slots)[0].tolist() == groups[0].tolist()
    assert 2 < len(groups) < 19  # turns, but not one cell at a time


@pytest.mark.parametrize("floor", [0.0, 2.0])
def test_a_turn_sees_the_requests_before_it_and_its_predicted_gain(floor: float) -> None:
    """The gain is the reference's prediction: with env.gain_floor F, the one it plans with
    at a service floor F (`run.imitate.floor`)."""
    from mobrl.network.power_predict import StepPredictor

    env = episode_env(_config("env.decide=in_turns", f"env.gain_floor={floor}"), 4)
    obs, _ = env.reset(seed=4)
    turns = cell_turns_env(env)
    for _ in range(30):  # into the day, where some cells ask to sleep
        obs, *_ = env.step({a: 1 for a in obs})
    while turns.turn != 0:
        obs, *_ = env.step({a: 1 for a in obs})
    start = turns._view.rows(turns.core, turns.weight)
    first = turns.group.tolist()
    obs, *_ = env.step({cell_agent(b): 1 for b in first})  # the first group asks to sleep
    assert turns.mid_step and turns.turn == 1
    size = observation_size(K) + turn_width(K)
    sleep = turns.core.power_model().deepest_within(1) or 1
    state, _ = turns.core.cell_states()
    slow = (state > 0) & (turns.core.power_model().wake_steps[state] > 0)
    predict = StepPredictor(turns.core, floor=floor)
    plain = StepPredictor(turns.core)
    seen_request, floor_moved = 0, 0
    for agent, row in obs.items():
        b = cell_index(agent)
        assert row.shape == (size,) and b in turns.group.tolist()
        for j, n in enumerate(turns._view.slots[b].tolist()):
            asleep, flag = row[OWN + NEIGHBOUR * j + 1], row[observation_size(K) + j]
            if n in first:
                assert flag == 1.0 and asleep == 1.0
                seen_request += 1
            else:
                assert flag == 0.0 and asleep == start[b, OWN + NEIGHBOUR * j + 1]
        # the rest of the row is the step's row at its start
        others = [c for c in range(observation_size(K)) if (c - OWN) % NEIGHBOUR != 1 or c < OWN]
        assert np.array_equal(row[others], start[b, others])
        on = np.ones(19, dtype=bool)
        on[first] = False
        off = on.copy()
        off[b] = False
        gain = predict.two_steps(off & ~slow, off, sleep) - predict.two_steps(on & ~slow, on, sleep)
        assert row[-1] == pytest.approx(np.sign(gain) * np.log1p(abs(gain) / GAIN_SCALE))
        unpriced = plain.two_steps(off & ~slow, off, sleep) - plain.two_steps(on & ~slow, on, sleep)
        floor_moved += not np.isclose(gain, unpriced, rtol=0, atol=1e-12)
    assert seen_request > 0
    # the floor prices what some of these sleeps would take from UEs
    assert (floor_moved > 0) == (floor > 0)


def test_requests_in_turns_play_the_episode_at_once_and_rules_play_at_once() -> None:
    at_once, in_turns = _config(), _config("env.decide=in_turns")
    for policy in (_Quiet(), ThresholdPolicy()):
        a, b = run_episode(at_once, policy, 1000), run_episode(in_turns, policy, 1000)
        for key in (
            "return",
            "length",
            "network/objective",
            "network/energy",
            "network/asleep_fraction",
        ):
            assert a[key] == b[key], (policy.name, key)
    assert a["network/asleep_fraction"] > 0


def test_rewards_arrive_after_the_last_turn_for_every_cell() -> None:
    env = episode_env(_config("env.decide=in_turns"), 5)
    obs, _ = env.reset(seed=5)
    turns = cell_turns_env(env)
    groups = len(turns.groups)
    for _ in range(groups - 1):
        obs, rewards, *_ = env.step({a: 0 for a in obs})
        assert rewards == {} and turns.mid_step
    obs, rewards, *_ = env.step({a: 0 for a in obs})
    assert not turns.mid_step and sorted(rewards) == sorted(turns.cells)
    service, power = turns.core.cell_parts()
    assert sum(rewards.values()) == pytest.approx(
        19 * float((service - turns.weight * power).sum())
    )


def test_labels_in_turns_are_the_reference_given_the_requests_before() -> None:
    from mobrl.evaluation.energy_oracle import EnergyOraclePolicy
    from mobrl.training.labels import collector

    config = _config("env.decide=in_turns")
    labelled = collector(config, 0, expert="energy_oracle").episode(7)
    assert labelled.x.shape[1] == observation_size(K) + turn_width(K)
    assert np.array_equal(labelled.y, labelled.played)  # the expert plays its labels
    # a learner that asks the opposite: later turns are labelled by the search given it
    env = episode_env(config, 7)
    obs, _ = env.reset(seed=7)
    turns = cell_turns_env(env)
    oracle = EnergyOraclePolicy()
    oracle.reset(7)
    for _ in range(40):
        obs, *_ = env.step({a: 0 for a in obs})
    while turns.turn != 0:
        obs, *_ = env.step({a: 0 for a in obs})
    plan = oracle.cell_states(turns.core)
    first = turns.group
    env.step({cell_agent(b): int(plan[b] == 0) for b in first.tolist()})
    on = turns.requests == 0
    given = oracle.given(turns.core, turns.decided, on)
    assert np.array_equal(given[first] == 0, on[first])  # the requests before stay


@pytest.mark.parametrize(
    "overrides, named",
    [
        (["env=hierarchical", "env.decide=in_turns"], "env.decide=in_turns"),
        (["env=cells", "env.decide=in_turns", "env.turn_rounds=2"], "env.turn_rounds=2"),
        (["env=cells", "env.decide=in_turns", "env.turn_obs=greedy_ahead"], "env.turn_obs"),
        (["env=cells", "env.gain_floor=1"], "env.gain_floor=1"),
        (["env=ma", "env.gain_floor=1"], "env.gain_floor=1"),
        (["env=cells", "env.decide=in_turns", "env.gain_floor=-1"], "env.gain_floor=-1"),
    ],
)
def test_turn_keys_that_do_not_apply_to_cells_are_refused(overrides, named) -> None:
    with pytest.raises(UserError) as caught:
        env_config_from(validate_command_line(["scenario=uma19_energy", *overrides]))
    assert named in str(caught.value) and "\n" not in str(caught.value)
