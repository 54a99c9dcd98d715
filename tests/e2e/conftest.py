"""E2E fixtures: real `mobrl train` runs on smoke budgets, shared per module to save time."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
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


def free_address() -> str:
    """A loopback address whose port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def simulators() -> Iterator[list]:
    """Start simulator processes (each waited for until it serves); all killed at the end."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str]) -> str:
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        started.append(process)
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and " on " not in line:
            line = process.stdout.readline()
            assert line or process.poll() is None, f"simulator {argv} exited"
        return line.rsplit(" on ", 1)[1].strip()

    def kill_all() -> None:
        for process in started:
            process.kill()
            process.wait(timeout=30)

    start.kill_all = kill_all
    yield start
    kill_all()
