"""`env=cells` (mobrl.envs.cells): one agent per station on a layout with `power:`. Its
rewards split the step's objective among the cells (they sum to it), the field's cell rules
played through it give the episodes they give in `env=ma`, and each cell observes its own
state, its nearest stations in fixed slots and the time of day."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mobrl import energy, scenarios
from mobrl.core.errors import UserError
from mobrl.envs.cells import NEIGHBOUR, OWN, CellsEnv, cell_agent, observation_size
from mobrl.envs.factory import env_config_from
from mobrl.evaluation.policies import check_baselines, make_baseline
from mobrl.evaluation.rollout import run_episode
from mobrl.scenarios.kinds.mobile import make_mobile_core
from mobrl.training.checks import validate_command_line


def _env(team_reward: float = 0.5, neighbours: int = 6, layout: str = "uma19_energy", guard="none"):
    core = make_mobile_core(scenarios.load(scenarios.path_of(layout)), "ma")
    return CellsEnv(core, team_reward=team_reward, neighbours=neighbours, guard=guard)


@pytest.mark.parametrize("team", [0.0, 0.5, 1.0])
def test_rewards_split_the_step_objective(team: float) -> None:
    """Each cell's share (its power, the service of the UEs whose strongest station it is)
    sums to the step's objective; with env.team_reward the reward mixes the cell's share,
    counted N times, with the objective, so the sum over cells is N times it either way."""
    env = _env(team_reward=team)
    env.reset(seed=2)
    core = env.core
    rng = np.random.default_rng(0)
    n = len(env.possible_agents)
    cells = core.power_model()
    for _ in range(30):
        acts = {a: int(rng.integers(0, len(cells.states))) for a in env.agents}
        _, rewards, *_ = env.step(acts)
        shares, objective = core.cell_objectives(), core.step_objective()
        assert shares.sum() == pytest.approx(objective, abs=1e-12)
        r = np.array([rewards[a] for a in env.possible_agents])
        np.testing.assert_allclose(r, (1 - team) * n * shares + team * objective, atol=1e-12)
        assert r.sum() == pytest.approx(n * objective, abs=1e-9)
        # a sleeping station whose best UEs are none: its share is its power's alone
        state, _ = core.cell_states()
        best = core.best_stations()
        for b in np.flatnonzero(state > 0):
            if not np.any(best[core._sel] == b):
                power = core.cell_powers()[b]
                expected = -cells.weight * power / cells.reference()
                assert shares[b] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("rule", ["all_on", "idle_off", "threshold"])
def test_cell_rules_play_the_same_episodes_as_cell_agents(rule: str) -> None:
    """A cell rule played through `env=cells` (its states as the cells' actions, UEs by
    greedy in the env) gives the episode it gives in `env=ma` (states set, UEs by greedy)."""
    rows = {}
    for mode in ("ma", "cells"):
        cfg = validate_command_line(["scenario=uma19_energy", f"env={mode}"])
        rows[mode] = run_episode(env_config_from(cfg), make_baseline(rule), 7)
    ma, cells = rows["ma"], rows["cells"]
    for key, value in ma.items():
        if key == "return":  # mobile-env's reward in env=ma, the cells' objective here
            continue
        same = value == cells[key] or (math.isnan(value) and math.isnan(cells[key]))
        assert same, (key, value, cells[key])


@pytest.mark.parametrize("ues", ["a3", "greedy_rsrp"])
def test_the_ues_follow_env_ue_policy_as_the_composed_rule_has_them(ues: str) -> None:
    """With `env.ue_policy`, a cell rule played through `env=cells` gives the episode that
    the rule composed with the UE rule of that name (`threshold+a3`) gives in `env=ma`."""
    cfg = validate_command_line(["scenario=uma19_energy", "env=ma"])
    ma = run_episode(env_config_from(cfg), make_baseline(f"threshold+{ues}"), 5)
    cfg = validate_command_line(["scenario=uma19_energy", "env=cells", f"env.ue_policy={ues}"])
    cells = run_episode(env_config_from(cfg), make_baseline("threshold"), 5)
    greedy = run_episode(
        env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"])),
        make_baseline("threshold"),
        5,
    )
    for key, value in ma.items():
        if key != "return":
            assert value == cells[key] or (math.isnan(value) and math.isnan(cells[key])), key
    assert any(greedy[k] != cells[k] for k in ma if k != "return")  # the UEs' policy tells


def test_a_cell_observes_itself_its_nearest_stations_and_the_hour() -> None:
    env = _env(neighbours=3)
    obs, _ = env.reset(seed=4)
    core = env.core
    assert set(obs) == {cell_agent(b) for b in range(19)}
    assert obs["cell_0"].shape == (observation_size(3),) == (OWN + 3 * NEIGHBOUR + 4,)
    assert all(env.observation_spaces[a].contains(o) for a, o in obs.items())
    # station 0's slots: its three nearest stations by distance
    xy = np.array([[b.x, b.y] for b in core._bs_list], dtype=float)
    dist = np.hypot(*(xy - xy[0]).T)
    dist[0] = np.inf
    nearest = np.argsort(dist, kind="stable")[:3]
    np.testing.assert_array_equal(env._view.slots[0], nearest)
    # a neighbour put to sleep is seen asleep by station 0, and station 0 sees itself active
    target = np.zeros(19, dtype=int)
    target[nearest[0]] = core.power_model().states.index("deep_sleep")
    obs, *_ = env.step({cell_agent(b): int(s) for b, s in enumerate(target)})
    row = obs["cell_0"]
    assert row[0] == 1.0  # active
    first = row[OWN : OWN + NEIGHBOUR]
    assert first[0] == 1.0 and first[1] == 1.0  # present, asleep
    asleep = obs[cell_agent(int(nearest[0]))]
    assert asleep[0] == 0.0 and asleep[1] == 1.0  # not active, in the deepest state
    # the time of day and the profile's level, then λ over its default
    hour = core.hour
    context = row[-4:]
    assert context[0] == pytest.approx(math.sin(2 * math.pi * hour / 24), abs=1e-6)
    assert context[1] == pytest.approx(math.cos(2 * math.pi * hour / 24), abs=1e-6)
    assert 0.0 < context[2] <= 1.0
    assert context[3] == pytest.approx(core.power_model().weight / energy.WEIGHT)


def test_the_guard_grants_a_sleep_only_where_the_cells_ues_can_move() -> None:
    """Under env.guard=coverage every cell may ask to sleep every step and no present UE in
    a station's range is left without a link; the requests it grants are those `Offload`
    grants from the least loaded cell with no load limit (`capacity`: up to the hosts' full
    resources, so fewer); without the guard the same requests put every station to sleep and
    no UE is served."""
    from mobrl.network.offload import Offload

    limits = {"coverage": math.inf, "capacity": 1.0}
    slept = {}
    for guard in ("coverage", "capacity", "none"):
        env = _env(guard=guard)
        env.reset(seed=3)
        core = env.core
        deep = core.power_model().states.index("deep_sleep")
        asked = np.full(19, deep)
        for _ in range(4):
            if guard in limits:
                offload = Offload(core)
                left = [b for b in offload.by_load() if offload.leave(b, limits[guard])]
                assert offload.expect[offload.hosting].max(initial=0.0) <= limits[guard]
                expected = np.where(np.isin(np.arange(19), left), deep, 0)
                # the stations asleep already stay asleep unless one of their UEs is stranded
                state, _ = core.cell_states()
                expected[state > 0] = deep
                np.testing.assert_array_equal(env.granted(asked), expected)
            env.step({cell_agent(b): deep for b in range(19)})
            v = core.cell_view()
            state, _ = core.cell_states()
            reachable = v.present & (v.best >= 0)
            linked = core.connectivity().any(axis=0)
            slept[guard] = slept.get(guard, 0) + int((state > 0).sum())
            if guard in limits:
                assert 0 < (state > 0).sum() < 19
                assert linked[reachable].all()
            else:
                assert (state > 0).all() and not linked[reachable].any()
    assert slept["capacity"] < slept["coverage"]


def test_the_guard_wakes_a_sleeping_cell_whose_ue_has_no_station_on_the_air() -> None:
    env = _env(guard="coverage")
    env.reset(seed=3)
    core = env.core
    light = core.power_model().states.index("light_sleep")
    env.guard = "none"  # every station asleep first
    env.step({cell_agent(b): light for b in range(19)})
    env.guard = "coverage"
    granted = env.granted(np.full(19, light))
    best = core.best_stations()[core.cell_view().present]
    # with every station off the air, each station some present UE would link to must wake
    np.testing.assert_array_equal(granted == 0, np.isin(np.arange(19), best))


def test_energy_weight_sets_the_objectives_lambda() -> None:
    cfg = validate_command_line(["scenario=uma19_energy", "env=cells", "env.energy_weight=0.2"])
    config = env_config_from(cfg)
    assert config["layout"]["power"]["weight"] == 0.2
    assert config["mode"] == "cells" and config["neighbours"] == 6
    assert config["guard"] == "coverage"


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["scenario=uma19", "env=cells"], "has no power: section"),
        (["scenario=uma19_energy", "env=cells", "env.neighbours=0"], "env.neighbours=0"),
        (["scenario=uma19_energy", "env=cells", "env.energy_weight=-1"], "env.energy_weight=-1"),
        (["scenario=uma19", "env.energy_weight=0.1"], "has no power: section"),
        (["scenario=uma19_energy", "env=cells", "env.guard=load"], "env.guard 'load'"),
        (["scenario=uma19", "run.eval.metric=objective"], "has no power: section"),
        (["scenario=uma19_energy", "env=cells", "env.ue_policy=zoo:uma19"], "not a trained"),
        (["scenario=uma19_energy", "env=cells", "env.ue_policy=a4"], "env.ue_policy 'a4'"),
    ],
)
def test_bad_cell_settings_are_one_line(overrides: list[str], words: str) -> None:
    with pytest.raises(UserError) as caught:
        env_config_from(validate_command_line(overrides))
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_cell_agents_are_measured_against_cell_rules_only() -> None:
    config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))
    check_baselines(["all_on", "idle_off", "threshold", "energy_oracle"], config)
    with pytest.raises(UserError, match="does not apply"):
        check_baselines(["greedy"], config)


def test_cells_as_a_pettingzoo_parallel_env() -> None:
    """`mobrl.parallel_env(..., env="cells")` passes PettingZoo's parallel API test, and a
    seeded reset fixes the episode."""
    import warnings

    from pettingzoo.test import parallel_api_test, parallel_seed_test

    import mobrl

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports API slips as warnings
        parallel_api_test(mobrl.parallel_env("uma19_energy", env="cells"), num_cycles=30)
        parallel_seed_test(lambda: mobrl.parallel_env("uma19_energy", env="cells"))
    env = mobrl.parallel_env("uma19_energy", env="cells")
    assert env.possible_agents == [cell_agent(b) for b in range(19)]
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=11)
        rewards = []
        for _ in range(5):
            obs, rew, *_ = env.step({a: 3 if a == "cell_4" else 0 for a in env.agents})
            rewards.append(sum(rew.values()))
        runs.append((rewards, obs["cell_4"].tolist()))
    assert runs[0] == runs[1]
    with pytest.raises(UserError, match='env="cells"'):
        mobrl.parallel_env("uma19_energy", env="central")


def test_imitation_labels_each_cell_with_the_experts_state() -> None:
    """`run.imitate` on cell agents: every cell's observation of every step is labelled with
    the state the expert gives it; played by the expert, the episode is the expert's."""
    from mobrl.training.labels import CellCollector, collector

    config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))
    collect = collector(config, 0, expert="idle_off")
    assert isinstance(collect, CellCollector)
    found = collect.episode(5)
    steps = config["layout"]["episode_length"]
    assert found.x.shape == (19 * steps, observation_size(6))
    assert found.y.shape == (19 * steps,) and np.array_equal(found.y, found.played)
    assert set(np.unique(found.y)) <= {0, 3}  # idle_off: active, or its deepest state
    assert (found.y == 3).any()
    # the labels are the states idle_off plays through the cells' env on that seed
    from mobrl.evaluation.rollout import episode_env

    env = episode_env(config, 5)
    rule = make_baseline("idle_off")
    rule.reset(5)
    obs, _ = env.reset(seed=5)
    played = []
    for _ in range(steps):
        acts = rule.act(obs, env)
        played += [acts[a] for a in obs]
        obs, *_ = env.step(acts)
    env.close()
    np.testing.assert_array_equal(found.y, played)


