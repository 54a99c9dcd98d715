"""Stations that sleep, finite demand and the day's load in the fast engine (docs/energy.md),
held to values computed by hand: max-min fair shares, a station's power at its load, wake-up
steps and energy, UEs present by the profile; a layout whose sections change nothing plays
the same episodes to the bit; and `energy_oracle`'s predicted step is the engine's own."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.core import metrics as keys
from mobrl.network.power_arrays import water_fill
from mobrl.network.power_predict import StepPredictor
from mobrl.network.service import greedy_moves, measured_links
from mobrl.scenarios.kinds.mobile import make_mobile_core
from mobrl.traffic import at_hour, hourly


def _layout(name: str, tmp_path, **sections) -> dict:
    """Built-in layout `name` with `sections` added (or replaced), validated as a file."""
    raw = yaml.safe_load(scenarios.path_of(name).read_text())
    raw.update(sections)
    path = tmp_path / f"{name}_x.yaml"
    path.write_text(yaml.safe_dump(raw))
    return scenarios.load(path)


def _core(layout: dict):
    return make_mobile_core(layout, "ma", engine="fast")


def _greedy_step(core) -> bool:
    act = greedy_moves(*measured_links(core))
    _, done = core.step_arrays(act)
    return done


def _realised(core, on: np.ndarray) -> tuple[float, np.ndarray]:
    """The objective and the present UEs' utilities of `core`'s next step, played on a copy
    with the stations `on` on the air (the others in micro sleep: no wake-up pending) and UEs
    playing greedy."""
    copy_ = copy.deepcopy(core)
    copy_.set_cell_states(np.where(on, 0, 1))
    before = copy_._tally.objective
    _greedy_step(copy_)
    return copy_._tally.objective - before, copy_._util[copy_._sel].copy()


def _episode(core, seed: int, steps: int = 100) -> list[tuple[np.ndarray, np.ndarray]]:
    core.reset(seed=seed)
    out = []
    for _ in range(steps):
        done = _greedy_step(core)
        out.append((core._util.copy(), core._macro.copy()))
        if done:
            break
    return out


# --- 1. sections that change nothing -------------------------------------------------------


@pytest.mark.parametrize("name", ["small", "uma19", "city"])
def test_power_and_full_buffer_with_every_station_on_play_the_same_episodes(name, tmp_path):
    """A power model whose stations all stay on, full buffer and a flat day: the same
    utilities and rates at every step as the layout without the sections."""
    plain = _core(scenarios.load(scenarios.path_of(name)))
    assert plain.power_model() is None and plain._off is None
    sections = {
        "power": {"model": "tr38864"},
        "traffic": {"demand": "full_buffer", "profile": "flat"},
        "step_seconds": 1.0,
    }
    powered = _core(_layout(name, tmp_path, **sections))
    assert powered.power_model() is not None
    steps = 30 if name == "city" else 100
    for seed in (0, 1):
        a, b = _episode(plain, seed, steps), _episode(powered, seed, steps)
        assert len(a) == len(b)
        for (ua, ma), (ub, mb) in zip(a, b):
            np.testing.assert_array_equal(ua, ub)
            np.testing.assert_array_equal(ma, mb)


# --- 2. max-min fair shares by hand ---------------------------------------------------------


def test_water_fill_by_hand():
    # station 0: links wanting 1, 5 and 8 of a rate of 10 (shares 0.1, 0.5, 0.8: 1.4 > 1);
    # the smallest gets 0.1, the others split the 0.9 left: 0.45 each
    # station 1: one link wanting 2 of 10 (0.2); station 2: two full-buffer links (inf): 0.5
    b = np.array([0, 0, 0, 1, 2, 2])
    cap = np.array([10.0, 10.0, 10.0, 10.0, 4.0, 8.0])
    need = np.array([1.0, 8.0, 5.0, 2.0, np.inf, np.inf])
    share, load = water_fill(b, cap, need, 3)
    np.testing.assert_allclose(share, [0.1, 0.45, 0.45, 0.2, 0.5, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(load, [1.0, 0.2, 1.0], rtol=0, atol=1e-15)
    # a link that carries nothing needs nothing
    share, load = water_fill(np.array([0, 0]), np.array([0.0, 5.0]), np.array([1.0, 1.0]), 1)
    np.testing.assert_allclose(share, [0.0, 0.2])


# --- 3. power at a load, sleep and wake-up --------------------------------------------------


def test_station_power_follows_its_load_and_state(tmp_path):
    """TR 38.864 category 1, set 1: micro sleep 55, active 280; a station's power in a step is
    55 + load x 225, a sleeping one's its state's (deep sleep 1)."""
    layout = _layout(
        "small",
        tmp_path,
        power={"model": "tr38864", "category": 1, "config": 1},
        traffic={"demand": {"model": "constant", "mbps": 0.05}},
    )
    core = _core(layout)
    core.reset(seed=0)
    for _ in range(5):
        _greedy_step(core)
        load = core.cell_loads()
        assert ((load >= 0) & (load <= 1)).all() and (load > 0).any()
        np.testing.assert_allclose(core._station_power, 55 + load * 225, rtol=1e-12)
    core.set_cell_states(["deep_sleep", "active", "active"])
    _greedy_step(core)
    assert core._station_power[0] == 1.0
    assert not core.connectivity()[0].any()


def test_sleeping_station_is_off_the_air_and_wakes_after_its_transition(tmp_path):
    """Category 2 deep sleep wakes in 10 s (Table 5.1-4): 10 steps of 1 s off the air, its
    17 s of relative power extra energy (Table 5.1-5) counted once."""
    layout = _layout("small", tmp_path, power={"model": "tr38864", "category": 2})
    core = _core(layout)
    core.reset(seed=0)
    _greedy_step(core)
    core.set_cell_states(["deep_sleep", "active", "active"])
    assert not core.reach_matrix()[0].any() and (core.snr_matrix()[0] == 0).all()
    _greedy_step(core)
    energy_before = core._tally.energy
    core.set_cell_states([0, 0, 0])  # wake: 10 steps
    state, wake = core.cell_states()
    assert state[0] == core.power_model().states.index("deep_sleep") and wake[0] == 10
    powers = []
    for _ in range(10):
        assert not core.reach_matrix()[0].any()
        _greedy_step(core)
        powers.append(core._station_power.copy())
    assert core.cell_states()[0][0] == 0 and core.reach_matrix()[0].any()
    assert all(p[0] == 1.0 for p in powers)  # deep sleep's power while waking
    spent = core._tally.energy - energy_before
    assert spent == pytest.approx(sum(p.sum() for p in powers) + 17.0, rel=1e-12)


def test_micro_sleep_wakes_at_once(tmp_path):
    layout = _layout("small", tmp_path, power={"model": "tr38864"})
    core = _core(layout)
    core.reset(seed=0)
    core.set_cell_states(["micro_sleep", "active", "active"])
    assert not core.reach_matrix()[0].any()
    core.set_cell_states(["active"] * 3)
    assert core.cell_states()[0][0] == 0


# --- 4. demand ------------------------------------------------------------------------------


def test_constant_demand_caps_each_rate_and_counts_what_is_served(tmp_path):
    layout = _layout("medium", tmp_path, traffic={"demand": {"model": "constant", "mbps": 0.3}})
    core = _core(layout)
    core.reset(seed=3)
    for _ in range(40):
        _greedy_step(core)
        active = core._active_mask
        assert (core._macro[active] <= 0.3 * (1 + 1e-12)).all()
        short = active & (core._macro < 0.3 * (1 - 1e-9))
        # a UE short of its demand is unconnected or at a station with no resources left
        linked = core.connectivity()[:, short]
        full = core.cell_loads() > 1 - 1e-9
        assert all(not col.any() or full[col].any() for col in linked.T)
    summary = core.energy_summary()
    assert 0 < summary[keys.NET_DEMAND_SERVED] <= 1
    assert keys.NET_POWER not in summary  # no power model: nothing about power


def test_ftp3_queues_files_until_served():
    from mobrl.traffic.demands import DEMANDS

    ftp = DEMANDS["ftp3"]
    params = ftp.check({"file_mb": 1.0, "mean_interval_s": 0.5}, "traffic.demand")
    rng = np.random.default_rng(0)
    state = ftp.start(params, 3, rng)
    present = np.array([True, True, False])
    want, arrived = ftp.offered(params, state, 1.0, present, rng)
    assert arrived[2] == 0 and (arrived % 8.0 == 0).all()
    np.testing.assert_allclose(want, arrived)  # an empty queue plus what arrived, over 1 s
    ftp.served(params, state, np.array([4.0, 0.0, 0.0]), 1.0)
    np.testing.assert_allclose(state, np.maximum(arrived - [4.0, 0.0, 0.0], 0))
    assert ftp.mean_mbps(params) == 16.0


# --- 5. the day -----------------------------------------------------------------------------


def test_diurnal_profile_is_the_digitised_curve_scaled_to_its_peak():
    from mobrl.traffic.profiles.diurnal import DIGITISED

    values = hourly("diurnal")
    assert values.max() == 1.0 and values.argmax() == 22
    np.testing.assert_allclose(values, np.asarray(DIGITISED) / 0.997)
    assert at_hour(values, 1.5) == pytest.approx((values[1] + values[2]) / 2)
    assert at_hour(values, 23.5) == pytest.approx((values[23] + values[0]) / 2)
    assert at_hour(values, 30.0) == pytest.approx(values[6])


def test_profile_file_with_header_and_hours(tmp_path):
    path = tmp_path / "day.csv"
    path.write_text("hour,load\n" + "".join(f"{h},{(h + 1) / 24:.6f}\n" for h in range(24)))
    values = hourly({"file": str(path)})
    np.testing.assert_allclose(values, (np.arange(24) + 1) / 24, atol=1e-6)


@pytest.mark.parametrize("hour", [6.0, 13.0, 22.0])
def test_ues_present_follow_the_profile(hour, tmp_path):
    layout = _layout("uma19_energy", tmp_path, traffic={"profile": "diurnal", "hour": hour})
    core = _core(layout)
    share = at_hour(hourly("diurnal"), hour)
    counts = []
    for seed in range(10):
        core.reset(seed=seed)
        counts.append(core._active_mask.mean())
    # 190 UEs x 10 episodes, each present with the profile's probability
    assert np.mean(counts) == pytest.approx(
        share, abs=4 * math.sqrt(share * (1 - share) / 1900) + 1e-9
    )
    assert core.hour == pytest.approx(hour)


# --- 6. the reference's predictions are the engine's step -----------------------------------


@pytest.mark.parametrize("name", ["uma19_energy", "medium"])
def test_predicted_step_is_the_step(name, tmp_path):
    """For sets of stations on the air (none waking), `StepPredictor` gives the objective the
    engine's next step then has, UEs playing greedy."""
    sections = {"power": {"model": "tr38864"}}
    if name == "medium":
        sections["traffic"] = {"demand": {"model": "constant", "mbps": 0.2}}
    else:
        sections["traffic"] = {"demand": {"model": "constant", "mbps": 2}, "hour": 21.0}
    core = _core(_layout(name, tmp_path, **sections))
    core.reset(seed=1)
    rng = np.random.default_rng(0)
    n = len(core.stations)
    for _ in range(6):
        _greedy_step(core)
        predict = StepPredictor(core)
        for _ in range(4):
            on = rng.random(n) < 0.7
            realised = _realised(core, on)[0]
            assert predict.value(on, 1) == pytest.approx(realised, rel=0, abs=1e-12)
    assert len({round(v, 9) for v in predict.cache.values()}) > 1  # the sets differ


