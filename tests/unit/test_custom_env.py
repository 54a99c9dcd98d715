"""`scenario=custom`: the user's env by import path, in every flavour mobrl takes (Gymnasium,
PettingZoo parallel and AEC, RLlib-style), its info metrics, policy patterns and user rules."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.envs.factory import check_env, env_config_from, make_env, policy_spec

#: a module as a user writes it, outside mobrl: envs of every flavour and two rules
USER_MODULE = '''
import numpy as np
import gymnasium as gym
from gymnasium import spaces


class Relays:
    """PettingZoo-style parallel env: relay_i and sink pick 0/1; reward 1 for matching the
    sink's last pick; infos carry a per-agent 'hits' and an env-wide value."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, relays=2, length=5, render_mode=None):
        self.possible_agents = [f"relay_{i}" for i in range(relays)] + ["sink"]
        self.length, self.render_mode, self.agents = length, render_mode, []

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.t, self.last = 0, 0
        self.agents = list(self.possible_agents)
        return {a: self._obs() for a in self.agents}, {a: {} for a in self.agents}

    def _obs(self):
        return np.array([self.last, self.t / self.length], dtype=np.float32)

    def step(self, actions):
        rewards = {a: float(int(actions[a]) == self.last) for a in self.agents}
        self.last = int(actions["sink"])
        self.t += 1
        done = self.t >= self.length
        infos = {a: {"hits": rewards[a], "t": self.t} for a in self.agents}
        obs = {a: self._obs() for a in self.agents}
        terms = {a: False for a in self.agents}
        truncs = {a: done for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def render(self):
        return np.full((4, 4, 3), 255 * self.last, dtype=np.uint8)

    def close(self):
        pass


class Walk(gym.Env):
    """Gymnasium env: walk right to the goal; info 'pos'."""

    def __init__(self, length=4):
        self.length = length
        self.observation_space = spaces.Box(0.0, float(length), shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = 0
        return np.array([self.pos], dtype=np.float32), {"pos": self.pos}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if int(action) == 1 else -1))
        done = self.pos >= self.length
        obs = np.array([self.pos], dtype=np.float32)
        return obs, 1.0 if done else -0.1, done, False, {"pos": self.pos}


def make_walk(length=4):
    return Walk(length)


def not_an_env():
    return 42


def broken_spaces():
    env = Relays()
    env.observation_space = lambda agent: spaces.Box(0.0, 0.5, shape=(2,), dtype=np.float32)
    return env


class AlwaysOne:
    def __call__(self, observations):
        return {a: 1 for a in observations}


class Copier:
    def __init__(self, env):
        self.agents = list(env.possible_agents)

    def __call__(self, observations):
        return {a: int(obs[0]) for a, obs in observations.items()}
