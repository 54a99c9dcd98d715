"""`oracle_rollout`, the whole-episode reference for small layouts: it plays its candidates on
copies of the env, so what it plans is what the env then serves; it never serves an episode
less than `oracle`, and under interference it serves more. `oracle_horizon`, its bounded form
for layouts of any size: the same over a receding horizon, with the one-UE changes that lose
the least in the step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mobrl import scenarios
from mobrl.core import metrics as keys
from mobrl.envs.netstats import step_arrays
from mobrl.envs.wrappers import find_core
from mobrl.evaluation.policies import BASELINES
from mobrl.evaluation.rollout import episode_env, run_episode
from mobrl.scenarios.kinds.mobile import make_mobile_core


def _layout(seed: int, episode_length: int = 12) -> dict:
    """Four UMi cells 200 m apart, 6 UEs, active interference and proportional fair."""
    raw = {
        "width": 500.0,
        "height": 400.0,
        "seed": seed,
        "episode_length": episode_length,
        "station_defaults": {"bandwidth": 2e7, "frequency": 3500.0, "tx_power": 30, "height": 10},
        "stations": [{"x": x, "y": y} for x, y in ((150, 100), (350, 100), (150, 300), (350, 300))],
        "ues": {"count": 6, "height": 1.5, "velocity": 3.0},
        "radio": {
            "channel": "umi",
            "shadowing": True,
            "interference": "active",
            "scheduler": "proportional_fair",
        },
        "movement": {"model": "gauss_markov", "alpha": 0.75},
    }
    return scenarios.validate(raw, Path("rollout.yaml"))


def _config(seed: int) -> dict:
    return {
        "kind": "mobile",
        "id": "rollout",
        "scenario": "rollout",
        "layout": _layout(seed),
        "mode": "ma",
        "engine": "fast",
        "kwargs": {},
        "obs": "mobile",
        "reward": "mobile",
    }


def _played(core: object, name: str | type, seed: int = 0) -> tuple[float, object]:
    """The sum of the step utilities of an episode of baseline `name` (or class, reset with
    episode seed `seed`), stepped on the engine `core` with station actions, and the policy."""
    core.reset()
    policy = BASELINES[name]() if isinstance(name, str) else name()
    policy.reset(seed)
    total, done = 0.0, False
    while not done:
        value, done = core.step_stations(policy.station_actions(core))
        total += 0.0 if np.isnan(value) else value
    return total, policy


@pytest.mark.parametrize("layout", ["small", "interference"])
def test_step_stations_reports_the_recorded_step_utility(layout: str) -> None:
    core = make_mobile_core(_layout(1) if layout == "interference" else "small", "ma")
    core.reset()
    rng = np.random.default_rng(4)
    done = False
    while not done:
        actions = rng.integers(0, core.NUM_STATIONS + 1, core.NUM_USERS)
        value, done = core.step_stations(actions)
        recorded = step_arrays(core, sorted(core.users))[0]
        assert value == pytest.approx(float(np.nanmean(recorded)), abs=1e-12)


def test_rollout_serves_at_least_its_first_plan_and_oracle_and_more_under_interference() -> None:
    gains = []
    for seed in (0, 1, 2):
        oracle, _ = _played(make_mobile_core(_layout(seed), "ma"), "oracle")
        rollout, policy = _played(make_mobile_core(_layout(seed), "ma"), "oracle_rollout")
        # the first step's candidates include oracle's whole episode; each later step keeps
        # at least what carrying on the plan before it serves
        assert policy.first_value >= oracle - 1e-12
        assert rollout >= policy.first_value - 1e-12
        gains.append(rollout - oracle)
    assert max(gains) > 1e-3, gains  # moves whose worth shows only steps later


def test_rollout_plays_in_the_env_what_it_planned_on_copies() -> None:
    """Through the multi-agent env (`run_episode`), the episode's mean UE utility is the one
    its station actions give on the engine: deciding leaves the env as it was."""
    config = _config(2)
    planned, _ = _played(find_core(episode_env(config, 5)), "oracle_rollout")
    row = run_episode(config, BASELINES["oracle_rollout"](), 5)
    steps = config["layout"]["episode_length"]
    assert row[keys.UTILITY_MEAN] == pytest.approx(planned / steps, abs=1e-12)


def test_a_horizon_over_the_whole_episode_with_every_change_is_the_rollout() -> None:
    """`oracle_horizon`'s bounds lifted (a horizon of the episode's length, every one-UE
    change) give `oracle_rollout`'s episode: its plan's window, replayed each step, is the
    plan the rollout keeps."""
    from mobrl.evaluation.policies import HorizonOraclePolicy

    class Unbounded(HorizonOraclePolicy):
        HORIZON = 12
        CHANGES = 1000

    for seed in (0, 1):
        rollout, _ = _played(make_mobile_core(_layout(seed), "ma"), "oracle_rollout")
        unbounded, _ = _played(make_mobile_core(_layout(seed), "ma"), Unbounded)
        assert unbounded == rollout


def test_the_changes_kept_are_those_that_lose_least_in_the_step() -> None:
    """`_least_lost` ranks a step's one-UE changes of `oracle`'s move as the step's utility,
    scored whole for each changed move, ranks them (under interference, UEs coupled)."""
    from mobrl.evaluation.oracle import StepSearch, step_utility
    from mobrl.evaluation.policies import GreedyPolicy
    from mobrl.evaluation.references import _least_lost
    from mobrl.network.service import link_state

    core = make_mobile_core(_layout(4), "ma")
    core.reset()
    rng = np.random.default_rng(1)
    for _ in range(4):  # a few steps in, UEs hold links
        core.step_stations(rng.integers(0, core.NUM_STATIONS + 1, core.NUM_USERS))
    state = link_state(core)
    oracle = StepSearch().decide(core, GreedyPolicy().station_actions(core))
    changes = [
        (ue, a)
        for ue in range(core.NUM_USERS)
        for a in (0, *(np.flatnonzero(state.reach[:, ue]) + 1).tolist())
        if a != oracle[ue]
    ]
    assert len(changes) > 8
    values = []
    for ue, a in changes:
        moved = oracle.copy()
        moved[ue] = a
        values.append(step_utility(state, moved))
    assert max(values) - min(values) > 1e-4  # the ranking has something to rank
    kept = _least_lost(state, oracle, changes, 8)
    cut = sorted(values, reverse=True)[7]
    assert all(values[changes.index(c)] >= cut - 1e-12 for c in kept), (kept, values)
    assert len(set(kept)) == 8


def test_oracle_horizon_plays_beyond_the_rollouts_size_and_as_it_planned() -> None:
    from mobrl.evaluation.policies import check_baselines

    big = {**_config(0), "layout": {**_layout(0), "ues": {**_layout(0)["ues"], "count": 40}}}
    check_baselines(["oracle_horizon"], big)  # no refusal
    config = _config(2)
    planned, _ = _played(find_core(episode_env(config, 5)), "oracle_horizon")
    row = run_episode(config, BASELINES["oracle_horizon"](), 5)
    steps = config["layout"]["episode_length"]
    assert row[keys.UTILITY_MEAN] == pytest.approx(planned / steps, abs=1e-12)


def test_rollout_refuses_a_layout_beyond_its_size_and_the_stock_engine() -> None:
    from mobrl.core.errors import UserError
    from mobrl.evaluation.policies import check_baselines

    big = {**_config(0), "layout": {**_layout(0), "ues": {**_layout(0)["ues"], "count": 17}}}
    with pytest.raises(UserError, match="at most 16 UEs"):
        check_baselines(["oracle_rollout"], big)
    with pytest.raises(UserError, match="fast engine only"):
        check_baselines(["oracle_rollout"], {**_config(0), "engine": "stock"})


def test_a_copy_of_the_env_shares_its_realisations_and_steps_as_the_env() -> None:
    """The copies a planner plays on share the read-only field realisations (not 20 MB each)
    and own what a step changes: both then serve the same steps."""
    import copy

    core = make_mobile_core(_layout(3), "ma")
    core.reset()
    twin = copy.deepcopy(core)
    shadow, los = core._radio.sf_fields, core._radio.los_field
    assert twin._radio.sf_fields.values is shadow.values
    assert twin._radio.los_field.values is los.values
    assert twin._radio.sf_fields.grid.base is not shadow.grid.base
    assert twin._conn is not core._conn
    rng = np.random.default_rng(0)
    done = False
    while not done:
        actions = rng.integers(0, core.NUM_STATIONS + 1, core.NUM_USERS)
        value, done = core.step_stations(actions)
        assert twin.step_stations(actions) == (value, done)


def test_the_gap_is_measured_to_the_strongest_reference_played() -> None:
    from mobrl.evaluation.paired import gap_reference

    assert gap_reference(["greedy", "oracle", "oracle2"]) == "oracle2"
    assert gap_reference(["greedy", "oracle2", "oracle_horizon"]) == "oracle_horizon"
    assert gap_reference(["oracle_horizon", "oracle_rollout", "oracle"]) == "oracle_rollout"
    assert gap_reference(["greedy", "greedy_fill"]) is None


@pytest.mark.parametrize("layout", ["small", "interference"])
def test_a_sampled_future_moves_the_copy_elsewhere_and_leaves_the_env_its_own(
    layout: str,
) -> None:
    """`sample_future` gives a copy its own stream for the UEs' moves (mobile-env's waypoints,
    or Gauss-Markov): the copy's UEs go elsewhere than the env's, the same seed sends them the
    same way, and the env's own episode is untouched."""
    import copy

    def positions(core: object, steps: int) -> np.ndarray:
        for _ in range(steps):
            core.step_stations(np.zeros(core.NUM_USERS, dtype=np.int64))
        return np.array([(ue.x, ue.y) for ue in core.users.values()])

    def fresh() -> object:
        core = make_mobile_core(_layout(5) if layout == "interference" else "small", "ma")
        core.reset()
        positions(core, 2)
        return core

    real = positions(copy.deepcopy(fresh()), 10)
    core = fresh()
    twins = [copy.deepcopy(core) for _ in range(3)]
    for twin, seed in zip(twins, (7, 7, 8), strict=True):
        twin.sample_future(seed)
    sampled = [positions(twin, 10) for twin in twins]
    assert np.array_equal(sampled[0], sampled[1])
    assert not np.allclose(sampled[0], real) and not np.allclose(sampled[0], sampled[2])
    assert np.array_equal(positions(core, 10), real)


