"""Free space for a training run: refused before Ray starts when the storage is already too
full, and stopped resumably (its state saved, like Ctrl-C) when it fills up during training,
before a checkpoint or Tune's state is cut. Ray's per-second tracebacks of failed writes to a
full disk are replaced by mobrl's one line."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

from ray.tune import Callback

from mobrl.core.errors import UserError

MB = 2**20
#: disk errors that mean "no room", not a bug
_FULL = {errno.ENOSPC, errno.EDQUOT}
#: Ray loggers that report failed writes of the experiment's files (every second while full)
_WRITERS = ("ray.train._internal.syncer", "ray.tune.execution.experiment_state", "ray.tune.tune")


class _Full:
    """What the guard saw: set once the storage ran out of room (from any thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reason: str | None = None

    def set(self, reason: str) -> bool:
        with self.lock:
            first = self.reason is None
            self.reason = self.reason or reason
            return first


FULL = _Full()


def free_bytes(path: Path) -> int:
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_free(path: Path, min_free_mb: int) -> None:
    """Refuse a run (before Ray starts) whose storage has less than `min_free_mb` free."""
    free = free_bytes(path)
    if free < min_free_mb * MB:
        raise UserError(
            f"run.storage_path '{path}' has {free / MB:.1f} MB free, less than the "
            f"{min_free_mb} MB a run keeps free for its checkpoints, Tune's state and logs "
            "(run.checkpoint.min_free_mb). Free space, or choose another run.storage_path."
        )


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def is_full(err: BaseException | None) -> bool:
    while err is not None:
        if isinstance(err, OSError) and (
            err.errno in _FULL or "No space left on device" in str(err)
        ):
            return True
        err = err.__cause__ or err.__context__
    return False


class _DropFullDiskErrors(logging.Filter):
    """Ray's failed writes on a full disk: recorded for the guard, not printed."""

    def filter(self, record: logging.LogRecord) -> bool:
        err = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        if is_full(err) or "No space left on device" in message:
            FULL.set("a write of Tune's files failed: no space left on device")
            return False
        # the stop the guard asked for is explained by mobrl's line, not Tune's Ctrl-C notice
        return not (FULL.reason is not None and "Stop signal received" in message)


_FILTER = _DropFullDiskErrors()


class DiskGuard(Callback):
    """Stops the experiment as Ctrl-C does (state saved, trials resumable with `--resume`)
    when the storage has less room than the next checkpoint and state save need plus
    `min_free_mb`, or once a write there failed for lack of room."""

    def __init__(self, storage: Path, experiment_dir: Path, min_free_mb: int) -> None:
        self.storage, self.experiment_dir = Path(storage), Path(experiment_dir)
        self.reserve = min_free_mb * MB
        self.checkpoint_bytes = 0
        self.checked = 0.0
        self.stopping = False

    def __getstate__(self) -> dict[str, Any]:
        return {"args": (self.storage, self.experiment_dir, self.reserve // MB)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(*state["args"])  # type: ignore[misc]

    def setup(self, **info: Any) -> None:
        for name in _WRITERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)

    def need(self) -> int:
        """Bytes the next checkpoint and a save of Tune's state take, plus the reserve."""
        state = sum(_size(p) for p in self.experiment_dir.glob("*.json"))
        return 2 * self.checkpoint_bytes + 2 * state + self.reserve

    def on_checkpoint(self, iteration: int, trials: list, trial: Any, checkpoint: Any, **info):
        path = Path(getattr(checkpoint, "path", "") or "")
        if path.is_dir():
            self.checkpoint_bytes = max(self.checkpoint_bytes, _size(path))
        self.check()

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info):
        # before Tune schedules this result's checkpoint and the next iteration: at most one
        # more checkpoint and the final state save are written after a stop is asked for
        self.check()

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        now = time.monotonic()
        if now - self.checked >= 1.0:  # between results too (a long iteration, Tune's saves)
            self.check()

    def check(self) -> None:
        """Stop the experiment when the storage has less room than `need`, or a write there
        failed for lack of room."""
        self.checked = time.monotonic()
        if self.stopping:
            return
        free = free_bytes(self.storage)
        need = self.need()
        if free < need:
            FULL.set(
                f"{free / MB:.1f} MB free, and the next checkpoint and state save need about "
                f"{need / MB:.1f} MB with the {self.reserve // MB} MB kept free "
                "(run.checkpoint.min_free_mb)"
            )
        if FULL.reason is not None:
            self.stopping = True
            os.kill(os.getpid(), signal.SIGINT)  # Tune's graceful stop: state saved, resumable


def full_disk_error(storage: Path, run_path: Path, last_checkpoint: Path | None) -> UserError:
    """The one line for a run the guard stopped."""
    kept = f" The last complete checkpoint is {last_checkpoint}." if last_checkpoint else ""
    return UserError(
        f"run.storage_path '{storage}' is full ({FULL.reason}): training stopped with its "
        f"state saved.{kept} Free space, then continue with: mobrl train --resume {run_path}"
    )
