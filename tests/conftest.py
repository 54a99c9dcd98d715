"""Shared test helpers: run the real `mobrl` CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


def assert_plays_beside_greedy(run_dir: Path, out: Path) -> None:
    """`mobrl evaluate` of a run's checkpoint in a fresh process: 2 episodes of the trained
    policy and of greedy, both in its episodes.csv."""
    import pandas as pd

    done = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "2", "--baselines", "greedy",
        "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    episodes = pd.read_csv(out / "episodes.csv")
    assert sorted(set(episodes["policy"])) == ["greedy", "trained"]


@contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (e.g. "64k") mounted at `folder` (skips where mounting is refused)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def mobrl_cli():
    return run_mobrl


def ray_process_count() -> int:
    """How many core processes (GCS servers, raylets) of Ray clusters this test process or
    its children started run (those of their Ray temp dir, `pytest_configure`'s: a Ray the
    machine runs for something else, or another pytest-xdist worker's, is not counted)."""
    mine = os.environ["RAY_TMPDIR"].encode()
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            parts = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if parts[0].endswith((b"gcs_server", b"raylet")):
            count += any(mine in part for part in parts)
    return count


#: the fast tier: in-process tests of seconds; the CLI tier (`mobrl` processes, no Ray) and
#: the e2e tier (real Ray and RLlib) follow it (pyproject's testpaths keep that order)
FAST_TIER = "tests/unit/"
_session: pytest.Session | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--presets",
        metavar="PATTERN",
        default=None,
        help="also train every preset with an expected level whose name matches PATTERN "
        "(fnmatch, e.g. 'dqn/*' or '*/uma19_energy/*'; 'all': every one) with its own command "
        "and check that it reaches it (tests/e2e/test_preset_expectations.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Ray's files (sessions, sockets, the address a local `ray start` leaves) in a temp dir
    of this process's own, which every `mobrl` process a test runs inherits: the tests of
    two pytest-xdist workers start Ray side by side without joining or counting each other's
    clusters. Short, under /tmp: Ray's socket paths must stay under 108 characters."""
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix=f"mobrl-ray-{worker}-", dir="/tmp")
    # Ray starts its workers (a Tune trial, its env runners) at niceness 15, every other
    # process a test starts runs at 0: beside other tests' processes a run on Ray got what
    # they left (appo/cartpole's learner and env runner 18-22 % of a core each, 245 env steps
    # a second against 2,600 alone; 655 s in a suite run, 150 s alone). At 0 the tests share
    # the cores evenly
    os.environ.setdefault("RAY_worker_niceness", "0")


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    shutil.rmtree(os.environ.get("RAY_TMPDIR", "/nonexistent"), ignore_errors=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    global _session
    _session = session


#: pytest-xdist's `loadscope` work units (a module, or a class of one) that take minutes each,
#: longest first. They start right after the fast tier, before every other unit, so that
#: none is left running alone at the end while the other worker idles (longest processing
#: time first). Comments: each unit's longest test in a whole suite run on 2 cores.
LONGEST_FIRST = (
    "tests/e2e/test_preset_expectations.py::TestAPPO",  # appo/cartpole 273 s
    "tests/e2e/test_preset_expectations.py::TestDQN",  # dqn/cartpole 223 s
    "tests/e2e/test_preset_expectations.py::TestIMPALA",  # impala/cartpole 212 s
    "tests/e2e/test_preset_expectations.py",  # ppo/small/ma_imitate 183 s
    "tests/cli/test_bad_input.py",  # its fixture's setup 137 s
    "tests/e2e/test_tune.py",  # resume after SIGKILL 134 s
)


def _scope(nodeid: str) -> str:
    """The `loadscope` unit of a test (pytest-xdist's own split)."""
    return nodeid.rsplit("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier first (its failures stop the run in minutes), then the units of
    `LONGEST_FIRST`, then the rest in collection order; pyproject's addopts keep xdist from
    reordering units by their number of tests (`--no-loadscope-reorder`)."""
    rank = {scope: i for i, scope in enumerate(LONGEST_FIRST)}
    items.sort(
        key=lambda item: (
            not item.nodeid.startswith(FAST_TIER),
            rank.get(_scope(item.nodeid), len(rank)),
        )
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failure in the fast tier stops the run there: a broken build fails in minutes, not
    after the half hour of the slower tiers."""
    if report.failed and report.nodeid.startswith(FAST_TIER) and _session is not None:
        _session.shouldstop = f"a fast-tier test failed ({report.nodeid}); fix it first"