def test_a_floor_charges_each_ues_service_lost_against_every_station_on(tmp_path):
    """`StepPredictor(core, floor=f)` scores the objective less f × the present UEs' mean
    of max(0, u_all − u): u each UE's utility after the engine's own next step with the set
    on the air, u_all with every station on (both realised on copies of the engine). With
    every station on it charges nothing; f = 0 is the plain score."""
    sections = {
        "power": {"model": "tr38864"},
        "traffic": {"demand": {"model": "constant", "mbps": 2}, "hour": 21.0},
    }
    core = _core(_layout("uma19_energy", tmp_path, **sections))
    core.reset(seed=4)
    rng = np.random.default_rng(3)
    n = len(core.stations)
    charged = 0
    for _ in range(4):
        _greedy_step(core)
        plain, zero = StepPredictor(core), StepPredictor(core, floor=0.0)
        floored = StepPredictor(core, floor=7.0)
        _, full = _realised(core, np.ones(n, dtype=bool))
        assert floored.value(np.ones(n, dtype=bool), 1) == pytest.approx(
            plain.value(np.ones(n, dtype=bool), 1), abs=1e-12
        )
        for _ in range(4):
            on = rng.random(n) < 0.6
            objective, util = _realised(core, on)
            lost = float(np.maximum(full - util, 0.0).mean())
            assert zero.value(on, 1) == plain.value(on, 1)
            assert floored.value(on, 1) == pytest.approx(objective - 7.0 * lost, abs=1e-12)
            charged += lost > 1e-6
    assert charged > 0  # some sets cost some UE service


