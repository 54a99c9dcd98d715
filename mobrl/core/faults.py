"""Faults made on purpose (`run.fault.inject`), to see a run survive them.

`env_error` makes the sampling env raise at its N-th step and `env_exit` ends the process
that steps it: with env runners, RLlib restarts the failed runner (`run.fault.
restart_env_runners`); without, the trial fails. `trial_exit` ends the trial's process after
iteration N: Tune retries it from its latest checkpoint (`run.fault.max_failures`).

Each fault is made `times` times in the whole run: whoever makes one first claims a marker
file in the run dir, so restarted runners, retried trials and `--resume` do not repeat it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mobrl.core.errors import unknown_choice
from mobrl.core.rundir import RunDir

#: what `run.fault.inject.what` can name
KINDS = ("env_error", "env_exit", "trial_exit")


class InjectedFault(RuntimeError):
    """The error an `env_error` fault raises."""


def check_inject(inject: Any) -> None:
    """One-line errors for an unknown fault kind (counts are checked with the other numbers)."""
    if inject.what is not None and inject.what not in KINDS:
        raise unknown_choice(
            "run.fault.inject.what",
            str(inject.what),
            KINDS,
            "Use one of them, or leave it unset for a run without faults.",
        )


def plan(inject: Any, run_dir: Path) -> dict[str, Any] | None:
    """The fault of this run as plain data for its env runners and trials (None: no fault)."""
    if inject.what is None:
        return None
    return {
        "what": str(inject.what),
        "at": int(inject.at),
        "times": int(inject.times),
        "dir": str(RunDir(run_dir).faults_dir),
    }


def claim(fault: dict[str, Any]) -> bool:
    """True for the caller that gets to make one of the run's remaining faults (atomic across
    processes: each fault is a marker file created with O_EXCL)."""
    folder = Path(fault["dir"])
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(fault["times"]):
        marker = folder / f"{fault['what']}-{number}"
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        return True
    return False


def made(run_dir: Path) -> list[str]:
    """The faults made so far in a run (names of the claimed markers)."""
    folder = RunDir(run_dir).faults_dir
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def arm_env(env: Any, fault: dict[str, Any] | None) -> Any:
    """`env` whose N-th step makes the fault (env faults only; other envs are returned as they
    are)."""
    if not fault or fault["what"] not in ("env_error", "env_exit"):
        return env
    step, count = env.step, 0

    def faulty_step(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        if count == fault["at"] and claim(fault):
            if fault["what"] == "env_exit":
                os._exit(1)
            raise InjectedFault(f"run.fault.inject: env_error at step {count}")
        return step(*args, **kwargs)

    env.step = faulty_step
    return env


class TrialExit:
    """An RLlib `on_train_result` callback that ends the trial's process after iteration
    `at` (picklable: Tune ships it to the trial)."""

    def __init__(self, fault: dict[str, Any]):
        self.fault = fault

    def __call__(self, *, result: dict[str, Any], **_: Any) -> None:
        if result.get("training_iteration") == self.fault["at"] and claim(self.fault):
            os._exit(1)


def trial_callback(fault: dict[str, Any] | None) -> TrialExit | None:
    if fault and fault["what"] == "trial_exit":
        return TrialExit(fault)
    return None
