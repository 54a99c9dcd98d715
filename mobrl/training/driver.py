"""One trial in mobrl's own process, without Ray: the run of one trial that needs nothing
remote (no search, no env-runner or learner actors, no cluster, no retry in a new process).

Tune would start Ray, a trial actor that imports RLlib and torch a second time, and stop
them all again: seconds of fixed cost for a small run. Here the algorithm trains in the
driver, and the trial's files are the ones Tune writes, by Tune's own parts: its logger
callbacks (result.json, progress.csv, params.json/.pkl, TensorBoard events) and
`ray.tune.Result`s for the ranking; which checkpoints stay (`run.checkpoint.keep` by score,
and the latest) is mobrl's `checkpoint_policy.KeepPolicy`, which keeps them as Tune does.
mobrl's progress table and disk guard get the same callback hooks as under Tune. A checkpoint is
written under a hidden name and renamed when whole. `driver-state.json` in the experiment
dir (written atomically after each checkpoint) is what `mobrl train --resume` continues.
Here is the trial's loop; its files (the state file, checkpoints, error files, its result)
are `driver_trial`'s.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core import metrics
from mobrl.training.checkpoint_policy import Kept
from mobrl.training.driver_trial import (
    ERROR,
    RUNNING,
    TERMINATED,
    Checkpoints,
    DriverTrial,
    clear_error,
    open_trial,
    read_state,
    record_error,
    stored_error,
    trial_result,
    write_state,
)


def _tune_callbacks() -> list[Any]:
    """The loggers Tune adds to every experiment (TensorBoard when tensorboardX is there)."""
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

    loggers: list[Any] = [JsonLoggerCallback(), CSVLoggerCallback()]
    try:
        import tensorboardX  # noqa: F401
        from ray.tune.logger import TBXLoggerCallback

        loggers.append(TBXLoggerCallback())
    except ImportError:
        pass
    return loggers


class _Hooks:
    """Calls one Tune callback hook on every callback, as Tune's controller does."""

    def __init__(self, callbacks: list[Any], trial: DriverTrial):
        self.callbacks, self.trial, self.iteration = callbacks, trial, 0

    def __call__(self, hook: str, **info: Any) -> None:
        if hook not in ("setup", "on_experiment_end"):
            info = {
                "iteration": self.iteration,
                "trials": [self.trial],
                "trial": self.trial,
                **info,
            }
        elif hook == "on_experiment_end":
            info = {"trials": [self.trial], **info}
        for callback in self.callbacks:
            getattr(callback, hook)(**info)


@contextmanager
def _stop_on_ctrl_c(stop: list[bool]) -> Iterator[None]:
    """Ctrl-C stops the trial at once (the iteration under way is dropped: the run continues
    from its latest complete checkpoint), so the command answers within a second whatever an
    iteration costs. The disk guard's SIGINT ends the trial after its iteration, as Tune's
    graceful stop does; a Ctrl-C after it stops at once too."""
    import threading

    from mobrl.training.diskspace import FULL

    if threading.current_thread() is not threading.main_thread():  # only there can it be set
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        if stop[0] or FULL.reason is None:  # a person's Ctrl-C, or a second SIGINT
            stop[0] = True
            raise KeyboardInterrupt
        stop[0] = True

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _without_ray() -> Iterator[None]:
    """RLlib puts its config and weights into Ray's object store for remote env runners even
    when it has none (`EnvRunnerGroup`), and `ray.put` would start a local Ray for that. With
    no remote actor nothing reads them back: `ray.put` hands the object back instead. Anything
    that does need Ray (`ray.get` of such a value) fails loudly rather than silently."""
    import ray

    if ray.is_initialized():  # a Ray the user started: leave it as it is
        yield
        return
    put = ray.put
    ray.put = lambda value, **_: value
    try:
        yield
    finally:
        ray.put = put