@pytest.mark.parametrize(
    "expert, ok", [("energy_oracle", True), ("threshold", True), ("greedy", False)]
)
def test_cell_agents_imitate_a_cell_rule_or_the_reference(expert: str, ok: bool) -> None:
    overrides = ["scenario=uma19_energy", "env=cells", f"run.imitate.expert={expert}"]
    if ok:
        validate_command_line(overrides)
        return
    with pytest.raises(UserError) as caught:
        validate_command_line(overrides)
    assert "energy_oracle" in str(caught.value) and "\n" not in str(caught.value)


def test_imitation_labels_with_the_experts_weight() -> None:
    """`run.imitate.weight`: the expert plans with that λ. At the layout's own the labels are
    the default's; a far larger λ labels far more sleep than a far smaller one."""
    from mobrl.training.labels import collector

    config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))
    own = config["layout"]["power"].get("weight", 0.05)

    def labels(weight):
        return collector(config, 0, expert="energy_greedy", weight=weight).episode(3).y

    np.testing.assert_array_equal(labels(own), labels(None))
    asleep = {w: int(np.count_nonzero(labels(w))) for w in (own / 10, own * 10)}
    assert asleep[own * 10] > 1.2 * asleep[own / 10], asleep


def test_imitation_labels_with_the_experts_floor() -> None:
    """`run.imitate.floor`: the expert plans with that price of a UE's lost service. At 0 the
    labels are the default's; a high one labels less sleep."""
    from mobrl.training.labels import collector

    config = env_config_from(validate_command_line(["scenario=uma19_energy", "env=cells"]))

    def labels(floor):
        return collector(config, 0, expert="energy_greedy", floor=floor).episode(3).y

    np.testing.assert_array_equal(labels(0.0), labels(None))
    asleep = {f: int(np.count_nonzero(labels(f))) for f in (0.0, 50.0)}
    assert asleep[50.0] < asleep[0.0], asleep
