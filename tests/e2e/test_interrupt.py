"""Ctrl-C in every long command, on real processes: SIGINT to the command's whole process
group (as a terminal sends it), an exit within 2 s with code 130, one line on stderr saying
what was stopped and what was kept, no worker left running, nothing half-written."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ray_process_count

pytestmark = pytest.mark.slow

#: the longest a command may take to end after Ctrl-C
LIMIT_S = 2.0


def _as_in_a_terminal() -> None:
    """The child's SIGINT as a terminal's foreground job has it (default, not blocked): a
    suite run in the background of a non-interactive shell (`bash .ci/run &`) would hand its
    ignored SIGINT down, and a command started so is meant to ignore Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _interrupt(
    args: list[str],
    cwd: Path,
    ready: str | None,
    delay: float,
    sig: int = signal.SIGINT,
    until: Callable[[int], bool] | None = None,
) -> tuple:
    """Start `mobrl ARGS`, wait for the stdout line containing `ready` (if given), until
    `until(pid)` holds (if given; a loaded machine may take long to start),
    and `delay` seconds more, then press Ctrl-C (SIGINT to the whole process group, as a
    terminal sends it) or send `sig` to the main process alone (`kill PID`); return (exit
    code, seconds to exit, stderr)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )  # fmt: skip
    try:
        if ready is not None:
            for line in proc.stdout:
                if ready in line:
                    break
            else:
                pytest.fail(f"`mobrl {' '.join(args)}` ended before printing {ready!r}")
        deadline = time.monotonic() + 120
        while until is not None and not until(proc.pid):
            assert proc.poll() is None, f"`mobrl {' '.join(args)}` ended before it was under way"
            assert time.monotonic() < deadline, "not under way after 120 s"
            time.sleep(0.1)
        time.sleep(delay)
        assert proc.poll() is None, f"`mobrl {' '.join(args)}` ended before the signal"
        sent = time.monotonic()
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _assert_none_left(proc.pid)
    return proc.returncode, took, err


def _running(group: int) -> list[str]:
    """The processes of a process group still running (zombies have ended)."""
    alive = subprocess.run(
        ["ps", "-o", "pid=,stat=,cmd=", "-g", str(group)], capture_output=True, text=True
    ).stdout.splitlines()
    return [line for line in alive if line.split()[1][0] != "Z"]


def _assert_none_left(group: int) -> None:
    time.sleep(0.5)
    assert not _running(group), f"processes left running: {_running(group)}"


def _written(path: Path) -> Callable[[int], bool]:
    """`until`: the file `path` holds something, or the dir `path` is made."""
    return lambda _: path.is_dir() or (path.is_file() and path.stat().st_size > 0)


def _workers_up(group: int) -> bool:
    """`until`: the command's worker processes are started."""
    return len(_running(group)) > 1


def _told(code: int, took: float, err: str, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 130, err
    assert took <= LIMIT_S, f"{took:.2f} s to end after Ctrl-C"
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_ctrl_c_ends_every_long_command_at_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    told = _told(
        *_interrupt(
            ["train", "scenario=small", "run=quick", f"hydra.run.dir={run}"],
            tmp_path,
            ready="iter 3",
            delay=0.2,
        ),  # fmt: skip
        "mobrl train --resume",
    )
    assert str(run) in told
    state = json.loads((run / "tune" / "driver-state.json").read_text())
    assert state["status"] == "RUNNING"  # resumable
    assert not list(run.glob("tune/*/.partial-*")), "a half-written checkpoint"
    assert ray_process_count() == 0

    many = tmp_path / "runs"
    for i in range(30):  # enough runs for the report to take a few seconds
        shutil.copytree(run, many / f"run{i}")
    long_ones = {
        "evaluate": ["evaluate", "--checkpoint", "zoo:small", "--episodes", "2000"],
        "matrix": [
            "evaluate", "--checkpoint", "zoo:small", "--scenarios", "small,medium",
            "--episodes", "1000",
        ],
        "baselines": ["baselines", "scenario=small", "--episodes", "2000"],
    }  # fmt: skip
    for name, args in long_ones.items():
        out = tmp_path / name
        # the first episode in the journal; the matrix keeps none, but its workers run
        until = _workers_up if name == "matrix" else _written(out / ".episodes.journal")
        code, took, err = _interrupt(
            [*args, "--output", str(out)], tmp_path, None, 1.0, until=until
        )
        if name == "matrix":  # written whole or not at all
            _told(code, took, err, "evaluation stopped after", "nothing was written")
            assert not out.exists(), f"{name} left {list(out.rglob('*'))}"
        else:  # the episodes played so far kept for the same command to continue
            _told(code, took, err, "evaluation stopped after", "run the same command")
            left = sorted(p.name for p in out.iterdir())
            assert left == [".episodes.journal"], f"{name} left {left}"

    video = tmp_path / "v.mp4"
    code, took, err = _interrupt(
        ["render", "--checkpoint", "zoo:small", "--episodes", "40", "--video", str(video)],
        tmp_path, ready="zoo policy", delay=3.0,
    )  # fmt: skip
    _told(code, took, err, "rendering stopped", "was not written")
    assert not list(tmp_path.glob("*.mp4")) and not list(tmp_path.glob(".v.partial*"))

    drawn = tmp_path / "report"  # made once the runs are read, before the figures
    code, took, err = _interrupt(
        ["report", str(many), "--out", str(drawn)], tmp_path, None, 0.5, until=_written(drawn)
    )
    _told(code, took, err, "report stopped", "were not written")
    assert not (tmp_path / "report" / "report.html").exists()


def test_a_sigterm_to_the_command_alone_leaves_no_worker_running(tmp_path: Path) -> None:
    """`kill PID` (or a scheduler's time limit) reaches the main process only, not its worker
    processes: it ends with code 143 at once, kills them and writes no results, only the
    journal of the episodes played, from which the same command continues."""
    out = tmp_path / "out"
    args = ["evaluate", "--checkpoint", "zoo:small", "--episodes", "2000", "--output", str(out)]
    played = _written(out / ".episodes.journal")  # the workers are playing episodes
    code, took, err = _interrupt(args, tmp_path, None, 1.0, sig=signal.SIGTERM, until=played)
    assert code == 143, err
    assert took <= LIMIT_S, f"{took:.2f} s to end after SIGTERM"
    assert sorted(p.name for p in out.iterdir()) == [".episodes.journal"]
