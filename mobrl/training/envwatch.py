"""A trial whose envs fail says so and stops, or restarts its env runners a bounded number of
times; it never reports an iteration that sampled nothing.

RLlib's `Algorithm.step` is the documented place to handle env runner failures yourself
("Override this method in your Algorithm sub-classes if you would like to handle worker
failures yourself"): `watched(PPO)` is PPO with a `step` that

- turns an error of a failed env (recorded by the env runner's guard, `core.envfailures`) or
  of an env runner that died into `EnvFailedError`, whose message is the one line (the
  original error stays chained beneath it, in the trial's error.txt);
- counts every failure of an env runner, and every restart (`run.fault.restart_env_runners`),
  as result keys (`metrics.ENV_RUNNER_FAILURES`, `ENV_RUNNER_RESTARTS`: columns of
  progress.csv) and as lines of the trial's log beside the run's records
  (`.env-failures/TRIAL_ID.log`), which the live progress prints; more failures than
  `run.fault.max_env_runner_restarts` stop the trial;
- runs the iteration again, once an env runner is back, when it sampled nothing because its
  env runners had failed: such an iteration is neither reported nor checkpointed. If none comes
  back within the restart delay plus `RESTART_WINDOW_S` (or the run's `run.stop.time_s`), the
  trial stops with the one line.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from mobrl.core import envfailures, metrics
from mobrl.core.envfailures import EnvFailedError


def log_path(folder: str | Path, trial: str) -> Path:
    """A trial's log of its env runners' failures, a line each, beside the run's records
    (the live progress prints its new lines); `trial`: its dir name."""
    return Path(folder) / f"{trial}.log"


#: seconds a restarted env runner may take to start (a new process imports torch and builds
#: its env), beyond `run.fault.restart_delay_s`
RESTART_WINDOW_S = 120.0
#: seconds between looks at failed env runners while none samples
POLL_S = 0.5

_WATCHED: dict[type, type] = {}


def watched(algo_class: type) -> type:
    """`algo_class` (an RLlib Algorithm) whose iterations watch its env runners; the same name,
    so trial dirs and checkpoints read as before."""
    if getattr(algo_class, "_mobrl_watched", False):
        return algo_class
    if algo_class not in _WATCHED:
        subclass = type(algo_class.__name__, (_Watched, algo_class), {"_mobrl_watched": True})
        subclass.__qualname__ = algo_class.__qualname__
        _WATCHED[algo_class] = subclass
    return _WATCHED[algo_class]


class _Watched:
    """The `step` of a watched Algorithm (mixed in before RLlib's class)."""

    _mobrl_watch: Watch | None = None

    def setup(self, config: Any) -> None:
        started = time.time()
        try:
            super().setup(config)  # type: ignore[misc]
        except Exception as err:  # an env runner that could not make its env
            failure = Watch.from_config(config, started).failure(err, started)
            if failure is None:
                raise
            raise failure from err

    def step(self) -> dict[str, Any]:
        if self._mobrl_watch is None:
            self._mobrl_watch = Watch.of(self)
        watch = self._mobrl_watch
        while True:
            started = time.time()
            try:
                result = super().step()  # type: ignore[misc]
            except Exception as err:
                failure = watch.failure(err, started)
                if failure is None:
                    raise
                raise failure from err
            watch.look(self, result)
            result[metrics.ENV_RUNNER_FAILURES] = watch.failures
            result[metrics.ENV_RUNNER_RESTARTS] = watch.restarts
            if watch.sampled(result) or not watch.remote(self) or not watch.down(self):
                return result
            watch.wait_for_runner(self, result)


class Watch:
    """What a trial knows of its env runners' failures."""

    def __init__(self, settings: dict[str, Any], started: float, trial: str | None):
        self.folder = settings.get("failures")
        self.time_s = settings.get("time_s")
        self.restart = bool(settings.get("restart"))
        self.max_restarts = int(settings.get("max_restarts") or 0)
        self.delay = float(settings.get("delay") or 0.0)
        self.started = started
        self.log = log_path(self.folder, trial) if self.folder and trial else None
        self.group = envfailures.group_id()
        self.seen: set[str] = set()
        self.down_ids: set[int] = set()
        self.failures = self.restarts = 0
        self.latest: str | None = None
        #: env steps sampled in the trial's life at its latest result (None: none yet)
        self.steps: float | None = None
        self.iteration = 0
        #: a restarted env runner could not make its env: Ray restarts a runner's process, not
        #: a failed construction, so that runner does not come back
        self.unmade = False

    @staticmethod
    def settings(config: Any) -> dict[str, Any]:
        env_config = getattr(config, "env_config", None)
        if env_config is None and isinstance(config, dict):
            env_config = config.get("env_config")
        watch = dict((env_config or {}).get("watch") or {})
        watch["failures"] = (env_config or {}).get("failures")
        return watch

    @classmethod
    def from_config(cls, config: Any, started: float) -> Watch:
        return cls(cls.settings(config), started, None)

    @classmethod
    def of(cls, algo: Any) -> Watch:
        return cls(cls.settings(algo.config), time.time(), _trial_name(algo))

    def sampled(self, result: dict[str, Any]) -> bool:
        """Whether the iteration of `result` sampled any env step (RLlib repeats its previous
        per-iteration count when nothing was sampled: the lifetime count tells)."""
        steps = float(result.get(metrics.ENV_STEPS) or 0)
        before, self.steps = self.steps, steps
        return steps > (before or 0.0) if before is not None else steps > 0

    # --- what failed -----------------------------------------------------------------------

    def remote(self, algo: Any) -> int:
        group = getattr(algo, "env_runner_group", None)
        return group.num_remote_env_runners() if group is not None else 0

    def down(self, algo: Any) -> set[int]:
        """The remote env runners that are marked failed now."""
        group = algo.env_runner_group
        return set(range(1, group.num_remote_env_runners() + 1)) - set(
            group.healthy_env_runner_ids()
        )

    def _new_records(self, since: float) -> list[dict]:
        found = [
            r
            for r in envfailures.read(self.folder, since, self.group)
            if r["file"] not in self.seen
        ]
        self.seen.update(r["file"] for r in found)
        return found

    def _tell(self, line: str, detail: str = "") -> None:
        """Count one failure of an env runner, log it (with when it happened, and whether the
        runner restarts), and stop once there are too many."""
        self.failures += 1
        self.latest = line
        over = self.restart and self.failures > self.max_restarts
        logged = f"iteration {self.iteration}: {line}"
        if self.restart and not over:
            logged += (
                f"; restarting it (failure {self.failures} of the "
                f"{self.max_restarts} run.fault.max_env_runner_restarts allows)"
            )
        if self.log is not None:
            try:
                self.log.parent.mkdir(parents=True, exist_ok=True)
                with open(self.log, "a") as f:
                    f.write(logged + "\n")
            except OSError:
                pass
        if over:
            raise EnvFailedError(
                f"{line}. The env runners failed {self.failures} times, more than "
                f"run.fault.max_env_runner_restarts={self.max_restarts} restarts allow: fix "
                "the env, then continue the run",
                detail,
            )

    def look(self, algo: Any, result: dict[str, Any]) -> None:
        """After an iteration: count the env runners that failed in it (with their causes)."""
        records = self._new_records(self.started)
        down = self.down(algo)
        fresh = down - self.down_ids
        self.restarts += len(self.down_ids - down)
        self.down_ids = down
        self.iteration = int(getattr(algo, "iteration", 0)) + 1
        for data in records:
            self.unmade = self.unmade or data["where"] == "making the env"
            self._tell(envfailures.one_line(data), envfailures.detail(data))
        for runner in sorted(fresh)[len(records) :]:  # died without a word: killed
            self._tell(f"env runner {runner} died (its process ended)")

    def failure(self, err: BaseException, since: float) -> EnvFailedError | None:
        """The one-line error for `err`, raised by an iteration (or the algorithm's setup)
        that started at `since`, when an env failed or an env runner died; None otherwise."""
        records = envfailures.read(self.folder, since - 1.0, self.group)
        if records:
            line, detail = envfailures.one_line(records[-1]), envfailures.detail(records[-1])
        else:
            line, detail = _runner_died(err), ""
            if line is None:
                return None
        if self.failures and self.restart:
            line += f" (after {self.failures} earlier failures of env runners)"
        return EnvFailedError(line, detail)

    def wait_for_runner(self, algo: Any, result: dict[str, Any]) -> None:
        """The iteration sampled nothing because every env runner is down: wait until one is
        back (RLlib's restore), counting failures on the way; one line if none comes back."""
        if not self.restart:
            raise EnvFailedError(
                (self.latest or "every env runner failed")
                + "; run.fault.restart_env_runners=true restarts failed env runners"
            )
        window = self.delay + RESTART_WINDOW_S
        if self.time_s:
            window = min(window, max(float(self.time_s) - (time.time() - self.started), 0.0))
        deadline = time.time() + window
        while time.time() < deadline:
            restored = algo.restore_env_runners(algo.env_runner_group)
            if restored:
                self.restarts += len(set(restored) & self.down_ids)
                self.down_ids -= set(restored)
                return
            self.look(algo, result)
            if self.unmade:
                raise EnvFailedError(
                    f"{self.latest}; a restarted env runner that cannot make its env does not "
                    "come back: fix the env, then continue the run"
                )
            time.sleep(POLL_S)
        raise EnvFailedError(
            f"{self.latest or 'every env runner failed'}; no env runner came back within "
            f"{window:.0f} s of its restart"
        )


def _trial_name(algo: Any) -> str | None:
    """The trial's dir name (e.g. `PPO_2c5a9_00000`, what `progress.trial_name` calls it): the
    name of the algorithm's log dir, under Tune as in the driver."""
    logdir = getattr(algo, "logdir", None)
    return Path(logdir).name if logdir else None


#: `pid: 1234` in Ray's text of a dead actor
_PID = re.compile(r"\bpid[:=]\s*(\d+)")


def _runner_died(err: BaseException) -> str | None:
    """One line for an env runner whose process died (Ray's `RayActorError`), else None."""
    from ray.exceptions import RayActorError

    chain: BaseException | None = err
    while chain is not None and not isinstance(chain, RayActorError):
        chain = chain.__cause__ or chain.__context__
    if chain is None:
        return None
    text = str(chain)
    pid = _PID.search(text)
    detail = [line.strip() for line in text.splitlines() if line.strip()][-1]
    where = f" (pid {pid.group(1)})" if pid else ""
    return f"an env runner{where} died: {detail}"
