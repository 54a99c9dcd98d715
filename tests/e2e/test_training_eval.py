"""Evaluation during training, end to end: `evaluation/` columns in progress.csv and
TensorBoard, ranking by evaluation, `run.stop.beat`, and zoo export of the result."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mobrl.core import metrics
from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def _algo(run_dir: Path) -> str:
    return yaml.safe_load((run_dir / "config.yaml").read_text())["algo"]["name"]


def _trial(run_dir: Path) -> Path:
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    return trial


@pytest.fixture(scope="module", params=["ppo", "appo"])
def small_eval_run(request, tmp_path_factory) -> Path:
    """A smoke run of PPO, and of APPO, whose env-runner actors pull the learner's weights
    while the trial's own env runner keeps its first ones: evaluation must see the learner's."""
    run_dir = tmp_path_factory.mktemp(f"small_eval_{request.param}") / "run"
    result = run_mobrl(
        "train", "run=smoke", "scenario=small", f"algo={request.param}", "env.obs=extended",
        "run.eval.interval=1", "run.eval.episodes=3", "run.eval.baselines=[greedy,noop]",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return run_dir


def test_smoke_run_logs_finite_evaluation_columns(small_eval_run: Path) -> None:
    trial = _trial(small_eval_run)
    progress = pd.read_csv(trial / "progress.csv")
    columns = [
        metrics.EVAL_RETURN_MEAN,
        metrics.eval_gap("greedy", "mean"),
        metrics.eval_gap("noop", "ci_low"),
        f"{metrics.EVALUATION}/{metrics.UTILITY_MEAN}",
    ]
    for col in columns:
        assert col in progress, sorted(c for c in progress if c.startswith("evaluation"))
        assert all(math.isfinite(v) for v in progress[col]), (col, progress[col].tolist())
    # every UE loses far more when it never connects: PPO's smoke policy beats noop; APPO's
    # need not (one smoke run left every UE unconnected after two iterations)
    if _algo(small_eval_run) == "ppo":
        assert (progress[metrics.eval_beats("noop")] == 1).all()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(trial), size_guidance={"scalars": 0})
    acc.Reload()
    tag = metrics.tensorboard_tag(metrics.eval_gap("greedy", "mean"))
    assert [e.value for e in acc.Scalars(tag)] == pytest.approx(
        progress[metrics.eval_gap("greedy", "mean")].tolist(), rel=1e-5
    )
    # ranked by the evaluation's mean UE utility (run.eval.metric's default on mobile layouts)
    summary = json.loads((small_eval_run / "summary.json").read_text())
    assert summary["metric"] == metrics.EVAL_SCORE and summary["eval_metric"] == "utility"
    assert summary["best_return"] == pytest.approx(progress[metrics.EVAL_SCORE].max())
    assert progress[metrics.EVAL_SCORE].tolist() == pytest.approx(
        progress[f"{metrics.EVALUATION}/{metrics.UTILITY_MEAN}"].tolist()
    )
    # the best checkpoint's line quotes the value at that checkpoint's own iteration
    at = progress.set_index(metrics.ITERATION)[metrics.EVAL_SCORE]
    assert summary["best_checkpoint_value"] == pytest.approx(
        at[summary["best_checkpoint_iteration"]]
    )


def test_evaluation_return_equals_evaluate_on_the_same_seeds(
    small_eval_run: Path, tmp_path
) -> None:
    """What training logged for its last checkpoint is what `mobrl evaluate` measures, to
    the digit, for PPO.

    APPO's learner trains on a thread of its own while its env-runner actor samples on, so
    the checkpoint saved after an iteration's evaluation can hold weights some updates
    newer (two runs: -39.5 logged and -39.7 evaluated; -68.5 and -92.9). What holds for
    APPO is that its evaluations play the weights being trained: when they played the
    env runner's first weights, every evaluation of a run was the same to 16 digits."""
    summary = json.loads((small_eval_run / "summary.json").read_text())
    progress = pd.read_csv(_trial(small_eval_run) / "progress.csv")
    out = tmp_path / "eval"
    result = run_mobrl(
        "evaluate", "--checkpoint", summary["last_checkpoint"], "--episodes", "3",
        "--seed", "100000", "--baselines", "greedy", "--workers", "1", "--output", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    evaluated = json.loads((out / "summary.json").read_text())
    if _algo(small_eval_run) != "ppo":
        evaluations = progress[[metrics.EVAL_RETURN_MEAN, metrics.EVAL_SCORE]]
        assert len(evaluations) >= 2 and len(evaluations.drop_duplicates()) > 1, evaluations
        return
    assert evaluated["policies"]["trained"]["return"]["mean"] == pytest.approx(
        progress[metrics.EVAL_RETURN_MEAN].iloc[-1], rel=1e-6
    )
    utility = evaluated["paired_vs_trained"]["greedy"]["diff"][metrics.UTILITY_MEAN]
    assert utility["mean"] == pytest.approx(
        progress[metrics.eval_gap("greedy", "mean")].iloc[-1], rel=1e-6, abs=1e-12
    )


def test_zoo_export_acts_like_the_checkpoint_without_ray(small_eval_run: Path, tmp_path) -> None:
    import subprocess
    import sys

    summary = json.loads((small_eval_run / "summary.json").read_text())
    result = run_mobrl(
        "zoo", "export", "--checkpoint", summary["last_checkpoint"], "--name", "smoke",
        "--output", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    meta = json.loads((tmp_path / "smoke.json").read_text())
    assert meta["obs"] == "extended" and meta["training"]["iteration"] == 2
    # the zoo's numpy network gives RLlib's logits, in a process that never imports Ray
    probe = f"""
import json, sys, numpy as np
from pathlib import Path
from mobrl.evaluation import zoo
layers = zoo.load_layers(Path({str(tmp_path / "smoke.npz")!r}))
obs = np.random.default_rng(0).uniform(-1, 1, size=(64, 19)).astype(np.float32)
np.save({str(tmp_path / "logits.npy")!r}, zoo.logits(layers, obs))
assert not any(m == 'ray' or m.startswith('ray.') for m in sys.modules), 'ray imported'
assert 'torch' not in sys.modules, 'torch imported'
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    import torch

    from mobrl.core.checkpoints import load_rl_modules

    module = load_rl_modules(Path(summary["last_checkpoint"]))["default_policy"]
    obs = np.random.default_rng(0).uniform(-1, 1, size=(64, 19)).astype(np.float32)
    with torch.no_grad():
        ref = module.forward_inference({"obs": torch.as_tensor(obs)})["action_dist_inputs"]
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), ref.numpy(), atol=1e-5)


def test_stop_beat_ends_training_once_the_gap_ci_is_above_zero(tmp_path: Path) -> None:
    """CartPole: an untrained deterministic policy ties or loses to random; PPO's preset
    beats it within a few iterations, and the run stops there rather than at 40."""
    run_dir = tmp_path / "run"
    result = run_mobrl(
        "train", "scenario=cartpole", "run.eval.interval=1", "run.eval.episodes=10",
        "run.eval.baselines=[random]", "run.stop.beat=random", "run.stop.iterations=40",
        "run.checkpoint.frequency=0", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    progress = pd.read_csv(_trial(run_dir) / "progress.csv")
    last = progress.iloc[-1]
    assert len(progress) < 40
    assert last[metrics.eval_beats("random")] == 1
    assert last[metrics.eval_gap("random", "ci_low")] > 0
    assert (progress[metrics.eval_beats("random")].iloc[:-1] == 0).all()


@pytest.mark.parametrize("obs", ["mobile", "extended"])
def test_mobrl_rollout_equals_rllibs_own_evaluation(obs: str) -> None:
    """Whatever the env feeds the policy in training (here: its observation), mobrl's rollout
    (used by `mobrl evaluate`, `render` and evaluation during training) reproduces RLlib's own
    deterministic evaluation of the algorithm: same episode, same return."""
    import ray

    from mobrl.envs import factory
    from mobrl.evaluation.policies import TrainedPolicy
    from mobrl.training.algos import build_algorithm_config
    from mobrl.training.checks import validate_command_line

    cfg = validate_command_line(
        ["scenario=small", f"env.obs={obs}", "env.sampler=multi_agent", "run=smoke",
         "run.resources.num_env_runners=0"]
    )  # fmt: skip
    env_config = factory.env_config_from(cfg)
    seed = 4242
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        factory.register()
        config = build_algorithm_config(cfg, factory.ENV_NAME, env_config)
        eval_env = {**env_config, "kwargs": {**env_config["kwargs"], "seed": seed}}
        config.evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=0,
            evaluation_duration=1,
            evaluation_duration_unit="episodes",
            evaluation_config={"explore": False, "env_config": eval_env},
        )
        algo = config.build_algo()
        try:
            algo.train()
            # RLlib's evaluation env runner resets its env before the episode it evaluates: a
            # copy of that env, taken now, plays the same episode in mobrl's rollout
            import copy

            from mobrl.evaluation.rollout import play

            env = copy.deepcopy(algo.eval_env_runner.env.envs[0])
            rllib = algo.evaluate()["env_runners"]["episode_return_mean"]
            modules = {pid: algo.get_module(pid) for pid in factory.policy_ids(env_config)}
            ours = play(env, TrainedPolicy(modules, env_config))["return"]
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    assert ours == pytest.approx(rllib, rel=1e-6)
