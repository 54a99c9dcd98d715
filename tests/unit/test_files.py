"""Result files: written whole or not at all; unwritable places refused before work starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from mobrl.core.errors import UserError
from mobrl.core.files import atomic_write_csv, atomic_write_json, atomic_write_text, check_writable


def test_atomic_writes_replace_the_file_and_leave_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")
    atomic_write_json(target, {"path": tmp_path, "value": 1.5})
    assert json.loads(target.read_text()) == {"path": str(tmp_path), "value": 1.5}
    atomic_write_csv(tmp_path / "rows.csv", pd.DataFrame({"seed": [0, 1], "return": [2.0, 3.0]}))
    assert (tmp_path / "rows.csv").read_text().splitlines() == ["seed,return", "0,2.0", "1,3.0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv", "summary.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    target.write_text("kept")

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("cannot")

    with pytest.raises(RuntimeError):
        atomic_write_json(target, {"bad": Unprintable()})
    assert target.read_text() == "kept"
    atomic_write_text(target, "new")
    assert target.read_text() == "new"


def test_unwritable_places_are_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    check_writable(tmp_path / "new" / "deeper", "--output")  # created later: fine
    with pytest.raises(UserError, match="--output '.*afile/out' is not writable"):
        check_writable(tmp_path / "afile" / "out", "--output")


def test_a_full_disk_is_one_line_and_leaves_no_temporary(tmp_path: Path, monkeypatch) -> None:
    import errno
    import os

    target = tmp_path / "summary.json"
    target.write_text("old")

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(UserError, match="No space left on device. Nothing half-written"):
        atomic_write_json(target, {"value": 1})
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_an_output_dir_is_claimed_by_one_command_at_a_time(tmp_path: Path) -> None:
    from mobrl.core.files import claimed

    out = tmp_path / "eval"
    with claimed(out):
        with pytest.raises(UserError, match="being written by another mobrl command"):
            with claimed(out):
                pass
        (out / "summary.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # the claim is gone
    fresh = tmp_path / "failed"
    with pytest.raises(RuntimeError):
        with claimed(fresh):
            raise RuntimeError("the command failed")
    assert not fresh.exists()  # a failed command leaves no folder it made


def test_a_claim_is_refused_while_its_command_runs_and_taken_over_once_it_is_killed(
    tmp_path: Path,
) -> None:
    import signal
    import subprocess
    import sys

    from mobrl.core.files import claimed

    out = tmp_path / "eval"
    holder = f"""
import sys, time
from mobrl.core.files import claimed
with claimed({str(out)!r}):
    print("held", flush=True)
    time.sleep(60)
"""
    command = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert command.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"another mobrl command \\(pid {command.pid}\\)"):
            with claimed(out):
                pass
        command.send_signal(signal.SIGKILL)  # killed: no chance to release its claim
        command.wait(timeout=30)
    finally:
        command.kill()
        command.stdout.close()
    assert (out / ".mobrl-writing").read_text() == str(command.pid)  # left behind
    with claimed(out):
        assert (out / ".mobrl-writing").read_text() == str(os.getpid())
    assert not (out / ".mobrl-writing").exists()


def test_an_evaluation_journal_keeps_whole_lines_and_its_own_settings(tmp_path: Path) -> None:
    import numpy as np

    from mobrl.evaluation.outputs import EvalDir

    out = EvalDir(tmp_path)
    settings = {"episodes": 3, "policies": ["trained", "greedy"]}
    journal = out.journal(settings)
    row = {"policy": "greedy", "episode": 0, "seed": 7, "return": np.float64(0.1) + 0.2}
    journal.record(1, 7, row)
    journal.record(0, 7, {**row, "policy": "trained", "length": np.int64(100)})
    journal.close(finished=False)
    path = tmp_path / EvalDir.JOURNAL
    path.write_text(path.read_text() + '{"job": 1, "seed": 8, "ro')  # a kill mid-line

    again = out.journal(settings)
    assert again.known == {
        (1, 7): {"policy": "greedy", "episode": 0, "seed": 7, "return": 0.30000000000000004},
        (0, 7): {"policy": "trained", "episode": 0, "seed": 7, "return": 0.30000000000000004,
                 "length": 100},
    }  # fmt: skip
    again.record(1, 8, {**row, "seed": 8})  # after the cut line, which is gone
    again.close(finished=False)
    assert sorted(out.journal(settings).known) == [(0, 7), (1, 7), (1, 8)]
    with pytest.raises(UserError, match="holds an unfinished evaluation with other settings"):
        out.journal({**settings, "episodes": 4})
    out.drop_journal()
    assert not path.exists() and out.journal(settings).known == {}
    path.write_text('{"settings": {"epi')  # killed while its first line was written
    assert out.journal(settings).known == {} and not path.exists()
