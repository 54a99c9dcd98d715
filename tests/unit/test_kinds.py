"""The scenario-kind registry: every kind is found by name, and a new kind is one module."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import mobrl.scenarios.kinds as kinds
from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.envs.factory import agent_ids, env_config_from, make_env
from mobrl.scenarios.kinds.base import action_kind
from mobrl.training.checks import check_config


def test_built_in_kinds_are_registered_under_their_names() -> None:
    assert kinds.kind_names() == ("arena", "custom", "external", "gym", "mobile")
    for name in kinds.kind_names():
        assert kinds.kind_of(name).name == name
        assert isinstance(kinds.kind_of(name), kinds.ScenarioKind)


def test_unknown_kind_is_a_one_line_error() -> None:
    with pytest.raises(UserError, match="scenario.kind 'mobil'.*mobile"):
        kinds.kind_of("mobil")


def test_each_kind_answers_for_its_scenarios() -> None:
    small = env_config_from(compose(["scenario=small", "env=central"]))
    arena = env_config_from(compose(["scenario=arena"]))
    cartpole = env_config_from(compose(["scenario=cartpole"]))
    assert [kinds.kind_of(c).name for c in (small, arena, cartpole)] == ["mobile", "arena", "gym"]
    assert agent_ids(small) == [] and agent_ids(cartpole) == []
    assert agent_ids(arena) == ["explorer", "chaser"]
    assert kinds.kind_of(small).seeded(small, 7)["kwargs"]["seed"] == 7
    assert kinds.kind_of(cartpole).seeded(cartpole, 7) == cartpole
    assert kinds.kind_of(small).baselines(small)[2:5] == ["greedy", "greedy_fill", "full"]
    assert kinds.kind_of(cartpole).baselines(cartpole) == ["random", "pole_angle"]


TOY = '''
from mobrl.scenarios.kinds.base import ScenarioKind


class ToyKind(ScenarioKind):
    """CartPole under another name: the smallest kind there is."""

    name = "toy"

    def env_fields(self, cfg):
        return {"id": "CartPole-v1", "mode": "gym"}

    def make_env(self, env_config, rllib):
        import gymnasium as gym

        return gym.make("CartPole-v1", render_mode=env_config.get("render_mode"))

    def action_space(self, cfg):
        return "discrete"

    def baselines(self, env_config):
        return ["random", "pole_angle"]


KIND = ToyKind()
'''


def test_a_new_kind_is_one_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module dropped next to the built-in kinds is a kind: the config check, the env
    factory and the baselines ask it, with no other file changed."""
    (tmp_path / "toy.py").write_text(textwrap.dedent(TOY))
    monkeypatch.setattr(kinds, "__path__", [*kinds.__path__, str(tmp_path)])
    kinds.kind_names.cache_clear()
    try:
        cfg = compose(["scenario=gym", "scenario.kind=toy", "scenario.id=toy"])
        check_config(cfg)
        env_config = env_config_from(cfg)
        env = make_env(env_config)
        observation, _ = env.reset(seed=0)
        assert observation.shape == (4,)
        env.close()
        from mobrl.evaluation.policies import baselines_for

        assert baselines_for(env_config) == ["random", "pole_angle"]
    finally:
        kinds.kind_names.cache_clear()
        kinds._load.cache_clear()
        sys.modules.pop("mobrl.scenarios.kinds.toy", None)


def test_no_module_outside_the_registry_dispatches_on_the_kind() -> None:
    import re

    package = Path(kinds.__file__).parent.parent
    test = re.compile(r"""(\["kind"\]|\.get\("kind"\)|scenario\.kind|\bkind)\s*(==|!=|in\s*\()""")
    found = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        if "kinds" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if test.search(line) and not line.strip().startswith("for ")
    ]
    # tuning's search-space kinds and the zoo's layer kinds are other kinds
    found = [f for f in found if not f.startswith(("training/tuning.py", "zoo/"))]
    assert found == []


def test_the_mobile_spec_round_trips_and_moves_to_another_layout() -> None:
    """One place for the mobile kind's defaults: the spec of a composed config, written into
    env_config and read back, is the same spec; an env_config of an older run (no obs, reward,
    team_reward) reads as the defaults; moved to another layout only the layout changes."""
    from mobrl.envs.factory import retarget
    from mobrl.scenarios.kinds.mobile import MobileSpec

    cfg = compose(["scenario=large", "env.obs=topk", "env.reward=marginal"])
    spec = MobileSpec.from_config(cfg)
    env_config = env_config_from(cfg)
    assert MobileSpec.of(env_config) == spec
    assert (spec.obs, spec.topk, spec.reward, spec.team_reward) == ("topk", 3, "marginal", 0.0)
    old = {"id": "small", "mode": "ma", "scenario": "small", "kind": "mobile"}
    assert MobileSpec.of(old) == MobileSpec(layout="small")  # obs=mobile, reward=mobile, fast

    moved = retarget(env_config, "dense_urban")
    direct = env_config_from(
        compose(["scenario=dense_urban", "env.obs=topk", "env.reward=marginal"])
    )
    assert moved == direct  # as if trained there: agents, mapping, sampler redone
    assert MobileSpec.of(moved) == spec.on_layout("dense_urban") != spec
    assert len(agent_ids(moved)) == 40 and moved["sampler"] == "multi_agent"


@pytest.mark.parametrize(
    "overrides",
    [
        ["scenario=small", "env=ma"],
        ["scenario=small", "env=central"],
        ["scenario=uma19_energy", "env=cells"],
        ["scenario=uma19_energy", "env=hierarchical"],
    ],
)
def test_the_action_space_a_kind_states_is_the_one_its_env_has(overrides: list[str]) -> None:
    """What the algorithm check reads (`action_space`) is what training builds: every agent's
    space in each mobile-env mode (the check refused DQN and SAC on discrete cell agents when
    it took every mode but `ma` for central)."""
    cfg = compose(overrides)
    env = make_env(env_config_from(cfg), rllib=True)
    agents = getattr(env, "possible_agents", None)
    spaces = [env.action_spaces[a] for a in agents] if agents else [env.action_space]
    stated = kinds.kind_of(cfg).action_space(cfg)
    assert {action_kind(space) for space in spaces} == {stated}
