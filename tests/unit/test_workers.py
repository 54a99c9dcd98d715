"""Evaluation's and rendering's worker processes are born with Ctrl-C held back, so a Ctrl-C
pressed while they boot leaves no traceback of theirs on the terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import json, os, signal

    from mobrl.core.workers import process_pool


    def boot_state(_):
        # nothing in a worker changes its signal mask after it started: this is the mask it
        # booted with
        return os.getpid(), sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))


    with process_pool(2) as pool:
        seen = dict(pool.submit(boot_state, i).result() for i in range(4))
    main = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    print(json.dumps({"workers": list(seen.values()), "main": main}))
    """
)


def test_workers_boot_with_sigint_held_and_the_main_process_gets_it_back() -> None:
    # a fresh interpreter, where no resource tracker runs yet: starting one is what used to
    # reopen SIGINT before the workers were started
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    masks = json.loads(out.strip().splitlines()[-1])
    assert masks["workers"], out
    for mask in masks["workers"]:
        assert int(signal.SIGINT) in mask, masks
    assert int(signal.SIGINT) not in masks["main"], masks


_GROWING = textwrap.dedent(
    """
    import builtins, os, time

    from mobrl.core.workers import process_pool


    def grow(i):
        # 20 MB more kept in the worker each job, past the leak size loky is given below
        builtins.__dict__.setdefault("_kept", []).append(bytearray(20_000_000))
        time.sleep(1.1)  # loky looks at a worker's memory at most once a second
        return os.getpid(), i


    with process_pool(1) as pool:
        done = [pool.submit(grow, i).result() for i in range(4)]
    print(len({pid for pid, _ in done}), [i for _, i in done])
    """
)


def test_a_worker_loky_replaces_for_its_memory_costs_no_job_and_no_warning() -> None:
    env = {**os.environ, "LOKY_MAX_MEMORY_LEAK_SIZE": "10000000"}
    done = subprocess.run(
        [sys.executable, "-c", _GROWING], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    workers, jobs = done.stdout.split(maxsplit=1)
    assert int(workers) > 1, done.stdout  # it was replaced
    assert jobs.strip() == "[0, 1, 2, 3]"
    assert "restarted" not in done.stderr and "Warning" not in done.stderr, done.stderr
