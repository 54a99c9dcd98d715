"""`env=cells` through the commands, with real RLlib training: one agent per station on
uma19_energy trains (a shared policy over the 19 cells), logs the network's energy measures
to TensorBoard, and its checkpoint, restored in a fresh process by `mobrl evaluate`, plays the
same seeds as the cell rules, with service and energy reported apart."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from mobrl.core import metrics
from tests.conftest import run_mobrl
from tests.e2e.conftest import train_smoke


@pytest.fixture(scope="module")
def cells_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("cells") / "run"
    train_smoke(run_dir, "scenario=uma19_energy", "env=cells", "env.energy_weight=0.1")
    return run_dir


def test_cells_run_is_one_shared_policy_over_the_stations(cells_run: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    manifest = json.loads((cells_run / "manifest.json").read_text())
    assert manifest["env_mode"] == "cells"
    assert manifest["policy_ids"] == ["shared"]  # RLlib's multi-agent runner, one module
    config = manifest["env_config"]
    assert config["neighbours"] == 6 and config["layout"]["power"]["weight"] == 0.1
    (trial,) = sorted(p for p in (cells_run / "tune").iterdir() if p.is_dir())
    acc = EventAccumulator(str(trial), size_guidance={"scalars": 0})
    acc.Reload()
    for key in (metrics.NET_ENERGY, metrics.NET_ASLEEP, metrics.NET_OBJECTIVE):
        tag = metrics.tensorboard_tag(metrics.result_key(key))
        values = [e.value for e in acc.Scalars(tag)]
        assert len(values) == 2 and all(math.isfinite(v) for v in values), key


def _evaluated(checkpoint: Path, baselines: str, tmp_path: Path, *extra: str) -> tuple:
    """`mobrl evaluate` of `checkpoint` for 2 episodes against `baselines`, on one worker:
    its stdout and its episodes.csv."""
    out = tmp_path / "eval"
    result = run_mobrl(
        "evaluate", "--checkpoint", str(checkpoint), "--episodes", "2", *extra,
        "--baselines", baselines, "--workers", "1", "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout, pd.read_csv(out / "episodes.csv")


def test_cells_checkpoint_plays_against_the_cell_rules(cells_run: Path, tmp_path: Path) -> None:
    stdout, frame = _evaluated(cells_run, "all_on,idle_off,threshold", tmp_path, "--seed", "1000")
    assert ": service" in stdout and ": energy" in stdout
    assert sorted(frame.policy.unique()) == ["all_on", "idle_off", "threshold", "trained"]
    for _, group in frame.groupby("policy"):
        assert list(group.seed) == [1000, 1001]
    by = {name: group.set_index("seed") for name, group in frame.groupby("policy")}
    assert (by["all_on"][metrics.NET_ASLEEP] == 0).all()
    # the trained cells' return is the sum over cells of their rewards: N times the
    # objective summed over the steps (the rules' too, played in the same env)
    for name, rows in by.items():
        expected = 19 * rows[metrics.NET_OBJECTIVE] * rows["length"]
        assert (rows["return"] - expected).abs().max() < 1e-6 * expected.abs().max(), name
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert set(summary["paired_vs_trained"]) == {"all_on", "idle_off", "threshold"}
    # a UE rule is no cell agent's yardstick
    refused = run_mobrl(
        "evaluate", "--checkpoint", str(cells_run), "--baselines", "greedy", cwd=tmp_path
    )
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "greedy" in refused.stderr


def test_cells_policy_serves_exports_and_acts_alike(cells_run: Path, tmp_path: Path) -> None:
    """The cell policy answers `/v1/act` of a running `mobrl serve` (the query an
    energy-saving xApp makes: each cell's observation in, its next state out), exports as a
    zoo entry and as ONNX, and all of them choose the states the checkpoint chooses."""
    import httpx
    import numpy as np

    import mobrl
    from mobrl.evaluation.policies import load_policy
    from mobrl.evaluation.zoo import ZooPolicy, load_layers
    from tests.cli.test_onnx_export import run_onnx
    from tests.cli.test_serve import serving

    env = mobrl.parallel_env("uma19_energy", env="cells")
    observed, _ = env.reset(seed=3)
    for _ in range(5):
        observed, *_ = env.step({a: 0 for a in env.agents})
    env.close()
    from mobrl.evaluation.targets import pick_checkpoint

    manifest = json.loads((cells_run / "manifest.json").read_text())
    checkpoint, _ = pick_checkpoint(cells_run, "best")
    trained = load_policy(checkpoint, manifest["env_config"])
    expected = trained.act(observed)
    assert set(expected) == set(observed) and set(expected.values()) <= {0, 1, 2, 3}
    with serving("--checkpoint", str(cells_run)) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            body = {"observations": {a: o.tolist() for a, o in observed.items()}}
            answer = client.post("/v1/act", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["actions"] == expected
    zoo_dir = tmp_path / "zoo"
    done = run_mobrl(
        "zoo", "export", "--checkpoint", str(cells_run), "--name", "cells_e2e",
        "--output", str(zoo_dir), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads((zoo_dir / "cells_e2e.json").read_text())
    entry = ZooPolicy(load_layers(zoo_dir / "cells_e2e.npz"), record["env_config"])
    assert entry.act(observed) == expected
    done = run_mobrl(
        "zoo", "export", "--checkpoint", str(cells_run), "--name", "cells_e2e",
        "--format", "onnx", "--output", str(zoo_dir), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = np.stack([observed[a] for a in sorted(observed)]).astype(np.float32)
    _, actions = run_onnx(zoo_dir / "cells_e2e.onnx", rows)
    assert dict(zip(sorted(observed), np.asarray(actions).tolist())) == expected


def test_hierarchical_trains_a_policy_per_level_and_evaluates(tmp_path: Path) -> None:
    """env=hierarchical through real RLlib training: the network agent and the cells each
    get their own RLModule, and the checkpoint plays against the cell rules."""
    run_dir = tmp_path / "run"
    train_smoke(run_dir, "scenario=uma19_energy", "env=hierarchical", "env.period=5")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env_mode"] == "hierarchical"
    assert manifest["policy_ids"] == ["cells", "network"]
    assert manifest["env_config"]["period"] == 5
    _, frame = _evaluated(run_dir, "threshold", tmp_path)
    assert sorted(frame.policy.unique()) == ["threshold", "trained"]
    assert frame[metrics.NET_OBJECTIVE].notna().all()
    # /v1/act answers each level with its own policy: the network agent with a scale of λ
    # when it observes, the cells with their states
    from mobrl.envs.factory import make_env
    from mobrl.serve.policy import ServedPolicy
    from tests.unit.test_serve import client_of

    client = client_of(ServedPolicy.load(str(run_dir), []))
    env = make_env({**manifest["env_config"], "render_mode": None})
    observed, _ = env.reset(seed=1)
    env.close()
    body = {a: o.tolist() for a, o in observed.items()}
    answer = client.post("/v1/act", json={"observations": body})
    assert answer.status_code == 200, answer.text
    actions = answer.json()["actions"]
    assert set(actions) == set(observed) and 0 <= actions["network"] < 5
    cells_only = {a: o for a, o in body.items() if a != "network"}
    answer = client.post("/v1/act", json={"observations": cells_only})
    assert answer.status_code == 200 and set(answer.json()["actions"]) == set(cells_only)


def test_a_network_agent_trains_above_cells_held_at_a_zoo_policy(tmp_path: Path) -> None:
    """env.cell_policy through real RLlib training: the network agent is the only RLModule;
    RLlib steps the env between its decisions with no agent observing, so it samples one
    agent step per env.period env steps (with the difference reward's copy alongside), and
    the checkpoint plays against the rules and the cells alone."""
    run_dir = tmp_path / "run"
    overrides = ["env.cell_policy=zoo:uma19_energy", "env.network_reward=difference"]
    train_smoke(run_dir, "scenario=uma19_energy", "env=hierarchical", "env.period=5", *overrides)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["policy_ids"] == ["network"]
    (progress,) = run_dir.glob("tune/*/progress.csv")
    rows = pd.read_csv(progress)
    env_steps = rows["env_runners/num_env_steps_sampled"]
    network = rows["env_runners/num_agent_steps_sampled/network"]
    assert (env_steps == 200).all() and (network == 40).all()  # 200 env steps, one in 5
    _, frame = _evaluated(run_dir, "threshold,cells_alone", tmp_path)
    assert sorted(frame.policy.unique()) == ["cells_alone", "threshold", "trained"]


def test_an_energy_weight_sweep_draws_its_front(tmp_path: Path) -> None:
    """`mobrl train -m ... env.energy_weight=a,b` with evaluation during training, then
    `mobrl report` on the sweep: each λ's trained policy and the baselines on the same seeds
    at their energy and service, as a figure and energy_front.csv."""
    sweep = tmp_path / "sweep"
    result = run_mobrl(
        "train", "-m", "run=smoke", "scenario=uma19_energy", "env=cells",
        "env.energy_weight=0.02,0.5", "run.stop.iterations=1", "run.eval.interval=1",
        "run.eval.episodes=2", "run.eval.baselines=[all_on,threshold,energy_oracle]",
        f"hydra.sweep.dir={sweep}", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    reported = run_mobrl("report", str(sweep), "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    front = pd.read_csv(tmp_path / "report" / "energy_front.csv")
    assert sorted(front.energy_weight.unique()) == [0.02, 0.5]
    assert sorted(front.policy.unique()) == ["all_on", "energy_oracle", "threshold", "trained"]
    by = front.set_index(["policy", "energy_weight"])[metrics.NET_ENERGY]
    # the rules do not weigh energy: the same seeds give the same points under either λ
    assert by["all_on", 0.02] == by["all_on", 0.5] and by["threshold", 0.02] == by["threshold", 0.5]
    # the reference trades energy at the run's λ: a heavier weight sleeps more
    assert by["energy_oracle", 0.5] < by["energy_oracle", 0.02] <= by["all_on", 0.02]
    assert front[metrics.UTILITY_MEAN].notna().all()
    report = (tmp_path / "report" / "report.md").read_text()
    assert (
        "## Energy and service" in report and (tmp_path / "report" / "energy_front.png").is_file()
    )


def test_cells_in_turns_imitate_train_and_evaluate(tmp_path: Path) -> None:
    """env.decide=in_turns through real RLlib: imitation labels every turn (DAgger: the policy
    plays a round, its requests through the guard; the episodes on 2 processes), PPO trains on turn-based episodes, and
    the checkpoint, restored in a fresh process, plays its turns against the rules at once:
    each one's return is N times its objective summed over the network's steps."""
    run_dir = tmp_path / "run"
    train_smoke(
        run_dir, "scenario=uma19_energy", "env=cells", "env.decide=in_turns",
        "run.imitate.expert=energy_greedy", "run.imitate.episodes=1", "run.imitate.rounds=1",
        "run.imitate.updates=20", "run.imitate.workers=2",
    )  # fmt: skip
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["env_config"]["decide"] == "in_turns"
    _, frame = _evaluated(run_dir, "threshold,energy_greedy", tmp_path, "--seed", "1000")
    assert sorted(frame.policy.unique()) == ["energy_greedy", "threshold", "trained"]
    by = {name: group.set_index("seed") for name, group in frame.groupby("policy")}
    for name, rows in by.items():
        assert (rows["length"] == by["threshold"]["length"]).all(), name  # steps, not turns
        expected = 19 * rows[metrics.NET_OBJECTIVE] * rows["length"]
        assert (rows["return"] - expected).abs().max() < 1e-6 * expected.abs().max(), name
