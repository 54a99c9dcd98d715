"""`mobrl train logger=...` bad input as a user meets it: one line, exit 2, before Ray starts,
nothing left behind, also where the tracker's package is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_mobrl

#: `mobrl train ARGS` in a Python whose import system finds no `mlflow` (as without the extra)
WITHOUT_MLFLOW = """
import sys
sys.modules["mlflow"] = None  # importlib.util.find_spec("mlflow") is then None
from mobrl.cli import entry
sys.argv = ["mobrl", "train", *sys.argv[1:]]
entry()
"""


def _one_line_exit_2(result: subprocess.CompletedProcess, cwd: Path, expected: str) -> None:
    printed = result.stdout + result.stderr
    assert result.returncode == 2, printed
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], printed
    assert "Traceback" not in printed
    assert list(cwd.iterdir()) == []  # no run dir, no outputs/


def test_missing_tracker_package_names_the_extra(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_MLFLOW, "logger=mlflow", "run=smoke"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    _one_line_exit_2(result, tmp_path, "logger=mlflow needs the mlflow package")
    assert 'pip install "mobrl[trackers]"' in result.stderr


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["logger=mlfow"], "Did you mean 'mlflow'"),
        (["logger=wandb", "logger.mode=ofline"], "unknown logger.mode 'ofline'"),
    ],
)
def test_bad_logger_values_are_one_line(tmp_path: Path, argv: list[str], expected: str) -> None:
    if "logger=wandb" in argv:
        pytest.importorskip("wandb")
    _one_line_exit_2(run_mobrl("train", *argv, cwd=tmp_path, timeout=120), tmp_path, expected)
