"""E2E fixtures: real `mobrl train` runs on smoke budgets, shared per module to save time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_mobrl


def train_smoke(run_dir: Path, *overrides: str) -> dict:
    """Run `mobrl train run=smoke OVERRIDES` into `run_dir`; return its summary.json."""
    result = run_mobrl("train", "run=smoke", f"hydra.run.dir={run_dir}", *overrides)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"run dir: {run_dir}" in result.stdout
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture(scope="session")
def small_ma_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("small_ma") / "run"
    train_smoke(run_dir, "scenario=small", "env=ma")
    return run_dir


@pytest.fixture(scope="session")
def small_central_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("small_central") / "run"
    train_smoke(run_dir, "scenario=small", "env=central")
    return run_dir