# --- 7. the reference's search --------------------------------------------------------------


def test_search_finds_what_exhaustive_search_finds_and_never_less_than_the_rules(tmp_path):
    """On a 7-station layout at a quiet and a busy hour: the local search from the rules' sets
    reaches the exhaustive optimum in most steps, never predicts less than a rule's set, and
    never more than the optimum."""
    from mobrl.evaluation.baselines.energy import ThresholdPolicy, wanted
    from mobrl.evaluation.energy_oracle import _exhaustive, _local

    found, steps = 0, 0
    for hour in (4.0, 21.0):
        layout = _layout(
            "medium",
            tmp_path,
            power={"model": "tr38864", "weight": 0.3},
            traffic={
                "demand": {"model": "constant", "mbps": 0.5},
                "profile": "diurnal",
                "hour": hour,
            },
        )
        core = _core(layout)
        core.reset(seed=2)
        rule = ThresholdPolicy()
        rule.reset(2)
        for _ in range(12):
            predict = StepPredictor(core)

            def score(on, predict=predict):
                return predict.value(on, 1)

            starts = [np.ones(7, bool), wanted(core), rule.cell_states(core) == 0]
            local = _local(max(starts, key=score), score)
            best = _exhaustive(7, score)
            assert score(local) >= max(score(s) for s in starts) - 1e-12
            assert score(local) <= score(best) + 1e-12
            found += score(local) >= score(best) - 1e-9
            steps += 1
            _greedy_step(core)
    assert found >= 0.8 * steps


