"""`scenario=custom` end to end, with envs written outside mobrl's source tree as a user does:
a PettingZoo ParallelEnv (examples/custom_env), an RLlib MultiAgentEnv and a Gymnasium env
train, evaluate against `random` and the user's rule with paired statistics, show their info
values in TensorBoard, the evaluation table and the report, and render."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).parents[2] / "examples" / "custom_env"

RLLIB_AND_GYM = '''
import numpy as np
import gymnasium as gym
from ray.rllib.env.multi_agent_env import MultiAgentEnv


class Pair(MultiAgentEnv):
    """Two agents, each rewarded for repeating the other's last action; info 'agree'."""

    def __init__(self, length=10):
        super().__init__()
        self.length = length
        self.possible_agents = ["left", "right"]
        self.agents = list(self.possible_agents)
        space = gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}

    def reset(self, *, seed=None, options=None):
        self.t, self.last = 0, {"left": 0, "right": 0}
        self.agents = list(self.possible_agents)
        return self._obs(), {}

    def _obs(self):
        return {
            "left": np.array([self.last["right"]], dtype=np.float32),
            "right": np.array([self.last["left"]], dtype=np.float32),
        }

    def step(self, actions):
        other = {"left": "right", "right": "left"}
        rewards = {a: float(int(actions[a]) == self.last[other[a]]) for a in actions}
        self.last = {a: int(v) for a, v in actions.items()}
        self.t += 1
        done = self.t >= self.length
        agree = float(self.last["left"] == self.last["right"])
        truncs = {"left": done, "right": done, "__all__": done}
        terms = {"left": False, "right": False, "__all__": False}
        return self._obs(), rewards, terms, truncs, {a: {"agree": agree} for a in actions}


class Copy:
    def __call__(self, observations):
        return {a: int(o[0]) for a, o in observations.items()}


class Corridor(gym.Env):
    """Walk right to the end of a corridor; info 'pos'."""

    def __init__(self, length=5):
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, length, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if int(action) else -1))
        self.t += 1
        done = self.pos >= self.length
        obs = np.array([self.pos], dtype=np.float32)
        return obs, float(done) - 0.01, done, self.t >= 50, {"pos": self.pos}


class Right:
    def __call__(self, observation):
        return 1
'''


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("users_project")
    for name in ("channel_access.py", "rules.py"):
        shutil.copy(EXAMPLE / name, folder / name)
    (folder / "my_envs.py").write_text(textwrap.dedent(RLLIB_AND_GYM))
    return folder


def _train(user_dir: Path, name: str, *overrides: str) -> Path:
    run_dir = user_dir / "runs" / name
    result = run_mobrl(
        "train", "run=smoke", "scenario=custom", f"hydra.run.dir={run_dir}", *overrides,
        cwd=user_dir,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return run_dir


def _evaluate(user_dir: Path, run_dir: Path, baselines: str) -> dict:
    out = user_dir / "evals" / run_dir.name
    result = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "6", "--baselines", baselines,
        "--output", str(out), cwd=user_dir,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((out / "summary.json").read_text()) | {"printed": result.stdout}


def _export(user_dir: Path, run_dir: Path, name: str):
    return run_mobrl(
        "zoo", "export", "--checkpoint", str(run_dir), "--name", name,
        "--output", str(user_dir / "zoo"), "--evaluation", str(user_dir / "evals" / run_dir.name),
        cwd=user_dir,
    )  # fmt: skip


def _tensorboard_tags(run_dir: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    acc = EventAccumulator(str(trial), size_guidance={"scalars": 0})
    acc.Reload()
    return set(acc.Tags()["scalars"])


def test_a_pettingzoo_env_trains_evaluates_reports_and_renders(user_dir: Path) -> None:
    run_dir = _train(
        user_dir, "channels", "scenario.entry=channel_access:ChannelAccessEnv",
        "scenario.metrics=[rate,collided:sum]", "env.policies={even:[tx_0,tx_2],odd:[tx_?]}",
    )  # fmt: skip
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env_config"]["policies"] == {
        "tx_0": "even", "tx_2": "even", "tx_1": "odd", "tx_3": "odd",
    }  # fmt: skip
    tags = _tensorboard_tags(run_dir)
    for tag in (
        "env_runners/info/rate",
        "env_runners/info/collided",
        "env_runners/agent/tx_1/rate",
    ):
        assert f"ray/tune/{tag}" in tags, sorted(tags)[:30]

    summary = _evaluate(user_dir, run_dir, "random,rules:BestGain")
    assert set(summary["policies"]) == {"trained", "random", "rules:BestGain"}
    gap = summary["paired_vs_trained"]["rules:BestGain"]["diff"]["info/rate"]
    assert gap["n"] == 6 and gap["ci95"] >= 0
    assert "info/rate" in summary["printed"] and "rules:BestGain" in summary["printed"]
    # the user's rule is greedy by channel gain: better than random on rate, paired by seed
    random_rate = summary["policies"]["random"]["info/rate"]["mean"]
    assert summary["policies"]["rules:BestGain"]["info/rate"]["mean"] > random_rate

    # the zoo keeps one shared policy: two groups are refused in one line
    result = _export(user_dir, run_dir, "channels")
    assert result.returncode == 2 and "Train with env.policies=shared" in result.stderr

    report = user_dir / "report"
    result = run_mobrl(
        "report", str(run_dir), str(user_dir / "evals" / run_dir.name), "--out", str(report),
        cwd=user_dir,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    text = (report / "report.md").read_text()
    assert "The env's own measures during training" in text and "info rate" in text

    video = user_dir / "channels.mp4"
    result = run_mobrl(
        "render", "--checkpoint", str(run_dir), "--video", str(video), "--max-steps", "10",
        cwd=user_dir,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    import imageio.v3 as iio

    assert iio.imread(video, index=None).shape[0] == 10


def test_an_rllib_env_and_a_gymnasium_env_train_and_meet_the_users_rules(user_dir: Path) -> None:
    pair = _train(
        user_dir, "pair", "scenario.entry=my_envs:Pair", "scenario.metrics=[agree]",
        "env.policies=per_agent",
    )  # fmt: skip
    assert "ray/tune/env_runners/info/agree" in _tensorboard_tags(pair)
    summary = _evaluate(user_dir, pair, "random,my_envs:Copy")
    copy = summary["policies"]["my_envs:Copy"]
    assert copy["return"]["mean"] > summary["policies"]["random"]["return"]["mean"]
    assert "info/agree" in copy

    corridor = _train(
        user_dir, "corridor", "scenario.entry=my_envs:Corridor", "scenario.metrics=[pos:max]",
    )  # fmt: skip
    assert "ray/tune/env_runners/info/pos" in _tensorboard_tags(corridor)
    summary = _evaluate(user_dir, corridor, "random,my_envs:Right")
    # the zoo's arrays of a custom env's policy, with its import path in the record
    result = _export(user_dir, corridor, "corridor")
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads((user_dir / "zoo" / "corridor.json").read_text())
    assert "my_envs:Corridor" in json.dumps(record)
    right = summary["policies"]["my_envs:Right"]
    # walking right reaches the end in 5 steps: return 1 - 5 x 0.01
    assert right["info/pos"]["mean"] == 5.0 and right["return"]["mean"] == pytest.approx(0.95)
