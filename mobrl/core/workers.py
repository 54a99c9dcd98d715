"""Worker processes for evaluation and rendering that work wherever Python runs and stop at
once on Ctrl-C.

The standard library's "spawn" pools start each worker by re-running the user's `__main__`:
a plain script without an `if __name__ == "__main__":` guard would train a second time in
every worker, and `python -` or `python -c` fail. loky's processes start clean (they import
only what the jobs they are sent need), so `mobrl.evaluate(...)` works from a script, a
notebook, standard input or a shell alike.

Ctrl-C reaches every process of the terminal's group. Workers never see it (they start while
this process holds it back, and their initializer ignores it), so the one line that reports
the interrupt comes from the main process, which kills the workers instead of waiting for the
episodes they have queued.

A SIGTERM to the main process alone (`kill PID`, a job scheduler's time limit) ends it the same
way, with exit code 143: without that the workers, which do not share its fate, would play on.

loky replaces a worker whose memory has grown by 300 MB since its first job, after the job it
is on (a worker that played many city-scale episodes can reach that), and says so with a
warning that names its own source file; the replacement loses no episode, so mobrl keeps that
warning out of its output.
"""

from __future__ import annotations

import logging
import signal
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_trackers() -> None:
    """Start the resource trackers a loky pool uses (loky's and the standard library's) before
    Ctrl-C is held back: the standard library's unblocks SIGINT once it has started its own
    process (Python 3.11), which would let the workers started after it boot with SIGINT
    open and die of a Ctrl-C mid-import, each with a traceback on the terminal. Started
    already, neither starts again, so the hold lasts while the workers boot."""
    from multiprocessing import resource_tracker

    from loky.backend import resource_tracker as loky_tracker

    resource_tracker.ensure_running()
    loky_tracker.ensure_running()


@contextmanager
def sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back in this process while the block starts worker processes: SIGINT is
    blocked, a blocked signal stays blocked across a child's fork and exec, so a worker
    started here never sees a Ctrl-C, not even while it boots (its initializer then ignores
    it for good); a Ctrl-C pressed meanwhile stays pending here and arrives as the block ends,
    so it is never lost, however long the workers take to start on a busy machine. Only the
    main thread runs Python's signal handlers; elsewhere the workers' initializer alone
    ignores it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class Pool:
    """A loky pool whose first submission (which starts the worker processes) happens while
    this process holds Ctrl-C back, so the workers are born without it."""

    def __init__(self, pool: Any) -> None:
        self.pool, self.started = pool, False

    def submit(self, fn: Any, *args: Any) -> Any:
        if self.started:
            return self.pool.submit(fn, *args)
        with sigint_held():
            future = self.pool.submit(fn, *args)
        self.started = True
        return future


#: exit code of a process ended by SIGTERM (128 + 15, as a shell reports it)
TERMINATED_EXIT = 128 + signal.SIGTERM


@contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """A SIGTERM to this process raises SystemExit(143) in the main thread while the block
    runs, so the pool's way out on an error kills the workers (default: this process dies at
    once and the workers go on with their queue)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(TERMINATED_EXIT)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def process_pool(workers: int) -> Iterator[Pool]:
    """A pool of `workers` fresh processes (loky's `ProcessPoolExecutor`, started by the
    first `submit`). On the way out, it waits for its jobs; after an error or Ctrl-C it kills
    its workers at once, without waiting for what they have queued (a SIGTERM too)."""
    from loky import ProcessPoolExecutor

    # raised in the pool's own thread, so a filter around the block would not reach it
    warnings.filterwarnings("ignore", message="A worker was restarted", category=UserWarning)
    _start_trackers()
    with sigint_held():  # what the pool starts now (its helper processes) never sees it
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts)
    try:
        with _terminate_as_exit():
            yield Pool(pool)
    except BaseException:
        # kill the workers and wait for the pool's own thread to settle every future; a
        # future already cancelled makes that thread log a traceback for a result nobody
        # waits for (it reports through concurrent.futures' logger), so that log is held
        log = logging.getLogger("concurrent.futures")

        def quiet(record: logging.LogRecord) -> bool:
            return False

        log.addFilter(quiet)
        try:
            pool.shutdown(wait=True, kill_workers=True)
        finally:
            log.removeFilter(quiet)
        raise
    pool.shutdown(wait=True)
