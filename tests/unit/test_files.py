"""Result files: written whole or not at all; unwritable places refused before work starts."""

from __future__ import annotations

import json
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