def test_oracle_mpc_plans_on_a_sampled_future_and_plays_the_real_one() -> None:
    """Its copies do not replay the real future, so what its first step's plan is worth
    differs from `oracle_horizon`'s (which does); it plays the same episode every time (its
    samples are drawn from the episode seed and the step), and through the env as on the
    engine."""
    served = []
    for _ in range(2):
        total, policy = _played(make_mobile_core(_layout(2), "ma"), "oracle_mpc")
        served.append(total)
    assert served[0] == served[1]
    _, horizon = _played(make_mobile_core(_layout(2), "ma"), "oracle_horizon")
    assert abs(policy.first_value - horizon.first_value) > 1e-9
    config = _config(2)
    planned, _ = _played(find_core(episode_env(config, 5)), "oracle_mpc", seed=5)
    row = run_episode(config, BASELINES["oracle_mpc"](), 5)
    steps = config["layout"]["episode_length"]
    assert row[keys.UTILITY_MEAN] == pytest.approx(planned / steps, abs=1e-12)


def test_a_planning_expert_labels_the_moves_it_plans_ahead() -> None:
    """`run.imitate` with a planning expert and UEs in turns: where `oracle_horizon`'s move
    departs from `oracle`'s step (`Labelled.ahead`) a row's label is the plan's move, and
    elsewhere `oracle`'s turn label (its search given the moves before, a best reply in the
    second round); `run.imitate.horizon` sets the expert's steps ahead. Some rows are
    planned ahead."""
    from mobrl.envs.observations import slots_of
    from mobrl.envs.turns import turn_env
    from mobrl.training.labels import TurnCollector, turn_labels

    config = {
        **_config(0),
        "layout": _layout(0, 30),
        "obs": "topk_gain",
        "topk": 3,
        "decide": "in_turns",
        "turn_rounds": 2,
        "policies": {f"ue_{i}": "shared" for i in range(6)},
    }
    oracle = BASELINES["oracle"]()
    seen = {"ahead": 0, "rows": 0, "second": 0}

    class Checked(TurnCollector):
        def _rows(self, env, core, obs, expert):  # type: ignore[no-untyped-def]
            found = super()._rows(env, core, obs, expert)
            if found is None:
                return found
            turns = turn_env(env).turns
            assert expert.HORIZON == 2
            _, y, _, ahead = found
            plan = slots_of(turns.order, expert.station_actions(core))[turns.group]
            step = slots_of(turns.order, expert.step_oracle)[turns.group]
            assert np.array_equal(ahead, plan != step)
            assert np.array_equal(y[ahead], plan[ahead])
            assert np.array_equal(y[~ahead], turn_labels(core, turns, oracle)[~ahead])
            seen["ahead"] += int(ahead.sum())
            seen["rows"] += len(y)
            seen["second"] += int(turns.round == 1)
            return found

    for seed in range(3):
        labelled = Checked(config, 3, "oracle_horizon", horizon=2).episode(1_000_000 + seed)
        assert len(labelled.ahead) == len(labelled.y)
    assert seen["ahead"] > 0 and seen["second"] > 0, seen
