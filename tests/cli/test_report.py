"""`mobrl report` as a process: bad input is one line; Ray and torch are never imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from mobrl.core.errors import UserError
from mobrl.reporting import build_report, discover, report_command


def test_bad_input_is_a_one_line_error(multirun, tmp_path: Path, mobrl_cli) -> None:
    root, _ = multirun
    with pytest.raises(UserError, match="no mobrl runs or evaluations"):
        (tmp_path / "empty").mkdir()
        discover([tmp_path / "empty"])
    with pytest.raises(UserError, match="no run logged 'nope'"):
        build_report([root], tmp_path / "r1", metrics=["nope"])
    with pytest.raises(UserError, match="Did you mean 'env_steps'"):
        build_report([root], tmp_path / "r2", x="env_step")
    with pytest.raises(UserError, match="--group-by"):
        build_report([root], tmp_path / "r3", group_by=["algo.nme"])
    kept = tmp_path / "kept"
    report_command([root], kept, None, None, None)
    before = (kept / "report.md").read_text()
    with pytest.raises(UserError, match="already holds a report.*--overwrite"):
        report_command([root], kept, None, "time_s", None)
    assert (kept / "report.md").read_text() == before  # nothing written is lost
    report_command([root], kept, None, "time_s", None, overwrite=True)
    done = mobrl_cli("report", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "does not exist" in done.stderr


def test_report_imports_neither_ray_nor_torch(multirun, tmp_path: Path) -> None:
    import subprocess
    import sys

    root, _ = multirun
    probe = (
        "import sys; from pathlib import Path; from mobrl.reporting import build_report; "
        f"build_report([Path({str(root)!r})], Path({str(tmp_path / 'r')!r})); "
        "heavy = [m for m in ('ray', 'torch') if m in sys.modules]; assert not heavy, heavy"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
