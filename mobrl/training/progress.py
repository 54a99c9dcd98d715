"""Live training progress: a Tune callback that shows each trial's latest numbers with rich."""

from __future__ import annotations

import math
import signal
import threading
from pathlib import Path
from typing import Any

from ray.tune import Callback
from rich.console import Console
from rich.live import Live
from rich.table import Table

from mobrl.core import metrics
from mobrl.core.console import make_console
from mobrl.core.errors import error_summary

_get = metrics.result_value


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def trial_name(trial: Any) -> str:
    """A trial's name as its directory shows it, e.g. PPO_2c5a9_00000."""
    return f"{trial.trainable_name}_{trial.trial_id}"


#: set when the user stops the experiment (Ctrl-C); Tune then saves its state and returns
INTERRUPTED = threading.Event()


def _watch_interrupts() -> None:
    """Record a Ctrl-C before Tune's own handler stops the experiment gracefully."""
    if threading.current_thread() is not threading.main_thread():
        return
    tune_handler = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        INTERRUPTED.set()
        if callable(tune_handler):
            tune_handler(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


class ProgressCallback(Callback):
    """One row per trial: status, iteration, env steps, return mean, elapsed seconds.

    On a terminal the table updates in place; in logs (CI, redirected output) each result is
    one line, so progress stays readable.
    """

    def __init__(self, metric: str = metrics.RETURN_MEAN, failures: str | None = None):
        self.metric = metric
        #: the run's folder of env failures (`RunDir.env_failures_dir`), where each trial logs
        #: the failures of its env runners (`envwatch.log_path`)
        self.failures = failures
        self.rows: dict[str, dict[str, Any]] = {}
        self._console: Console | None = None
        self._live: Live | None = None

    # rich objects hold locks and threads; Tune may pickle its callbacks with the experiment
    def __getstate__(self) -> dict[str, Any]:
        return {"metric": self.metric, "rows": self.rows, "failures": self.failures}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["metric"], state.get("failures"))  # type: ignore[misc]
        self.rows = state["rows"]

    @property
    def _ranks_by_other_metric(self) -> bool:
        return self.metric != metrics.RETURN_MEAN

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = make_console()
        return self._console

    def _table(self) -> Table:
        table = Table(title="training", expand=False)
        columns = ["trial", "status", "iter", "env steps", "return mean", "episodes", "elapsed s"]
        if self._ranks_by_other_metric:
            columns.insert(-1, self.metric)
        for col in columns:
            table.add_column(col, justify="left" if col in ("trial", "status") else "right")
        for trial_id, row in self.rows.items():
            table.add_row(
                trial_id,
                row.get("status", ""),
                _fmt(row.get("iter")),
                _fmt(row.get("steps")),
                _fmt(row.get("return")),
                _fmt(row.get("averaged")),
                *([_fmt(row.get("metric"), 3)] if self._ranks_by_other_metric else []),
                _fmt(row.get("elapsed"), 1),
            )
        return table

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._table())

    def setup(self, **info: Any) -> None:
        _watch_interrupts()  # Tune installed its SIGINT handler just before calling this
        if self.console.is_terminal:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4)
            self._live.start()

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.rows.setdefault(trial_name(trial), {})["status"] = "running"
        self._refresh()

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        row = self.rows.setdefault(trial_name(trial), {})
        row.update(
            status="running",
            iter=_get(result, metrics.ITERATION),
            steps=_int_or_none(_get(result, metrics.ENV_STEPS)),
            elapsed=_get(result, metrics.TIME_TOTAL),
        )
        row["return"] = _float_or_none(_get(result, metrics.RETURN_MEAN))
        row["metric"] = _float_or_none(_get(result, self.metric))
        # the training return is the mean over the last few episodes: say how many
        row["averaged"] = _int_or_none(_get(result, metrics.RETURN_EPISODES))
        self._tell_env_failures(trial, row, result)
        if self._live is not None:
            self._refresh()
        else:
            self.console.print(
                f"{trial_name(trial)} iter {_fmt(row['iter'])}  env steps {_fmt(row['steps'])}  "
                f"return mean {_fmt(row['return'])} (last {_fmt(row['averaged'])} episodes)  "
                + (
                    f"{self.metric} {_fmt(row['metric'], 3)}  "
                    if self._ranks_by_other_metric
                    else ""
                )
                + f"elapsed {_fmt(row['elapsed'], 1)} s",
                highlight=False,
            )

    def _tell_env_failures(self, trial: Any, row: dict[str, Any], result: dict | None) -> None:
        """A line for each env runner failure the trial logged (`envwatch.log_path`) since
        the last one told: after each result that counts more, and when the trial ends."""
        from mobrl.training.envwatch import log_path

        told = row.get("failures_told", 0)
        if result is not None:
            counted = _int_or_none(_get(result, metrics.ENV_RUNNER_FAILURES)) or 0
            if counted <= told:
                return
        log = log_path(self.failures, trial_name(trial)) if self.failures else None
        lines = log.read_text(errors="replace").splitlines() if log and log.is_file() else []
        for line in lines[told:]:
            self.console.print(f"{trial_name(trial)} {line}", highlight=False)
        row["failures_told"] = max(told, len(lines))

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        row = self.rows.setdefault(trial_name(trial), {})
        self._tell_env_failures(trial, row, None)
        row["status"] = "done"
        self._refresh()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        row = self.rows.setdefault(trial_name(trial), {})
        self._tell_env_failures(trial, row, None)
        row["status"] = "ERROR"
        self._refresh()

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """A crashed trial that Tune retries (run.fault.max_failures): one line, not Tune's
        traceback (a trial that fails for good is reported with its error at the end)."""
        self.rows.setdefault(trial_name(trial), {})["status"] = "retrying"
        self._refresh()
        error = Path(trial.error_file) if trial.error_file else None
        reason = (
            error_summary(error.read_text(errors="replace"))
            if error and error.is_file()
            else "its process ended"
        )
        self.console.print(
            f"{trial_name(trial)} failed ({reason}); retrying it from its latest checkpoint "
            f"(failure {trial.num_failures}, run.fault.max_failures allows more)",
            highlight=False,
        )

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def _float_or_none(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int_or_none(value: Any) -> int | None:
    number = _float_or_none(value)
    return None if number is None or math.isnan(number) else int(number)
