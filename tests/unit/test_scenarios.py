"""Scenarios as data: validation, equivalence with mobile-env's classes, lookup, tools."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.config import group_options
from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from, make_env, policy_setup
from mobrl.network.engine import FastEngine
from mobrl.scenarios.kinds.mobile import make_mobile_core
from mobrl.training.checks import validate_command_line

SMALL = yaml.safe_load((scenarios.builtin_dir() / "small.yaml").read_text())


def _write(tmp_path: Path, data: dict, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _with(**changes) -> dict:
    data = yaml.safe_load(yaml.safe_dump(SMALL))
    for key, value in changes.items():
        node = data
        *parents, last = key.split("__")
        for part in parents:
            node = node[part] if not part.isdigit() else node[int(part)]
        node[last] = value
    return data


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"stations__1__x": 250}, r"stations\[1\] at \(250, 80\) lies outside the 200 x 200 map"),
        ({"ues__count": 0}, "ues.count is 0: a scenario needs UEs"),
        ({"station_defaults__bandwidth": -9e6}, "bandwidth must be > 0"),
        ({"stations__0__bandwidth": -1}, r"stations\[0\].bandwidth must be > 0"),
        ({"widht": 200}, "widht is not a known key \\(did you mean 'width'\\?\\)"),
        ({"ues__velocty": 2.0}, "ues.velocty is not a known key \\(did you mean 'velocity'\\?\\)"),
        ({"stations__0__tx_powr": 20}, "tx_powr is not a known key"),
        (
            {"arrival": {"model": "randm"}},
            "arrival.model 'randm' is unknown \\(did you mean 'random'\\?\\)",
        ),
        ({"arrival": {"model": "random", "window": 100}}, "arrival.window is 100, not shorter"),
        ({"movement": {"model": "manhattan"}}, "movement.model 'manhattan' is unknown"),
        ({"episode_length": 0}, "episode_length must be a whole number >= 1"),
        ({"width": "wide"}, "width must be a number, got 'wide'"),
        (  # UEs parked in a corner that no station covers
            {"movement": {"width": 0.001, "height": 0.001}},
            "movement keeps UEs in a 0.001 x 0.001 m area that no station covers",
        ),
    ],
)
def test_invalid_layouts_are_one_line_errors_naming_file_and_key(
    tmp_path: Path, changes: dict, message: str
) -> None:
    path = _write(tmp_path, _with(**changes))
    with pytest.raises(UserError, match=message) as err:
        scenarios.load(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_layout_with_any_reachable_corner_is_accepted(tmp_path: Path) -> None:
    """Only a layout in which no UE could ever connect is refused: a small movement area
    next to one station is fine."""
    layout = scenarios.load(_write(tmp_path, _with(movement={"width": 70, "height": 85})))
    assert layout["movement"]["width"] == 70


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        scenarios.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("width: [1, 2\n")
    with pytest.raises(UserError, match="is not valid YAML"):
        scenarios.load(bad)
    data = _with()
    del data["stations"]
    with pytest.raises(UserError, match="stations is missing"):
        scenarios.load(_write(tmp_path, data))


def test_numbers_written_like_2e7_are_numbers(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text((scenarios.builtin_dir() / "small.yaml").read_text().replace("9.0e6", "9e6"))
    assert scenarios.load(path)["stations"][0]["bandwidth"] == 9e6  # YAML 1.1 reads 9e6 as text


@pytest.mark.parametrize("layout", ["small", "medium", "large"])
@pytest.mark.parametrize("mode", ["ma", "central"])
def test_yaml_builtins_equal_mobile_envs_classes(layout: str, mode: str) -> None:
    """The layouts as data give the episodes of mobile-env's own scenario classes (compared
    on the fast engine, which tests/unit/test_engine.py holds equal to stock mobile-env)."""
    from mobile_env.handlers.central import MComCentralHandler
    from mobile_env.handlers.multi_agent import MComMAHandler
    from mobile_env.scenarios.large import MComLarge
    from mobile_env.scenarios.medium import MComMedium
    from mobile_env.scenarios.small import MComSmall

    cls = {"small": MComSmall, "medium": MComMedium, "large": MComLarge}[layout]
    handler = {"ma": MComMAHandler, "central": MComCentralHandler}[mode]
    original = type("Original", (FastEngine, cls), {})
    for seed in range(3):
        ref = original(config={"handler": handler, "seed": seed})
        ours = make_mobile_core(layout, mode, "fast", {"seed": seed})
        assert (ref.width, ref.height, ref.EP_MAX_TIME) == (
            ours.width,
            ours.height,
            ours.EP_MAX_TIME,
        )
        obs_ref, _ = ref.reset()
        obs_ours, _ = ours.reset()
        rng = np.random.default_rng(seed)
        for _ in range(100):
            _equal(obs_ref, obs_ours)
            if mode == "ma":
                action = {u: int(rng.integers(0, ref.NUM_STATIONS + 1)) for u in obs_ref}
            else:
                action = rng.integers(0, ref.NUM_STATIONS + 1, size=ref.NUM_USERS)
            obs_ref, r_ref, *_ = ref.step(action)
            obs_ours, r_ours, *_ = ours.step(action)
            _equal(r_ref, r_ours)


def test_yaml_small_equals_stock_mobile_env_small() -> None:
    """Directly on stock mobile-env too (the built-in class against the YAML layout)."""
    from mobile_env.handlers.multi_agent import MComMAHandler
    from mobile_env.scenarios.small import MComSmall

    ref = MComSmall(config={"handler": MComMAHandler, "seed": 4})
    ours = make_mobile_core("small", "ma", "stock", {"seed": 4})
    obs_ref, obs_ours = ref.reset()[0], ours.reset()[0]
    for step in range(100):
        _equal(obs_ref, obs_ours)
        action = {u: (u + step) % 4 for u in obs_ref}
        obs_ref, r_ref, *_ = ref.step(action)
        obs_ours, r_ours, *_ = ours.step(action)
        _equal(r_ref, r_ours)


def _equal(a, b) -> None:
    """Equal within 1e-9 relative: mobile-env sums some utilities in Python-set order (memory
    addresses), so even two stock instances of one layout can differ in the last bit."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_scenarios_found_by_name_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    _write(tmp_path / "scenarios", _with(ues__count=2), "campus.yaml")
    assert "campus" in group_options("scenario")
    cfg = validate_command_line(["scenario=campus"])
    assert cfg.scenario.name == "campus"
    assert make_env(env_config_from(cfg)).core.NUM_USERS == 2
    elsewhere = _write(tmp_path, _with(ues__count=3), "anywhere.yaml")
    cfg = validate_command_line([f"scenario.path={elsewhere}"])
    assert cfg.scenario.name == "anywhere"  # named after its file
    env_config = env_config_from(cfg)
    assert env_config["layout"]["ues"]["count"] == 3  # the layout travels with the config