#: where a trial in the driver logs what Ray and RLlib say while it trains (`ray.log_to_driver`
#: false): the terminal shows mobrl's lines, as under Tune, whose trial actor logs to files
TRIAL_LOG = "trial.log"


@contextmanager
def _trial_log(trial: DriverTrial, to_terminal: bool) -> Iterator[None]:
    """Ray's and RLlib's log records of the trial go to `TRIAL_LOG` in the trial dir (created
    only when something is logged), unless `to_terminal` (`ray.log_to_driver`)."""
    if to_terminal:
        yield
        return
    handler = logging.FileHandler(trial.path / TRIAL_LOG, delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in ("ray", "ray.rllib")]
    before = [(lg.handlers[:], lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers[:] = [handler]
        lg.propagate = False
    try:
        yield
    finally:
        for lg, (handlers, propagate) in zip(loggers, before):
            lg.handlers[:], lg.propagate = handlers, propagate
        handler.close()


@contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """torch on the trial's CPUs, as Ray gives a trial actor (OMP_NUM_THREADS): the same
    numbers as under Tune, and no oversubscription of small nets."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(count, 1))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _build(algo_class: type, space: dict[str, Any], trial: DriverTrial) -> Any:
    """The algorithm as Tune's trial actor builds it, with the trial dir as its log dir
    (`algo.logdir`). A Trainable outside Tune makes a new dir in ~/ray_results instead; Ray
    offers no public parameter for the log dir (`Trainable.__init__` takes `config` and a
    `StorageContext` of Tune's own, which would also chdir into the trial dir), so the
    Trainable's log-dir setup is replaced for this one instance."""
    algo = algo_class.__new__(algo_class)
    algo._setup_logdir = lambda: setattr(algo, "_logdir", trial.local_path)
    algo.__init__(config=dict(space))
    return algo


def _restore(algo: Any, kept: Kept) -> float:
    """Continue `algo` from a kept checkpoint; return the training time before it. Tune's
    restore also sets the Trainable's clock from the checkpoint's result; `Algorithm.restore`
    of a dir restores the iteration (part of the algorithm's state) but counts
    `time_total_s` from 0, so the driver adds the time before to each result
    (`_continue_clock`) before anything of mobrl's or Tune's reads it (mobrl's RLlib
    callbacks, which see the result first, do not read it)."""
    algo.restore(str(kept.path))
    return float(kept.result.get(metrics.TIME_TOTAL) or 0.0)


def _continue_clock(result: dict[str, Any], before: float) -> None:
    """`time_total_s` of a restored trial counts the training before the restore, as under
    Tune (stop criteria such as `run.stop.time_s` read it)."""
    if before and isinstance(result.get(metrics.TIME_TOTAL), (int, float)):
        result[metrics.TIME_TOTAL] += before


def _should_stop(result: dict[str, Any], criteria: dict[str, float]) -> bool:
    """Tune's test of a trial's stop criteria on its flattened result."""
    from ray.tune.utils import flatten_dict

    if result.get("done"):
        return True
    flat = flatten_dict(result)
    return any(key in flat and flat[key] >= value for key, value in criteria.items())


def fit(
    cfg: DictConfig,
    algo_class: type,
    space: dict[str, Any],
    experiment_dir: Path,
    callbacks: list[Any],
    resume: bool = False,
    retry_errored: bool = False,
) -> list[Any]:
    """Train the run's one trial in this process (or continue it: `resume`); return its
    `ray.tune.Result` as Tune's ResultGrid would hold it."""
    from mobrl.training.tuning import stop_criteria

    experiment_dir.mkdir(parents=True, exist_ok=True)
    state = read_state(experiment_dir) if resume else None
    trial = open_trial(state, algo_class.__name__, experiment_dir, space)
    checkpoints = Checkpoints(cfg, trial)
    restore_from = checkpoints.reopen(state) if state else None
    status = state["status"] if state else RUNNING
    if status == TERMINATED or (status == ERROR and not retry_errored):
        error = stored_error(trial) if status == ERROR else None
        return [trial_result(trial, checkpoints, error)]

    training = _Training(cfg, trial, checkpoints, experiment_dir, status)
    hooks = _Hooks([*callbacks, *_tune_callbacks()], trial)
    criteria = stop_criteria(cfg)
    training.run(algo_class, space, restore_from, hooks, criteria)
    if training.stop[0] and training.status == RUNNING:
        from mobrl.training.progress import INTERRUPTED

        INTERRUPTED.set()
    return [trial_result(trial, checkpoints, training.error)]


class _Training:
    """One go of the trial's training in this process: the algorithm built (and restored),
    then an iteration at a time until a stop criterion, Ctrl-C, the disk guard or an error;
    the state file written when the trial starts, after each checkpoint and at the end."""

    def __init__(
        self,
        cfg: DictConfig,
        trial: DriverTrial,
        checkpoints: Checkpoints,
        experiment_dir: Path,
        status: str,
    ):
        self.cfg, self.trial, self.checkpoints = cfg, trial, checkpoints
        self.experiment_dir = experiment_dir
        #: the trial's status as the state file records it; its error, if it failed
        self.status, self.error = status, None
        #: set by Ctrl-C or the disk guard's SIGINT (`_stop_on_ctrl_c`)
        self.stop = [False]

    def save_state(self) -> None:
        write_state(self.experiment_dir, self.trial, self.status, self.checkpoints.kept())

    def run(
        self,
        algo_class: type,
        space: dict[str, Any],
        restore_from: Kept | None,
        hooks: _Hooks,
        criteria: dict[str, float],
    ) -> None:
        """Train under the trial's Ctrl-C handling, CPU threads, no-Ray shim and log file.
        Ctrl-C ends it resumable; an error is the trial's (error.txt, `on_trial_error`),
        except a full disk, which stops the run (resumable, mobrl's one line)."""
        from mobrl.training.diskspace import FULL, is_full
        from mobrl.training.raysession import trial_cpus

        algo, before = None, 0.0
        self.trial.init_local_path()
        with (
            _stop_on_ctrl_c(self.stop),
            _torch_threads(trial_cpus(self.cfg)),
            _without_ray(),
            _trial_log(self.trial, self.cfg.ray.log_to_driver),
        ):
            hooks("setup")
            try:
                algo = _build(algo_class, space, self.trial)
                if restore_from is not None:
                    before = _restore(algo, restore_from)
                hooks("on_trial_start")
                self.status = RUNNING
                self.save_state()
                self._iterate(algo, hooks, criteria, before)
            except KeyboardInterrupt:  # Ctrl-C: stop now, resumable
                self.stop[0] = True
            except Exception as err:
                if FULL.reason is not None or is_full(err):
                    raise  # stopped for lack of room: resumable, and one line (experiment.py)
                # as a Tune trial's error
                self.status, self.error = ERROR, record_error(self.trial, err)
                hooks("on_trial_error")
            finally:
                hooks("on_experiment_end")
                if algo is not None:
                    algo.stop()
                self.save_state()

    def _iterate(self, algo: Any, hooks: _Hooks, criteria: dict[str, float], before: float) -> None:
        """Iterations until the trial is done or stopped: each result with the clock of a
        restored trial continued, the stop criteria tested, the hooks called, and a
        checkpoint (then the state file) when one is due."""
        while not self.stop[0]:
            result = algo.train()
            _continue_clock(result, before)
            hooks.iteration += 1
            result["trial_id"] = self.trial.trial_id
            if _should_stop(result, criteria):
                result["done"] = True
            hooks("on_trial_result", result=result)
            if self.checkpoints.due(result):
                checkpoint = self.checkpoints.save(algo, result)
                hooks("on_checkpoint", checkpoint=checkpoint)
                self.save_state()
            hooks("on_step_end")
            if result.get("done"):
                self.status = TERMINATED
                clear_error(self.trial.path)
                hooks("on_trial_complete")
                break
