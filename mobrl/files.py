"""Writing results safely: a writable-path check before work starts, and atomic writes (a
reader sees the old file or the whole new one, never half of it, even after a crash)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mobrl.errors import UserError


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


def atomic_write_text(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file in the same folder and a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def atomic_write_json(path: Path, data: Any) -> Path:
    """`data` as indented JSON (values JSON lacks, like paths, as strings), atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def atomic_write_csv(path: Path, frame: Any) -> Path:
    """A pandas DataFrame as CSV without its index, atomically."""
    return atomic_write_text(path, frame.to_csv(index=False))
