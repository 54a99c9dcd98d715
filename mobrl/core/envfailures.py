"""Env failures told where the user looks, wherever the env ran.

An env that raises inside a Ray env runner ends that runner's process: RLlib logs the error in
the runner's own log under Ray's temp dir and the trial sees only that a worker died. So each
env mobrl builds for RLlib is guarded (`guard`, `making`): an exception from making it, its
`reset` or its `step` is first recorded as a small JSON file in the run dir's `.env-failures/`
(what failed, where, the exception's type, message and traceback, the process and its Ray
placement group), then raised on as it was. The trial (`training.envwatch`) reads the records
of its own env runners (those in its placement group) to name the cause in one line.

Records are written where the run dir is: on a multi-node Ray cluster an env runner on another
node writes on that node, and the trial then names the runner and points to Ray's logs.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mobrl.core.errors import RunFailed, first_line


class EnvFailedError(RunFailed):
    """An env (a user's env, a simulator, a layout's own classes) raised or its process died
    while a run or an evaluation stepped it: the first line of the message says so, the env's
    own traceback (`detail`), where one was recorded, follows it for error.txt."""

    def __init__(self, line: str, detail: str = ""):
        super().__init__(f"{line}\n\n{detail}" if detail else line)


def group_id() -> str | None:
    """The Ray placement group this process runs in (a trial and its env runners share
    Tune's), or None outside Ray. Ray is not imported for it."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        return ray.get_runtime_context().get_placement_group_id()
    except Exception:  # a Ray without a runtime context here: the records stay unfiltered
        return None


def described(label: str, where: str, err: BaseException, runner: int) -> dict[str, Any]:
    """What `err` says of the env `label` failing in `where` (`making the env`, `reset` or
    `step`), as a record holds it."""
    return {
        "time": time.time(),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "group": group_id(),
        "runner": runner,
        "env": label,
        "where": where,
        "type": type(err).__name__,
        "message": first_line(err) if str(err).strip() else "",
        "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__)),
    }


def record(folder: str | Path, label: str, where: str, err: BaseException, runner: int) -> None:
    """Write what `err` says of the env `label` (`described`) into `folder`, whole or not at
    all; never raises (the env's own error goes on)."""
    try:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        data = described(label, where, err, runner)
        now = data["time"]
        name = f"{now:.6f}-{os.getpid()}.json"
        tmp = folder / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, folder / name)
    except Exception:  # a full disk or a read-only run dir must not hide the env's error
        pass


def read(folder: str | Path | None, since: float = 0.0, group: str | None = None) -> list[dict]:
    """The records in `folder` written at or after `since`, oldest first; only those of
    placement group `group` when it is given."""
    if folder is None or not Path(folder).is_dir():
        return []
    found = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("time", 0.0) < since:
            continue
        if group is not None and data.get("group") not in (group, None):
            continue
        data["file"] = path.name
        found.append(data)
    return sorted(found, key=lambda d: d["time"])


def cause(data: dict) -> str:
    """A record's exception as `Type: message`."""
    return f"{data['type']}: {data['message']}" if data["message"] else data["type"]


def one_line(data: dict) -> str:
    """What a record says, for a person: the env, where it failed, the exception."""
    runner = f" on env runner {data['runner']}" if data.get("runner") else ""
    named = data["env"].partition("=")[2] in data["message"]  # the message names it already
    env = "the env" if named else f"the env ({data['env']})"
    return f"{env} failed in {data['where']}{runner}: {cause(data)}"


def detail(data: dict) -> str:
    """A record's traceback, told where it came from (for error.txt, after the one line)."""
    where = f"env runner {data['runner']}, " if data.get("runner") else ""
    return (
        f"The env's own traceback ({where}pid {data['pid']} on {data['host']}):\n"
        + data["traceback"].rstrip()
    )


def _end_runner() -> None:
    """End this Ray actor (a remote env runner whose env failed, with no restart to come) as
    an intended exit: the trial learns of it from the record, and Ray prints no "worker died
    unexpectedly" line of its own."""
    from ray.actor import exit_actor

    exit_actor()


def _on_error(method: Callable, handle: Callable[[Exception], None]) -> Callable:
    """`method` whose exception is first handed to `handle` (which may raise instead), then
    raised on."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as err:
            handle(err)
            raise

    return call


def guard(env: Any, folder: str, label: str, runner: int = 0, end: bool = False) -> Any:
    """`env` whose `reset` and `step` record an exception before raising it on (`end`: a
    remote env runner that will not be restarted ends there instead)."""

    def recorder(where: str) -> Callable[[Exception], None]:
        def handle(err: Exception) -> None:
            record(folder, label, where, err, runner)
            if end:
                _end_runner()

        return handle

    env.reset = _on_error(env.reset, recorder("reset"))
    env.step = _on_error(env.step, recorder("step"))
    return env


def telling(env: Any, label: str, episode: str) -> Any:
    """`env` whose `reset` and `step` raise an exception as `EnvFailedError`, the one line
    naming the env and the episode (`mobrl evaluate` and `render` of a user's env or a
    simulator: a traceback through mobrl's code would hide which env failed, and why)."""

    def teller(where: str) -> Callable[[Exception], None]:
        def handle(err: Exception) -> None:
            data = described(label, f"{where} ({episode})", err, 0)
            raise EnvFailedError(one_line(data), detail(data)) from err

        return handle

    env.reset = _on_error(env.reset, teller("reset"))
    env.step = _on_error(env.step, teller("step"))
    return env


@contextmanager
def making(folder: str | None, label: str, runner: int = 0) -> Iterator[None]:
    """Record an exception raised while the env is made (a simulator that does not answer,
    a constructor that raises), then raise it on."""
    try:
        yield
    except Exception as err:
        if folder:
            record(folder, label, "making the env", err, runner)
        raise
