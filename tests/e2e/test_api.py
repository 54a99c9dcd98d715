"""The Python API trains for real (RLlib, Tune, checkpoints) and hands back a run a notebook
can read and evaluate; run in a fresh interpreter, as a script or notebook would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ray_process_count

pytestmark = pytest.mark.slow

SCRIPT = """
import json, signal, sys
import torch
import mobrl

threads, sigint = torch.get_num_threads(), signal.getsignal(signal.SIGINT)
run = mobrl.train("scenario=small", "run=smoke", run_dir=sys.argv[1])
kept = torch.get_num_threads() == threads and signal.getsignal(signal.SIGINT) is sigint
progress = run.progress
ev = run.evaluate(episodes=2, baselines=["greedy"], output=sys.argv[2], workers=1)
print(json.dumps({
    "iterations": progress["training_iteration"].tolist(),
    "trials": sorted(set(progress["trial"])),
    "checkpoints": [str(c) for c in run.checkpoints],
    "summary_best": run.summary["best_checkpoint"],
    "policies": list(ev.table.index),
    "episodes": len(ev.episodes),
    "command": run.manifest["command"],
    "executor": run.manifest["executor"],
    "kept": kept,
}))
"""


def test_train_from_python_returns_a_run_to_read_and_evaluate(tmp_path: Path) -> None:
    run_dir, out = tmp_path / "run", tmp_path / "eval"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(run_dir), str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["iterations"] == [1, 2] and len(got["trials"]) == 1
    assert got["checkpoints"] and got["summary_best"] in got["checkpoints"]
    assert got["policies"] == ["trained", "greedy"] and got["episodes"] == 4
    assert got["command"] == "mobrl train scenario=small run=smoke"  # as the CLI records it
    # one trial in the notebook's own process: its torch threads and Ctrl-C handler come back
    assert got["executor"] == "driver" and got["kept"]
    assert (run_dir / "manifest.json").is_file() and (out / "summary.json").is_file()
    assert ray_process_count() == 0


def test_another_library_trains_on_the_pettingzoo_env() -> None:
    """Stable-Baselines3's PPO through SuperSuit on `mobrl.parallel_env`, as the docs show."""
    ss = pytest.importorskip("supersuit")
    sb3 = pytest.importorskip("stable_baselines3")
    import mobrl

    env = mobrl.parallel_env("small", obs="topk", reward="marginal")
    vec = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(env), 1, num_cpus=0, base_class="stable_baselines3"
    )
    model = sb3.PPO("MlpPolicy", vec, n_steps=100, batch_size=250).learn(total_timesteps=1000)
    assert model.num_timesteps >= 1000 and vec.num_envs == len(env.possible_agents) == 5