def test_a_smaller_weight_plans_no_less_energy(tmp_path):
    """`StepPredictor(core, weight)` scores service − weight·energy with the layout's energy
    term (the layout's own weight gives its values), and the best set under a smaller λ
    never uses less energy than under a larger one (`run.imitate.weight`'s cautious
    expert)."""
    from mobrl.evaluation.energy_oracle import _exhaustive

    layout = _layout(
        "medium",
        tmp_path,
        power={"model": "tr38864", "weight": 0.3},
        traffic={"demand": {"model": "constant", "mbps": 2.0}, "hour": 4.0},
    )
    core = _core(layout)
    core.reset(seed=3)
    rng = np.random.default_rng(1)
    differ = 0
    for _ in range(8):
        _greedy_step(core)
        own, at = StepPredictor(core), {w: StepPredictor(core, w) for w in (0.0, 0.03, 0.3)}
        for _ in range(3):
            on = rng.random(7) < 0.6
            assert at[0.3].value(on, 1) == pytest.approx(own.value(on, 1), abs=1e-12)
            energy = at[0.0].value(on, 1) - at[0.3].value(on, 1)  # 0.3 · power / reference
            assert at[0.03].value(on, 1) == pytest.approx(
                at[0.0].value(on, 1) - energy / 10, abs=1e-12
            )

        def spent(on, at=at):
            return at[0.0].value(on, 1) - at[0.3].value(on, 1)

        chosen = {w: _exhaustive(7, lambda on, p=p: p.value(on, 1)) for w, p in at.items()}
        assert spent(chosen[0.0]) >= spent(chosen[0.03]) - 1e-12
        assert spent(chosen[0.03]) >= spent(chosen[0.3]) - 1e-12
        differ += len({c.tobytes() for c in chosen.values()}) > 1
    assert differ > 0  # the weight changes the plan


