"""The one way mobrl prints: a rich console that is readable on terminals and in log files."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

#: columns of tables written to logs (no terminal to ask): wide enough for a trial table
LOG_WIDTH = 160


def make_console() -> Console:
    """A console for stdout: the terminal's width on a terminal, LOG_WIDTH columns in logs."""
    width = None if sys.stdout.isatty() else LOG_WIDTH
    return Console(highlight=False, soft_wrap=True, width=width)


#: in logs, a long task prints a progress line at least this often while it moves (seconds)
LOG_EVERY_S = 60.0
#: ... and one at each tenth done, if this long has passed since the last line (seconds)
LOG_GAP_S = 5.0


def progress(console: Console, *columns: Any) -> Any:
    """A progress display for long work: rich's live bar on a terminal (gone when done), plain
    lines in logs (`LogProgress`), where a live bar would print nothing."""
    if console.is_terminal:
        from rich.progress import Progress

        return Progress(*columns, console=console, transient=True)
    return LogProgress(console)


def paced_progress(console: Console) -> Any:
    """`progress` for work whose items cost differently by kind: its tasks take a `left`
    field (a `Pace`'s text: `add_task(..., left="")`, `update(task, left=...)`) shown in
    place of a time left that assumes every item costs the same."""
    if not console.is_terminal:
        return LogProgress(console)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[left]}"),
    )
    return progress(console, *columns)


class Pace:
    """The time left of work whose items cost differently by kind (an evaluation's policies:
    a rule plays a city episode in 2 s, the exact reference in over a minute): each kind's
    mean measured cost per item times its items still to do, over the pace of work of this
    run (item-seconds done per second: how many items run side by side). A kind with items
    still to do and none timed yet is named, not guessed. Not thread-safe: `done` is called
    under the caller's lock."""

    def __init__(self, kinds: Sequence[str], todo: Sequence[int]) -> None:
        self.kinds, self.todo = list(kinds), list(todo)
        self.spent = [0.0] * len(self.kinds)
        self.timed = [0] * len(self.kinds)
        self.started = time.monotonic()

    def done(self, kind: int, seconds: float) -> None:
        """An item of `kind` took `seconds` (where it ran)."""
        self.todo[kind] -= 1
        self.spent[kind] += seconds
        self.timed[kind] += 1

    def seconds_left(self, now: float | None = None) -> tuple[float | None, list[str]]:
        """The time left of the timed kinds (None before any item is done), and the kinds
        still to do that are not timed yet."""
        wall = (time.monotonic() if now is None else now) - self.started
        work = sum(self.spent)
        untimed = [k for k, n, t in zip(self.kinds, self.todo, self.timed) if n > 0 and not t]
        untimed = list(dict.fromkeys(untimed))
        if work <= 0 or wall <= 0:
            return None, untimed
        rest = sum(n * s / t for n, s, t in zip(self.todo, self.spent, self.timed) if n > 0 and t)
        return rest * wall / work, untimed

    def text(self, now: float | None = None) -> str:
        """`about 1:02:03 left`, with `, more for oracle (not timed yet)` where it applies
        (`oracle not timed yet` where nothing else is left; three named at most)."""
        left, untimed = self.seconds_left(now)
        if left is None:
            return ""
        names = ", ".join(untimed[:3]) + (f" and {len(untimed) - 3} more" if untimed[3:] else "")
        if untimed and left < 1:
            return f"{names} not timed yet"
        more = f", more for {names} (not timed yet)" if untimed else ""
        return f"about {_clock(left)} left{more}"


class _Task:
    def __init__(
        self, description: str, total: float | None, completed: float = 0.0, left: str | None = None
    ) -> None:
        self.description, self.total = description, total
        self.completed = self.base = completed  # base: done before the task started here
        self.started = self.last = time.monotonic()
        self.tenth = 0
        self.left = left  # the time left as the work tells it (a `Pace`), if it does


class LogProgress:
    """The calls mobrl makes of rich's `Progress` (`add_task`, `advance`, `update`) as lines a
    log keeps: one at each tenth of a task done (LOG_GAP_S apart at least), one at least every
    LOG_EVERY_S seconds while it moves and one when it ends, each with the time so far and,
    where the total is known, the time left."""

    def __init__(self, console: Console, every_s: float = LOG_EVERY_S) -> None:
        self.console, self.every_s = console, every_s
        self.tasks: list[_Task] = []

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(
        self,
        description: str,
        total: float | None = None,
        completed: float = 0.0,
        left: str | None = None,
        **_: Any,
    ) -> int:
        self.tasks.append(_Task(description, total, completed, left))
        return len(self.tasks) - 1

    def update(
        self,
        task: int,
        description: str | None = None,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        left: str | None = None,
        **_: Any,
    ) -> None:
        t = self.tasks[task]
        if left is not None:
            t.left = left
        if total is not None:
            t.total = total
        if completed is not None:
            t.completed = completed
        if description is not None and description != t.description:  # a new stage
            t.description, t.tenth, t.base = description, 0, t.completed
            t.started = t.last = time.monotonic()
        if advance:
            self.advance(task, advance)

    def advance(self, task: int, advance: float = 1.0) -> None:
        t = self.tasks[task]
        t.completed += advance
        now = time.monotonic()
        tenth = int(10 * t.completed / t.total) if t.total else 0
        since = now - t.last
        finished = bool(t.total) and t.completed >= t.total
        if finished or since >= self.every_s or (tenth > t.tenth and since >= LOG_GAP_S):
            t.tenth, t.last = max(tenth, t.tenth), now
            self.console.print(self._line(t, now), highlight=False)

    @staticmethod
    def _line(t: _Task, now: float) -> str:
        spent = now - t.started
        if not t.total:
            return f"{t.description}: {t.completed:,.0f} done, {_clock(spent)} so far"
        done, here = t.completed / t.total, t.completed - t.base  # here: since it started
        rest = t.total - t.completed
        if t.left is not None:  # told by the work itself
            left = f", {t.left}" if t.left and rest > 0 else ""
        elif here > 0 and rest > 0:
            left = f", about {_clock(spent * rest / here)} left"
        else:
            left = ""
        return (
            f"{t.description}: {t.completed:,.0f}/{t.total:,.0f} ({done:.0%}), "
            f"{_clock(spent)} so far{left}"
        )


def _clock(seconds: float) -> str:
    """Seconds as h:mm:ss (or m:ss under an hour)."""
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"
