"""The time-to-target bench runs end to end (tiny budget; timings are not asserted)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_bench_train_quick_trains_every_contender(tmp_path) -> None:
    out = tmp_path / "bench.json"
    record = tmp_path / "bench_report.json"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "bench.py"),
            "train",
            "--quick",
            "--out",
            str(out),
            "--json",
            str(record),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads(out.read_text())
    expected = {"mobrl", "mobrl-zoo3", "rllib"}
    if importlib.util.find_spec("stable_baselines3") is not None:
        expected.add("sb3")
    assert {r["contender"] for r in rows} == expected
    for row in rows:
        assert row["task"] == "cartpole" and row["target"] == 150.0
        # every contender trained and reported its training return at least once
        assert row["iterations"] >= 1 and row["best_return"] is not None, row
        # its times were measured (how long they are is the bench's to show, not a test's)
        assert row["first_result_s"] is not None and row["first_result_s"] > 0, row
        assert row["s_per_1k_steps"] is None or row["s_per_1k_steps"] > 0, row
        if row["wall_s"] is not None:  # reached: the result that got there, after the first
            assert row["env_steps"] > 0 and row["best_return"] >= row["target"], row
            assert row["first_result_s"] <= row["wall_s"], row
    assert "seconds to a training return" in result.stdout
    # the runner's JSON record holds the same results as a table, one row per --out row
    report = json.loads(record.read_text())
    assert report["benchmark"] == "train" and report["argv"][:2] == ["train", "--quick"]
    (table,) = report["tables"]
    assert table["title"].startswith("seconds to a training return")
    assert len(table["rows"]) == len(rows)
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    contender = table["columns"].index("contender")
    assert {row[contender] for row in table["rows"]} == expected
    assert not list(tmp_path.glob("outputs")), "the bench leaves no run dirs behind"
