"""Writing results safely: a writable-path check before work starts, and atomic writes (a
reader sees the old file or the whole new one, never half of it, even after a crash)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError


def _can_create_file(folder: Path) -> bool:
    # os.access says yes to root everywhere, even on read-only mounts: try for real
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_writable(path: Path, what: str, example: str = "./results") -> None:
    """Fail early (before Ray starts) when results could not be written to `path`."""
    probe = Path(path).expanduser().absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not _can_create_file(probe):
        raise UserError(
            f"{what} '{path}' is not writable ({probe} is not a writable directory). "
            f"Choose another directory, e.g. {what}={example}."
        )


#: write errors that are the machine's state, not a bug: one line, not a traceback
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES}


@contextmanager
def atomic_writer(path: Path, binary: bool = False) -> Iterator[Any]:
    """A text file (`binary`: a bytes file) to write `path` through: a temporary file of this
    process in the same folder, synced and renamed into place on success, removed on failure,
    so readers (and concurrent writers) see the old file or the whole new one. A full disk
    leaves no temporary file behind and is a one-line `UserError`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") if binary else open(tmp, "w", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise disk_error(path, err) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically (see `atomic_writer`)."""
    with atomic_writer(path) as f:
        f.write(text)
    return Path(path)


def disk_error(path: Path, err: OSError) -> Exception:
    """A full or read-only disk as one line; other errors as they are."""
    if err.errno not in _DISK_ERRORS:
        return err
    return UserError(
        f"cannot write {path}: {err.strerror}. Nothing half-written was left there; "
        "free space (or choose another --output / run.storage_path) and run again."
    )


def _hold(lock: Path) -> int | None:
    """An open descriptor of `lock` holding its kernel lock, or None while another command
    holds it. The kernel drops a lock when its process ends, however it ends, so a claim left
    by a killed command is free again, and of commands racing for it exactly one wins."""
    while True:
        fd = os.open(lock, os.O_CREAT | os.O_WRONLY, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as err:
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                os.close(fd)
                raise
            return fd  # a file system without locks: the claim file alone, as a sign
        try:
            now = os.stat(lock)
        except FileNotFoundError:
            now = None
        held = os.fstat(fd)
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            return fd
        os.close(fd)  # its holder released and removed it as we opened it: the next one


def _holder(lock: Path) -> str:
    try:
        return f"pid {int(lock.read_text().strip())}"
    except (OSError, ValueError):
        return f"pid in {lock}"


@contextmanager
def claimed(folder: Path, what: str = "--output") -> Iterator[Path]:
    """Claim `folder` for one command's results: made if missing, and refused (one line) while
    another mobrl command holds it. On failure, a folder this claim made is removed again if
    it stayed empty, so a failed command leaves nothing behind."""
    folder = Path(folder).absolute()
    existing = folder
    while not existing.exists():  # the folders this claim makes: up to the first that exists
        existing = existing.parent
    lock = folder / ".mobrl-writing"
    fd: int | None = None

    def release() -> None:
        if fd is not None:
            lock.unlink(missing_ok=True)  # while still held: a newcomer opens a new file
            os.close(fd)
        made = folder
        while made != existing and made.is_dir() and not any(made.iterdir()):
            made.rmdir()
            made = made.parent

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = _hold(lock)
    except OSError as err:
        release()
        raise disk_error(folder, err) from None
    if fd is None:
        raise UserError(
            f"{what} '{folder}' is being written by another mobrl command ({_holder(lock)}). "
            f"Choose another {what}, or wait until that command ends."
        )
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())  # who holds it, for a person to check
    except OSError:
        pass  # a full disk still holds the (empty) claim; the results will say the rest
    try:
        yield folder
    except BaseException:
        release()
        raise
    lock.unlink(missing_ok=True)
    os.close(fd)


def atomic_write_json(path: Path, data: Any) -> Path:
    """`data` as indented JSON (values JSON lacks, like paths, as strings), atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def atomic_write_csv(path: Path, frame: Any) -> Path:
    """A pandas DataFrame as CSV without its index, atomically."""
    return atomic_write_text(path, frame.to_csv(index=False))
