"""Runs under Ray Tune start one at a time on this machine, each in a second of its own.

Tune stages a run's files in the Ray session's `artifacts/<the second it started>/<experiment
name>/` before it syncs them to the run dir, and every mobrl run names its experiment `tune`
(the run dir's `tune/`). Two runs on one Ray that start within the same second (the jobs of a
joblib multirun start together) would stage into one folder, and each would sync the other's
trials into its own run dir. So a run starts Tune inside `one_at_a_time()`: it waits until the
run that started before it is under way and a new second has begun; `Started`, one of the
run's Tune callbacks, lets the next run go once Tune has named its folder (Tune sets its
callbacks up after that)."""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ray.tune import Callback

try:
    import fcntl
except ImportError:  # no flock here: runs start as Tune starts them
    fcntl = None  # type: ignore[assignment]

#: the machine's lock, holding the time the last run holding it let go
LOCK = Path(tempfile.gettempdir()) / "mobrl-tune-start.lock"

#: the lock's open file while this process holds it
_held: list[IO[str]] = []


def _let_go(lock: IO[str] | None = None) -> None:
    """Write the time and release `lock` if it is still held (None: the one this process
    holds, if any)."""
    if lock is None and _held:
        lock = _held[0]
    if lock is None or lock not in _held:
        return
    _held.remove(lock)
    lock.seek(0)
    lock.truncate()
    lock.write(repr(time.time()))
    lock.flush()
    fcntl.flock(lock, fcntl.LOCK_UN)
    lock.close()


@contextmanager
def one_at_a_time() -> Iterator[None]:
    """Hold the machine's lock from a second after the last start until Tune has named this
    run's staging folder (`Started`), or until the block ends."""
    lock = None
    if fcntl is not None:
        try:
            lock = open(LOCK, "a+")  # noqa: SIM115 (held past this block, closed by _let_go)
        except OSError:  # another user's lock file: as before
            lock = None
    if lock is None:
        yield
        return
    fcntl.flock(lock, fcntl.LOCK_EX)
    lock.seek(0)
    try:
        last = float(lock.read() or 0.0)
    except ValueError:
        last = 0.0
    wait = math.floor(last) + 1 - time.time()
    if wait > 0:
        time.sleep(wait)
    _held.append(lock)
    try:
        yield
    finally:
        _let_go(lock)  # unless `Started` let it go


class Started(Callback):
    """Lets the next run start once Tune has set this run's experiment up (its staging folder
    named after the second it started)."""

    def setup(self, **info: Any) -> None:
        _let_go()
