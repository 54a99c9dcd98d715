"""Shared test helpers: run the real `mobrl` CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_mobrl(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run `python -m mobrl ARGS` like a user would, capturing output."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mobrl", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def mobrl_cli():
    return run_mobrl


def ray_process_count() -> int:
    """How many Ray clusters' core processes (GCS servers, raylets) run on this machine."""
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            first = cmdline.read_bytes().split(b"\0")[0]
        except OSError:
            continue
        count += first.endswith((b"gcs_server", b"raylet"))
    return count