def test_scenarios_show_prints_resolved_parameters() -> None:
    from mobrl.scenarios.commands import show

    data = yaml.safe_load(show("medium"))
    assert len(data["stations"]) == 7 and data["ues"]["count"] == 15
    assert data["movement"] == {"model": "random_waypoint", "width": 200, "height": 200}
    assert data["stations"][0]["tx_power"] == 30  # defaults filled into each station


def test_policy_mappings() -> None:
    def policies(*overrides):
        return policy_setup(env_config_from(validate_command_line(list(overrides))))

    assert policies("scenario=small")[0] == ["shared"]
    ids, mapping = policies("scenario=small", "env.policies=per_agent")
    assert ids == [f"ue_{i}" for i in range(5)] and mapping("ue_3") == "ue_3"
    ids, mapping = policies(
        "scenario=small", "env.policies={near:[ue_0,ue_1],far:[ue_2,ue_3,ue_4]}"
    )
    assert ids == ["far", "near"] and mapping("ue_1") == "near" and mapping("ue_4") == "far"
    assert policies("scenario=arena")[0] == ["chaser", "explorer"]  # per agent by default
    assert policies("scenario=arena", "env.policies=shared")[0] == ["shared"]
    assert policies("scenario=small", "env=central") == (None, None)


@pytest.mark.parametrize(
    "value,message",
    [
        ("{a:[ue_0,ue_9]}", "unknown agent in env.policies.a: 'ue_9'"),
        ("{a:[ue_0,ue_1]}", "leaves agents without a policy: ue_2, ue_3, ue_4"),
        ("{a:[ue_0,ue_1,ue_2],b:[ue_2,ue_3,ue_4]}", "agent 'ue_2' is in two groups"),
        ("per_agnet", "unknown env.policies 'per_agnet'. Did you mean 'per_agent'"),
    ],
)
def test_bad_policy_mappings(value: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        env_config_from(validate_command_line(["scenario=small", f"env.policies={value}"]))


def test_random_arrivals_are_reproducible_and_bounded(tmp_path: Path) -> None:
    data = _with(arrival={"model": "random", "window": 30, "min_stay": 10, "max_stay": 50})
    layout = scenarios.validate(data, Path("x.yaml"))
    stock = make_mobile_core(layout, "ma", "stock")
    fast = make_mobile_core(layout, "ma", "fast")
    for core in (stock, fast):
        core.reset()
    times = [(ue.stime, ue.extime) for ue in stock.users.values()]
    assert times == [(ue.stime, ue.extime) for ue in fast.users.values()]
    assert times[0][0] == 0  # someone is there to act at the start
    assert all(0 <= s <= 30 and 10 <= e - s <= 50 and e <= 100 for s, e in times[1:] if e < 100)
    assert len({s for s, _ in times}) > 1  # UEs do arrive at different times


def test_env_check_turns_a_broken_env_into_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import gymnasium as gym

    from mobrl.envs import factory

    class Broken(gym.Env):
        observation_space = gym.spaces.Box(0, 1, shape=(3,))
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(5, dtype=np.float32), {}  # the wrong shape

        def step(self, action):
            return np.zeros(3, dtype=np.float32), 0.0, False, False, {}

    monkeypatch.setattr(factory, "make_env", lambda env_config: Broken())
    with pytest.raises(UserError, match="scenario 'cartpole' fails the env check"):
        factory.check_env({"scenario": "cartpole", "kind": "gym", "id": "X", "mode": "gym"})


def test_arena_rollout_reports_each_policys_return_and_its_counts() -> None:
    from mobrl.evaluation.policies import RandomPolicy
    from mobrl.evaluation.rollout import run_episode

    env_config = env_config_from(validate_command_line(["scenario=arena"]))
    row = run_episode(env_config, RandomPolicy(), seed=3)
    assert row["length"] == 100
    assert row["return"] == row["return/explorer"] + row["return/chaser"]
    cells, caught = row["arena/explorer/cells_discovered"], row["arena/chaser/collisions"]
    assert 1 <= cells <= 64 and caught == row["return/chaser"]  # the chaser scores per catch
    assert row["return/explorer"] == (cells - 1) - caught  # +1 per new cell, -1 per catch
    again = run_episode(env_config, RandomPolicy(), seed=3)
    assert again == row  # the episode seed fixes the episode


def test_arena_frames_show_both_agents() -> None:
    from mobrl.envs.arena import GridArena

    arena = GridArena(size=6, render_mode="rgb_array")
    arena.reset(seed=0)
    frame = arena.render()
    assert frame.shape == (240, 240, 3) and frame.dtype == np.uint8
    colours = {tuple(c) for c in frame.reshape(-1, 3)}
    assert (31, 119, 180) in colours and (214, 39, 40) in colours  # explorer blue, chaser red