'''


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "user_envs.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("user_envs", None)


def _config(entry: str, *extra: str) -> dict:
    return env_config_from(compose(["scenario=custom", f"scenario.entry={entry}", *extra]))


def test_a_parallel_env_is_probed_and_played_with_its_info_metrics(user_dir) -> None:
    env_config = _config("user_envs:Relays", "scenario.metrics=[hits,t:last]")
    assert env_config["flavour"] == "parallel"
    assert env_config["agents"] == ["relay_0", "relay_1", "sink"]
    assert env_config["policies"] == dict.fromkeys(env_config["agents"], "shared")
    assert env_config["module_dir"] == str(user_dir)


def test_info_metrics_reduce_per_agent_and_over_agents(user_dir) -> None:
    env_config = _config("user_envs:Relays", "scenario.metrics=[hits,hits:sum,t:last,t:max]")
    env = make_env(env_config)
    env.reset(seed=0)
    sink_picks = [1, 0, 1, 1, 0]
    relay_picks = [0, 1, 1, 1, 1]  # relay_0; relay_1 always 0
    for s, r in zip(sink_picks, relay_picks):
        _, _, terms, truncs, _ = env.step({"relay_0": r, "relay_1": 0, "sink": s})
    assert truncs["__all__"] and not terms["__all__"] and env.agents == []
    # hits: did the agent match the sink's previous pick (0, 1, 0, 1, 1)?
    previous = [0, *sink_picks[:-1]]
    hits = {
        "relay_0": [float(r == p) for r, p in zip(relay_picks, previous)],
        "relay_1": [float(0 == p) for p in previous],
        "sink": [float(s == p) for s, p in zip(sink_picks, previous)],
    }
    stats, per_agent = env.episode_stats(), env.agent_stats()
    # the last spec of a key wins: hits:sum after hits
    assert stats["info/hits"] == pytest.approx(sum(sum(v) for v in hits.values()))
    assert stats["info/t"] == 5.0
    assert per_agent["agent/relay_0/hits"] == sum(hits["relay_0"])
    env.reset(seed=1)
    assert env.episode_stats() == {}


def test_metric_specs_are_checked(user_dir) -> None:
    with pytest.raises(UserError, match="hits:median.*Fix scenario.metrics"):
        _config("user_envs:Relays", "scenario.metrics=[hits:median]")
    with pytest.raises(UserError) as bad:
        _config("user_envs:Relays", "scenario.metrics=[hits:sum:lower]")
    assert str(bad.value) == (
        "scenario.metrics entry 'hits:sum:lower': BETTER 'lower' is not one of max (higher is "
        "better), min (lower is better). Fix scenario.metrics."
    )


def test_metric_specs_say_how_to_reduce_and_which_way_is_better() -> None:
    """`KEY`, `KEY:REDUCE` and `KEY:REDUCE:BETTER`: mean and higher-is-better by default; the
    last entry of a key says which way, as it says how to count."""
    from mobrl.envs.foreign import MetricSpec, metric_senses, parse_metrics

    specs = parse_metrics(["hits", "t:last", "energy:sum:min", "rate::max", "e:"])
    assert specs == [
        MetricSpec("hits", "mean", "max"),
        MetricSpec("t", "last", "max"),
        MetricSpec("energy", "sum", "min"),
        MetricSpec("rate", "mean", "max"),
        MetricSpec("e", "mean", "max"),
    ]
    assert metric_senses(["energy:sum", "energy:sum:min"]) == {"info/energy": "min"}
    for spec, problem in (
        ("energy:sum:cost", "BETTER 'cost' is not one of max (higher is better), min"),
        ("energy:median:min", "REDUCE 'median' is not one of mean, sum, last, max, min"),
        ("energy:sum:min:x", "is not KEY, KEY:REDUCE or KEY:REDUCE:BETTER"),
        (":sum", "is not KEY, KEY:REDUCE or KEY:REDUCE:BETTER"),
    ):
        with pytest.raises(ValueError, match=re.escape(f"'{spec}'") + ".*" + re.escape(problem)):
            parse_metrics([spec])


def test_policy_groups_take_patterns(user_dir) -> None:
    env_config = _config("user_envs:Relays")
    mapping = policy_spec(env_config, {"relays": ["relay_*"], "sink": ["sink"]})
    assert mapping == {"relay_0": "relays", "relay_1": "relays", "sink": "sink"}
    with pytest.raises(UserError, match="'hub_\\*' of env.policies.x matches no agent"):
        policy_spec(env_config, {"x": ["hub_*"], "y": ["relay_*", "sink"]})
    # an agent named outright stays in its group; patterns take the others
    mapping = policy_spec(env_config, {"a": ["relay_*"], "b": ["relay_0", "sink"]})
    assert mapping == {"relay_0": "b", "relay_1": "a", "sink": "b"}
    with pytest.raises(UserError, match="'relay_1' is in two groups"):
        policy_spec(env_config, {"a": ["relay_*"], "b": ["*_1", "sink"]})
    with pytest.raises(UserError, match="'sink' is in two groups"):
        policy_spec(env_config, {"a": ["relay_*", "sink"], "b": ["sink"]})


def test_a_gymnasium_env_trains_single_agent_with_its_info(user_dir) -> None:
    env_config = _config(
        "user_envs:make_walk", "+scenario.kwargs.length=2", "scenario.metrics=[pos:max]"
    )
    assert env_config["mode"] == "gym" and env_config["agents"] == []
    check_env(env_config)
    env = make_env(env_config)
    env.reset(seed=0)
    env.step(1)
    *_, info = env.step(1)
    assert info["pos"] == 2 and env.episode_stats() == {"info/pos": 2.0}


def test_an_rllib_multi_agent_env_is_passed_through(user_dir) -> None:
    (user_dir / "rllib_envs.py").write_text(
        textwrap.dedent(
            """
            from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole

            def make(num_agents=2):
                return MultiAgentCartPole({"num_agents": num_agents})
            """
        )
    )
    env_config = _config("rllib_envs:make", "scenario.metrics=[missing_key]")
    # RLlib's example counts its agents 0, 1: mobrl names them "0", "1"
    assert env_config["flavour"] == "rllib" and env_config["agents"] == ["0", "1"]
    check_env(env_config)
    env = make_env(env_config, rllib=True)
    obs, _ = env.reset(seed=0)
    assert sorted(obs) == ["0", "1"]
    obs, rewards, terms, *_ = env.step({"0": 0, "1": 1})
    assert set(rewards) <= {"0", "1"} and "__all__" in terms
    assert env.episode_stats() == {}  # a key the env never reports is not made up


def test_an_aec_env_plays_turn_by_turn(user_dir) -> None:
    pytest.importorskip("pettingzoo.classic")
    from pettingzoo.classic import tictactoe_v3

    (user_dir / "aec_envs.py").write_text(
        "from pettingzoo.classic import tictactoe_v3\n\ndef make():\n    return tictactoe_v3.env()\n"
    )
    env_config = _config("aec_envs:make")
    assert env_config["flavour"] == "aec"
    assert env_config["agents"] == ["player_1", "player_2"]
    env = make_env(env_config)
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["player_1"]
    # player 1 takes the left column, player 2 the middle one: player 1 wins on its third move
    moves = [0, 3, 1, 4, 2]
    total = {"player_1": 0.0, "player_2": 0.0}
    for move in moves:
        agent = env.env.agent_selection
        assert agent in obs and obs[agent]["action_mask"][move] == 1
        obs, rewards, terms, truncs, _ = env.step({agent: move})
        for a, r in rewards.items():
            total[a] += r
    assert terms["__all__"] and env.agents == []
    assert total == {"player_1": 1.0, "player_2": -1.0}
    reference = tictactoe_v3.env()
    reference.reset(seed=0)
    assert env.observation_spaces["player_1"] == reference.observation_space("player_1")


def test_the_users_errors_are_one_line(user_dir) -> None:
    cases = [
        (["scenario=custom"], "needs the callable that makes the env"),
        (["scenario=custom", "scenario.entry=nowhere_mod:make"], "no module named 'nowhere_mod'"),
        (["scenario=custom", "scenario.entry=user_envs:nothing"], "has no attribute 'nothing'"),
        (["scenario=custom", "scenario.entry=user_envs"], "not an import path"),
        (["scenario=custom", "scenario.entry=user_envs:not_an_env"], "returned a int"),
        (
            ["scenario=custom", "scenario.entry=user_envs:make_walk", "+scenario.kwargs.width=3"],
            "scenario.kwargs do not fit",
        ),
        (["scenario=custom", "scenario.entry=./missing.py:make"], "no file"),
    ]
    for overrides, message in cases:
        with pytest.raises(UserError, match=message) as err:
            env_config_from(compose(overrides))
        assert "\n" not in str(err.value)
    broken = _config("user_envs:broken_spaces")
    with pytest.raises(UserError, match="fails the env check.*Fix the env that scenario.entry"):
        check_env(broken)


def test_a_file_path_entry_works_from_another_process_elsewhere(user_dir, tmp_path_factory) -> None:
    env_config = _config("./user_envs.py:Relays")
    assert env_config["entry"] == f"{user_dir / 'user_envs.py'}:Relays"
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    code = (
        "import json, sys; from mobrl.envs.factory import make_env; "
        "env = make_env(json.loads(sys.argv[1])); obs, _ = env.reset(seed=0); "
        "print(sorted(obs))"
    )
    for config in (env_config, _config("user_envs:Relays")):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(config)],
            cwd=elsewhere,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"},
        )
        assert out.stdout.strip() == "['relay_0', 'relay_1', 'sink']", out.stderr


def test_user_rules_by_import_path(user_dir) -> None:
    from mobrl.evaluation.policies import check_baselines, make_baseline
    from mobrl.evaluation.rollout import run_episode

    env_config = _config("user_envs:Relays", "scenario.metrics=[hits]")
    check_baselines(["random", "user_envs:AlwaysOne", "user_envs:Copier"], env_config)
    with pytest.raises(UserError, match="--baselines=user_envs:Nope.*no attribute"):
        check_baselines(["user_envs:Nope"], env_config)
    ones = run_episode(env_config, make_baseline("user_envs:AlwaysOne"), seed=3)
    # everyone plays 1: the first step misses the sink's initial 0, the four others hit
    assert ones["return"] == 3 * 4 and ones["info/hits"] == pytest.approx(0.8)
    copier = make_baseline("user_envs:Copier")
    first = run_episode(env_config, copier, seed=3)
    assert first == run_episode(env_config, copier, seed=3)
    assert first["return"] == 3 * 5  # copying the sink's last pick always hits
    assert np.isfinite(first["info/hits"])
