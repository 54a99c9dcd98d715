"""The one way mobrl prints: a rich console that is readable on terminals and in log files."""

from __future__ import annotations

import sys
import time
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


class _Task:
    def __init__(self, description: str, total: float | None, completed: float = 0.0) -> None:
        self.description, self.total = description, total
        self.completed = self.base = completed  # base: done before the task started here
        self.started = self.last = time.monotonic()
        self.tenth = 0


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
        self, description: str, total: float | None = None, completed: float = 0.0, **_: Any
    ) -> int:
        self.tasks.append(_Task(description, total, completed))
        return len(self.tasks) - 1

    def update(
        self,
        task: int,
        description: str | None = None,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        **_: Any,
    ) -> None:
        t = self.tasks[task]
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
        left = f", about {_clock(spent * rest / here)} left" if here > 0 and rest > 0 else ""
        return (
            f"{t.description}: {t.completed:,.0f}/{t.total:,.0f} ({done:.0%}), "
            f"{_clock(spent)} so far{left}"
        )


def _clock(seconds: float) -> str:
    """Seconds as h:mm:ss (or m:ss under an hour)."""
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"
