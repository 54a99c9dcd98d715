"""`mobrl render` as a process: an unwritable video path is one line."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_mobrl


def test_cli_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    result = run_mobrl("render", "--policy", "greedy", "--video", "/proc/x.mp4", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "--video '/proc' is not writable" in result.stderr
    assert "Traceback" not in result.stderr
