"""Progress in logs: plain lines where a live bar would print nothing."""

from __future__ import annotations

import io

from rich.console import Console

from mobrl.core import console as mconsole


def _clocked(monkeypatch, step: float) -> None:
    """time.monotonic advancing by `step` seconds per call."""
    now = iter(range(10_000))
    monkeypatch.setattr(mconsole.time, "monotonic", lambda: next(now) * step)


def test_a_log_gets_lines_at_tenths_with_the_time_left(monkeypatch) -> None:
    out = io.StringIO()
    log = Console(file=out, width=200)
    assert not log.is_terminal
    _clocked(monkeypatch, 3.0)  # 3 s per call: each item takes 3 s
    with mconsole.progress(log) as bar:
        task = bar.add_task("40 episodes (greedy)", total=40)
        for _ in range(40):
            bar.advance(task)
    lines = out.getvalue().splitlines()
    # one line per tenth (4 items, 12 s apart), the last one at the end
    assert len(lines) == 10, lines
    assert lines[0] == "40 episodes (greedy): 4/40 (10%), 0:12 so far, about 1:48 left"
    assert lines[-1] == "40 episodes (greedy): 40/40 (100%), 2:00 so far"


def test_quick_tenths_wait_and_slow_work_still_reports(monkeypatch) -> None:
    out = io.StringIO()
    _clocked(monkeypatch, 0.04)  # all of it in 4 s: the last line only
    bar = mconsole.LogProgress(Console(file=out, width=200), every_s=60.0)
    task = bar.add_task("quick", total=100)
    for _ in range(100):
        bar.advance(task)
    assert out.getvalue().splitlines() == ["quick: 100/100 (100%), 0:04 so far"]
    out.truncate(0)
    out.seek(0)
    _clocked(monkeypatch, 70.0)  # one item in over a minute: every item reported
    bar = mconsole.LogProgress(Console(file=out, width=200), every_s=60.0)
    task = bar.add_task("frames", total=None)
    bar.advance(task)
    bar.update(task, description="encoding", completed=0, total=3)
    bar.advance(task)
    assert out.getvalue().splitlines() == [
        "frames: 1 done, 1:10 so far",
        "encoding: 1/3 (33%), 1:10 so far, about 2:20 left",
    ]


def test_work_continued_counts_from_what_was_done_before(monkeypatch) -> None:
    """A task started with part of it done (an evaluation continued): its count goes on from
    there, and the time left comes from the pace of what is done now."""
    out = io.StringIO()
    _clocked(monkeypatch, 3.0)
    bar = mconsole.LogProgress(Console(file=out, width=200), every_s=60.0)
    task = bar.add_task("40 episodes", total=40, completed=30)
    for _ in range(10):
        bar.advance(task)
    lines = out.getvalue().splitlines()
    # 3 s per item; the first line once 5 s have passed: 2 done here in 6 s, 8 left
    assert lines[0] == "40 episodes: 32/40 (80%), 0:06 so far, about 0:24 left"
    assert lines[-1] == "40 episodes: 40/40 (100%), 0:30 so far"
