"""`mobrl evaluate` end to end: smoke checkpoints, plain RLlib checkpoints, mismatched spaces."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def test_evaluate_smoke_checkpoint_against_baselines(small_ma_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    result = run_mobrl(
        "evaluate",
        "--checkpoint",
        str(small_ma_run),
        "--episodes",
        "4",
        "--seed",
        "7",
        "--output",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr  # workers' episodes taken over here: no noise
    assert "best checkpoint by training return" in result.stdout
    frame = pd.read_csv(out / "episodes.csv")
    expected = [
        "capped", "full", "greedy", "greedy_fill", "noop", "oracle", "random", "trained",
    ]  # fmt: skip
    assert sorted(frame.policy.unique()) == expected
    for _, group in frame.groupby("policy"):
        assert list(group.seed) == [7, 8, 9, 10]  # paired: the same seeds for every policy
        assert list(group.episode) == [0, 1, 2, 3]
    assert set(frame.columns) >= {"policy", "episode", "seed", "return", "ue/utility/mean"}
    summary = json.loads((out / "summary.json").read_text())
    for stats in summary["policies"].values():
        assert math.isfinite(stats["return"]["mean"]) and math.isfinite(stats["return"]["ci95"])
        assert stats["return"]["n"] == 4
    assert set(summary["paired_vs_trained"]) == {
        "random",
        "noop",
        "greedy",
        "greedy_fill",
        "full",
        "capped",
        "oracle",
    }
    # evaluating the same policy on the same seeds again gives the same numbers
    again = tmp_path / "again"
    run_mobrl(
        "evaluate",
        "--checkpoint",
        str(small_ma_run),
        "--episodes",
        "4",
        "--seed",
        "7",
        "--baselines",
        "",
        "--output",
        str(again),
        "--workers",
        "1",
        cwd=tmp_path,
    )
    trained = frame[frame.policy == "trained"]["return"].to_numpy()
    assert pd.read_csv(again / "episodes.csv")["return"].to_numpy() == pytest.approx(trained)


def test_mismatched_scenario_exits_2(small_ma_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval"
    result = run_mobrl(
        "evaluate",
        "--checkpoint",
        str(small_ma_run),
        "scenario=medium",
        "--output",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    # its observation (env.obs=mobile, carried over) has one entry per station
    assert "one entry per station: small has 3 stations, medium 7" in result.stderr
    assert result.stderr.strip().count("\n") == 0 and not out.exists()


PLAIN_RLLIB = """
import sys
from mobile_env.handlers.multi_agent import MComMAHandler
from mobile_env.scenarios.small import MComSmall
from mobile_env.wrappers.multi_agent import RLlibMAWrapper
import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.tune.registry import register_env

import gymnasium


class SmallMA(RLlibMAWrapper):  # a user's own few lines: mobile-env's wrapper with Dict spaces
    def __init__(self, cfg):
        super().__init__(MComSmall(config={"handler": MComMAHandler}))
        self.observation_space = gymnasium.spaces.Dict(self.observation_spaces)
        self.action_space = gymnasium.spaces.Dict(self.action_spaces)


register_env("small-ma", SmallMA)
ray.init(num_cpus=2, include_dashboard=False)
config = (
    PPOConfig()
    .environment("small-ma")
    .env_runners(num_env_runners=0)
    .multi_agent(policies={"ue_policy"}, policy_mapping_fn=lambda agent, episode, **kw: "ue_policy")
    .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
)
algo = config.build_algo()
algo.train()
print(algo.save(sys.argv[1]).checkpoint.path)
algo.stop()
ray.shutdown()
"""


def test_plain_rllib_checkpoint_evaluates_with_overrides(tmp_path: Path) -> None:
    ckpt = tmp_path / "plain"
    made = subprocess.run(
        [sys.executable, "-c", PLAIN_RLLIB, str(ckpt)], capture_output=True, text=True, timeout=600
    )
    assert made.returncode == 0, made.stderr[-3000:]
    missing = run_mobrl("evaluate", "--checkpoint", str(ckpt), cwd=tmp_path)
    assert missing.returncode == 2 and "scenario=small env=ma" in missing.stderr
    out = tmp_path / "eval"
    result = run_mobrl(
        "evaluate",
        "--checkpoint",
        str(ckpt),
        "scenario=small",
        "env=ma",
        "--episodes",
        "2",
        "--baselines",
        "greedy",
        "--output",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    frame = pd.read_csv(out / "episodes.csv")
    assert sorted(frame.policy.unique()) == ["greedy", "trained"]
    assert frame["return"].notna().all()


PLANT = """
import os, pickle, sys
class Planted:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with open(sys.argv[1], "wb") as handle:
    pickle.dump({"weights": Planted()}, handle)
"""


def test_planted_pickle_is_refused_unless_trusted(small_ma_run: Path, tmp_path: Path) -> None:
    """A checkpoint someone sent you: its module state names os.system. mobrl refuses to load
    it in one line and the command never runs; --trust-checkpoint loads it as RLlib would."""
    import shutil
    import subprocess
    import sys

    original = next(small_ma_run.rglob("checkpoint_*"))
    copy = tmp_path / "sent" / original.name
    shutil.copytree(original, copy)
    shutil.copy(small_ma_run / "manifest.json", copy.parent / "manifest.json")
    states = list((copy / "learner_group" / "learner" / "rl_module").rglob("module_state.pkl"))
    marker = tmp_path / "ran"
    subprocess.run([sys.executable, "-c", PLANT, str(states[-1]), str(marker)], check=True)
    out = tmp_path / "eval"
    for command in (
        ["evaluate", "--output", str(out)],
        ["render", "--video", str(tmp_path / "v.mp4")],
    ):
        done = run_mobrl(*command, "--checkpoint", str(copy), "--episodes", "1", cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "system" in done.stderr and "--trust-checkpoint" in done.stderr
        assert done.stderr.strip().count("\n") == 0
        assert not marker.exists() and not out.exists() and not (tmp_path / "v.mp4").exists()
    trusted = run_mobrl(
        "evaluate", "--checkpoint", str(copy), "--episodes", "1", "--trust-checkpoint",
        "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert marker.exists(), trusted.stderr  # trusted: RLlib's own load ran the planted command
    # and what it restored had no weights at all: refused rather than played untrained
    assert trusted.returncode == 2 and "holds no trained weights" in trusted.stderr


def test_a_checkpoint_without_its_weights_is_refused(small_ma_run: Path, tmp_path: Path) -> None:
    """RLlib restores a module state that lacks weights silently, with fresh random ones:
    mobrl checks the restored tensors against the saved ones."""
    import pickle
    import shutil
    from collections import OrderedDict

    original = next(small_ma_run.rglob("checkpoint_*"))
    copy = tmp_path / "stripped" / original.name
    shutil.copytree(original, copy)
    shutil.copy(small_ma_run / "manifest.json", copy.parent / "manifest.json")
    (state,) = (copy / "learner_group" / "learner" / "rl_module").glob("*/module_state.pkl")
    saved = pickle.loads(state.read_bytes())
    kept = OrderedDict((k, v) for k, v in saved.items() if not k.startswith("pi."))
    state.write_bytes(pickle.dumps(kept))  # the policy head's weights are gone
    out = tmp_path / "eval"
    done = run_mobrl("evaluate", "--checkpoint", str(copy), "--episodes", "1", "--output", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds no trained weights" in done.stderr and "pi." in done.stderr
    assert done.stderr.strip().count("\n") == 0 and not out.exists()
