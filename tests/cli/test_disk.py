"""Writes under a full disk and concurrent writers, with real processes: one line, exit 2,
no temporary or half-written file left where a later command would pick it up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_mobrl, small_tmpfs


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 64 KiB tmpfs filled up (needs the right to mount; skipped where there is none)."""
    with small_tmpfs(tmp_path / "full", "64k") as mount:
        with open(mount / "filler", "wb") as f:
            try:
                f.write(b"\0" * 65536 * 2)
            except OSError:
                pass
        yield mount


def test_evaluate_on_a_full_disk_is_one_line(full_disk: Path) -> None:
    out = full_disk / "eval"
    result = run_mobrl(
        "baselines", "scenario=small", "--baselines", "greedy", "--episodes", "2",
        "--output", str(out),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    leftovers = [p.name for p in full_disk.rglob("*") if p.name != "filler"]
    assert not any(name.endswith(".tmp") for name in leftovers), leftovers
    assert not (out / "summary.json").exists()


def test_two_evaluations_into_one_output_one_is_refused(tmp_path: Path) -> None:
    """Two `mobrl baselines` started together into one --output: one writes its results,
    the other is refused with one line instead of silently overwriting them."""
    out = tmp_path / "shared"
    args = [sys.executable, "-m", "mobrl", "baselines", "scenario=small", "--baselines",
            "greedy,oracle", "--episodes", "30", "--workers", "1", "--output", str(out)]  # fmt: skip
    procs = [
        subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(err for code, err in outcomes if code == 2)
    assert "being written by another mobrl command" in refused or "already holds" in refused
    assert (out / "summary.json").is_file() and not (out / ".mobrl-writing").exists()


def test_a_disk_that_fills_while_workers_play_is_one_line(tmp_path: Path) -> None:
    """The journal runs out of room while worker processes hand in episodes (recorded in the
    pool's callback thread): the pool stops once and the error is told once."""
    with small_tmpfs(tmp_path / "tight", "64k") as mount:
        with open(mount / "filler", "wb") as f:
            f.write(b"\0" * (64 * 1024 - 12 * 1024))  # a journal's settings and a few rows fit
        out = mount / "eval"
        result = run_mobrl(
            "baselines", "scenario=small", "--baselines", "greedy,random,greedy_fill",
            "--episodes", "40", "--workers", "2", "--output", str(out),
        )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "No space left on device" in lines[0] and "Traceback" not in result.stderr
