"""Leave the process as soon as a command is done: the interpreter's own teardown (freeing
torch's, RLlib's and Ray's modules object by object) takes about a second after a training
run and writes nothing a user needs."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_code(code: object) -> int:
    """The process exit code for `SystemExit(code)`, as the interpreter maps it (a message
    is printed to stderr and exits 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_and_exit(main: Callable[[], object]) -> NoReturn:
    """Run `main`, then do what a normal exit does that matters — run the `atexit` handlers
    (Ray's shutdown, logging's flush), flush stdout and stderr — and end the process without
    the teardown. While other non-daemon threads run, and for an exception other than
    `SystemExit` (a bug's traceback, Ctrl-C), the exit is the normal one."""
    try:
        main()
        code = 0
    except SystemExit as done:
        code = exit_code(done.code)
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    current = threading.current_thread()
    running = [t for t in threading.enumerate() if t is not current and not t.daemon]
    if run_exitfuncs is None or running or sys.getprofile() or sys.gettrace():
        # the normal, slower exit: for an interpreter without it; for threads still running
        # (worker pools such as joblib's stop theirs only when the interpreter tells them it
        # exits, before it waits for them); for a profiler, debugger or coverage tool that
        # writes its results after the program
        raise SystemExit(code)
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`mobrl zoo list | head`)
            pass
    os._exit(code)
