"""Worker processes for evaluation and rendering that work wherever Python runs and stop at
once on Ctrl-C.

The standard library's "spawn" pools start each worker by re-running the user's `__main__`:
a plain script without an `if __name__ == "__main__":` guard would train a second time in
every worker, and `python -` or `python -c` fail. loky's processes start clean (they import
only what the jobs they are sent need), so `mobrl.evaluate(...)` works from a script, a
notebook, standard input or a shell alike.

Ctrl-C reaches every process of the terminal's group. Workers ignore it (SIGINT stays blocked
from their first instruction and is ignored once they run), so the one line that reports the
interrupt comes from the main process, which kills the workers instead of waiting for the
episodes they have queued.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """Hold SIGINT back in this thread while the block runs: processes and threads started
    in it inherit the blocked signal (a worker started here never sees a Ctrl-C, not even
    while it boots); a Ctrl-C pressed meanwhile is delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # not on Windows: the initializer does it
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def process_pool(workers: int) -> Iterator[Any]:
    """A pool of `workers` fresh processes (a loky `ProcessPoolExecutor`). Submit jobs
    inside `sigint_blocked()` (the pool starts its processes on the first submissions). On
    the way out, the pool waits for its jobs; after an error or Ctrl-C it kills its workers
    at once, without waiting for what they have queued."""
    from loky import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts)
    try:
        yield pool
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
