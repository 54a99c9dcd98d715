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
    """Run `main`, then do what a normal exit does that matters — wait for running
    non-daemon threads, run the `atexit` handlers (Ray's shutdown, logging's flush, worker
    pools), flush stdout and stderr — and end the process without the teardown. An
    exception other than `SystemExit` (a bug's traceback, Ctrl-C) takes the normal path."""
    try:
        main()
        code = 0
    except SystemExit as done:
        code = exit_code(done.code)
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None or sys.getprofile() or sys.gettrace():
        # an interpreter without it, or a profiler, debugger or coverage tool that writes its
        # results after the program: the normal, slower exit
        raise SystemExit(code)
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`mobrl zoo list | head`)
            pass
    os._exit(code)
