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


def test_the_time_left_counts_each_kind_of_item_at_its_own_cost(monkeypatch) -> None:
    """Two rules at 2 s an episode and a reference at 60 s, on 2 workers (so 2 episode-seconds
    a second): 10 episodes each. By hand, after the rules' 20 and 2 of the reference's: 40 +
    120 = 160 s of work done in 80 s, 8 reference episodes of 60 s left: 480 s of work, 240 s.
    The clock starts at 0 (`_clocked`): the machine's own, hours after boot, would round the
    wall time of `started + 80` (240 s would come out 239.99999999999963)."""
    _clocked(monkeypatch, 1.0)
    pace = mconsole.Pace(["greedy", "a3", "oracle"], [10, 10, 10])
    assert pace.text(now=pace.started + 5) == ""  # nothing timed: nothing said
    for _ in range(10):
        pace.done(0, 2.0)
    # greedy timed, a3 and oracle not: the time left of what is timed, and who is not
    assert pace.seconds_left(now=pace.started + 10) == (0.0, ["a3", "oracle"])
    assert pace.text(now=pace.started + 10) == "a3, oracle not timed yet"
    for _ in range(5):
        pace.done(1, 2.0)
    # 30 s of work in 15 s; a3's 5 left: 10 s of work, 5 s
    assert pace.text(now=pace.started + 15) == "about 0:05 left, more for oracle (not timed yet)"
    for _ in range(5):
        pace.done(1, 2.0)
    pace.done(2, 60.0)
    pace.done(2, 60.0)
    assert pace.seconds_left(now=pace.started + 80) == (240.0, [])
    assert pace.text(now=pace.started + 80) == "about 4:00 left"


def test_a_log_says_the_time_left_the_work_tells(monkeypatch) -> None:
    out = io.StringIO()
    _clocked(monkeypatch, 70.0)  # an item in over a minute: every item reported
    with mconsole.paced_progress(Console(file=out, width=200)) as bar:
        task = bar.add_task("3 episodes", total=3, left="")
        bar.update(task, left="about 9:00 left")
        bar.advance(task)  # its own count would say 2:20
        bar.update(task, left="")
        bar.advance(task)  # nothing told: nothing said
        bar.advance(task)
    assert out.getvalue().splitlines() == [
        "3 episodes: 1/3 (33%), 1:10 so far, about 9:00 left",
        "3 episodes: 2/3 (67%), 2:20 so far",
        "3 episodes: 3/3 (100%), 3:30 so far",
    ]


def test_many_untimed_kinds_are_counted_past_three(monkeypatch) -> None:
    _clocked(monkeypatch, 1.0)
    pace = mconsole.Pace([f"greedy on layout_{i}" for i in range(6)], [1] * 6)
    pace.done(0, 1.0)
    assert pace.text(now=pace.started + 1) == (
        "greedy on layout_1, greedy on layout_2, greedy on layout_3 and 2 more not timed yet"
    )
