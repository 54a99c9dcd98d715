"""`mobrl train` on a layout that names its own mobile-env channel (`classes:`): real Ray (an
env-runner actor builds the env from `env_config` in its own process), mobile-env's stock
engine, mobrl's UE metrics in progress.csv, then `mobrl evaluate` of the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mobrl.core import metrics
from tests.conftest import REPO, run_mobrl

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "mobile_env_classes" / "logdistance.yaml"


def test_a_layout_with_its_own_channel_trains_and_evaluates_with_ue_metrics(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    trained = run_mobrl(
        "train", f"scenario.path={EXAMPLE}", "run=smoke", f"hydra.run.dir={run_dir}",
        "run.resources.num_env_runners=1",  # an env-runner actor: the env built in Ray
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert trained.stdout.count("names its own mobile-env classes") == 1, trained.stdout

    env_config = json.loads((run_dir / "manifest.json").read_text())["env_config"]
    assert env_config["engine"] == "stock" and env_config["sampler"] == "multi_agent"
    assert env_config["layout"]["classes"]["channel"] == "logdistance:LogDistance"
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    progress = pd.read_csv(trial / "progress.csv")
    assert len(progress) == 2
    for key in (metrics.UTILITY_MEAN, metrics.NET_CONNECTED, metrics.JAIN_UTILITY):
        values = progress[metrics.result_key(key)]
        assert values.notna().all() and values.between(-1, 1).all(), key
    assert metrics.result_key(metrics.ue_tag(4, metrics.UE_UTILITY)) in progress  # 5 UEs

    out = tmp_path / "evaluation"
    evaluated = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "2",
        "--baselines", "greedy,random", "--workers", "1", "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env_config"]["engine"] == "stock"
    for policy in ("trained", "greedy", "random"):
        assert summary["policies"][policy][metrics.UTILITY_MEAN]["n"] == 2, policy