def test_frames_show_sleeping_stations_and_the_power(tmp_path):
    from mobrl.rendering.frames import draw_frames, episode_scene, record_state

    core = _core(_layout("small", tmp_path, power={"model": "earth", "kind": "micro"}))
    core.reset(seed=0)
    core.set_cell_states(["sleep", "active", "active"])
    _greedy_step(core)
    state = record_state(core, 0, 0.0)
    assert state.asleep == [0]
    # EARTH micro (Table II): asleep 2 x 39 W; awake 2 x (56 + 2.6 x load x 6.3 W)
    load = core.cell_loads()
    awake = 2 * (56 + 2.6 * load[1:] * 6.3)
    assert state.power == pytest.approx(78 + awake.sum())
    scene = episode_scene(core, None)
    assert scene.power_unit == "W"
    (frame,) = draw_frames(scene, [state])
    assert frame.ndim == 3 and frame.shape[2] == 3


def test_energy_greedy_is_one_pass_of_the_prediction_from_the_least_loaded(tmp_path):
    """`energy_greedy`'s states: station b, in the order of the loads, is off the air exactly
    when the predicted two steps are better with it off, given the decisions before it and
    the stations after it on; the pass predicts no less than every station on, and no more
    than the exhaustive optimum (`energy_oracle` on 7 stations)."""
    from mobrl.evaluation.energy_oracle import EnergyGreedyPolicy, EnergyOraclePolicy
    from mobrl.network.offload import Offload

    layout = _layout(
        "medium",
        tmp_path,
        power={"model": "tr38864", "weight": 0.3},
        traffic={"demand": {"model": "constant", "mbps": 0.5}, "profile": "diurnal", "hour": 4.0},
    )
    core = _core(layout)
    core.reset(seed=3)
    rule, oracle = EnergyGreedyPolicy(), EnergyOraclePolicy()
    rule.reset(3)
    oracle.reset(3)
    sleeps = 0
    for _ in range(12):
        before, _ = core.cell_states()
        slow = (before > 0) & (core.power_model().wake_steps[before] > 0)
        predict, sleep = StepPredictor(core), rule.sleep_state(core)

        def score(on, predict=predict, slow=slow, sleep=sleep):
            return predict.two_steps(on & ~slow, on, sleep)

        on = rule.cell_states(core) == 0
        done = np.zeros(7, dtype=bool)
        for b in Offload(core).by_load():
            given = np.where(done, on, True)
            given[b] = False
            off_better = score(given) > score(np.where(done, on, True)) + 1e-12
            assert on[b] != off_better
            done[b] = True
        assert score(on) >= score(np.ones(7, bool)) - 1e-12
        assert score(on) <= score(oracle.cell_states(core) == 0) + 1e-12
        sleeps += int((~on).sum())
        core.set_cell_states(rule.cell_states(core))
        _greedy_step(core)
    assert sleeps > 0  # the quiet hour gives the pass something to decide
