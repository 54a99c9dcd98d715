"""Runs start Tune one at a time, each in a second of its own (`mobrl.training.tune_start`):
Tune stages a run's files under the second it started and the experiment's name, the same
`tune` for every run, so two runs on one Ray starting in one second would share a folder."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest

from mobrl.training import tune_start


def test_runs_starting_together_start_in_seconds_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tune_start, "LOCK", tmp_path / "lock")
    started: list[tuple[float, float]] = []  # (entered, let go)
    gate = threading.Barrier(3)

    def run() -> None:
        gate.wait()  # the three at once, as a joblib multirun's jobs
        with tune_start.one_at_a_time():
            entered = time.time()
            time.sleep(0.05)  # Tune naming its folder
            tune_start.Started().setup(stop=None, num_samples=1)
            started.append((entered, time.time()))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(started) == 3
    started.sort()
    seconds = [math.floor(entered) for entered, _ in started]
    assert len(set(seconds)) == 3, started
    for (_, let_go), (entered, _) in zip(started, started[1:]):
        assert entered > let_go  # one at a time, the next in a later second
        assert math.floor(entered) > math.floor(let_go)


def test_a_run_that_fails_before_tune_is_set_up_lets_the_next_one_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tune_start, "LOCK", tmp_path / "lock")
    with pytest.raises(RuntimeError), tune_start.one_at_a_time():
        raise RuntimeError("the cluster went away")
    done = threading.Event()

    def run() -> None:
        with tune_start.one_at_a_time():
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(timeout=5)
