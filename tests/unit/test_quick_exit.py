"""The quick exit after a command keeps what a normal exit does that a user can see: exit
codes, printed output, running threads' work, atexit handlers (Ray's shutdown among them)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "cmd.py"
    script.write_text(
        "import atexit, sys, threading, time\n"
        "from pathlib import Path\n"
        "from mobrl.cli.quick_exit import run_and_exit\n"
        f"OUT = Path({str(tmp_path)!r})\n" + textwrap.dedent(body)
    )
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)


def test_atexit_and_output_are_kept_the_code_is_the_commands_and_teardown_skipped(
    tmp_path: Path,
) -> None:
    done = _run(
        tmp_path,
        """
        class Teardown:
            def __del__(self):
                print("interpreter teardown")

        KEEP = Teardown()

        def main():
            atexit.register(lambda: (OUT / "atexit.txt").write_text("ran"))
            sys.stdout.write("partial line without a newline")
            raise SystemExit(3)

        run_and_exit(main)
        """,
    )
    assert done.returncode == 3
    assert done.stdout == "partial line without a newline"  # no teardown ran
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_running_threads_and_worker_pools_get_the_normal_exit(tmp_path: Path) -> None:
    """A thread's work is finished; a pool thread that stops only when the interpreter says
    it exits (as joblib's and concurrent.futures' do) is told so, instead of waited on."""
    done = _run(
        tmp_path,
        """
        def late_write():
            time.sleep(0.3)
            (OUT / "thread.txt").write_text("done")

        def pool_manager(stop):
            stop.wait()
            (OUT / "pool.txt").write_text("stopped")

        def main():
            threading.Thread(target=late_write).start()
            stop = threading.Event()
            threading.Thread(target=pool_manager, args=(stop,)).start()
            threading._register_atexit(stop.set)
            raise SystemExit(4)

        run_and_exit(main)
        """,
    )
    assert done.returncode == 4
    assert (tmp_path / "thread.txt").read_text() == "done"
    assert (tmp_path / "pool.txt").read_text() == "stopped"


def test_a_returning_command_exits_0_and_a_message_exits_1(tmp_path: Path) -> None:
    assert _run(tmp_path, "run_and_exit(lambda: print('ok'))").returncode == 0
    done = _run(tmp_path, "def main():\n    raise SystemExit('why it stopped')\nrun_and_exit(main)")
    assert (done.returncode, done.stderr.strip()) == (1, "why it stopped")


def test_a_bug_still_ends_with_its_traceback(tmp_path: Path) -> None:
    done = _run(tmp_path, "def main():\n    raise KeyError('bug')\nrun_and_exit(main)")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "KeyError: 'bug'" in done.stderr


def test_under_a_profiler_the_exit_is_the_normal_one(tmp_path: Path) -> None:
    script = tmp_path / "cmd.py"
    script.write_text("from mobrl.cli.quick_exit import run_and_exit\nrun_and_exit(lambda: 0)\n")
    stats = tmp_path / "cmd.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(stats), str(script)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and stats.stat().st_size > 0
