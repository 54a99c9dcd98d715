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
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core import metrics
from mobrl.core.errors import UserError
from mobrl.core.files import atomic_write_json
from mobrl.core.rundir import is_complete, read_trial_results, unresumable_hint
from mobrl.training.checkpoint_policy import KeepPolicy, Kept

#: the driver's experiment state, next to the trial dir
STATE = "driver-state.json"
#: trial status as the state file records it
RUNNING, TERMINATED, ERROR = "RUNNING", "TERMINATED", "ERROR"


class DriverTrial:
    """What Tune's logger callbacks and mobrl's callbacks read of a Tune `Trial`."""

    def __init__(self, trainable_name: str, trial_id: str, experiment_dir: Path, config: dict):
        self.trainable_name, self.trial_id = trainable_name, trial_id
        self.path = experiment_dir / f"{trainable_name}_{trial_id}"
        self.local_path = str(self.path)
        self.config = config
        self.evaluated_params: dict[str, Any] = {}
        self.experiment_tag = ""
        #: Tune's loggers copy files back from remote storage after a restore; all is local
        self.checkpoint = None
        self.error_file: str | None = None
        self.num_failures = 0

    def init_local_path(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def __str__(self) -> str:
        return f"{self.trainable_name}_{self.trial_id}"


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


def _write_state(experiment_dir: Path, trial: DriverTrial, status: str, kept: list[dict]) -> None:
    atomic_write_json(
        experiment_dir / STATE,
        {
            "trial": str(trial),
            "trainable": trial.trainable_name,
            "trial_id": trial.trial_id,
            "status": status,
            "checkpoints": kept,
            "updated": datetime.now().isoformat(timespec="seconds"),
        },
    )


def read_state(experiment_dir: Path) -> dict[str, Any]:
    """The driver's state of a run; a one-line error when it is cut (a killed write)."""
    path = experiment_dir / STATE
    try:
        state = json.loads(path.read_text())
        if not isinstance(state, dict) or "trial" not in state:
            raise ValueError("not mobrl's state")
    except (OSError, ValueError) as err:
        raise UserError(
            f"cannot resume: the trial's state {path} is unreadable ({err}); "
            f"{unresumable_hint(experiment_dir)}."
        ) from None
    return state


class _Checkpoints:
    """The trial's checkpoints: written under a hidden name and renamed into place when
    whole, registered with the keep policy, and the ones it drops deleted at once (as Tune's
    checkpoint bookkeeping deletes them on registration)."""

    def __init__(self, cfg: DictConfig, trial: DriverTrial):
        ckpt = cfg.run.checkpoint
        self.frequency, self.at_end = ckpt.frequency, ckpt.at_end
        self.policy = KeepPolicy.from_config(cfg)
        self.trial = trial
        self.index = 0

    def due(self, result: dict[str, Any]) -> bool:
        if result.get("done") and self.at_end:
            return True
        iteration = result.get(metrics.ITERATION, 0)
        return bool(self.frequency) and iteration % self.frequency == 0

    def register(self, path: Path, result: dict[str, Any]) -> Any:
        for dropped in self.policy.register(path, result):
            try:
                shutil.rmtree(dropped)
            except OSError as err:  # a checkpoint left on disk costs room, not the run
                logging.getLogger(__name__).warning("cannot delete checkpoint %s: %s", dropped, err)
        self.index = max(self.index, int(path.name.rsplit("_", 1)[-1]) + 1)
        return _checkpoint(path)

    def save(self, algo: Any, result: dict[str, Any]) -> Any:
        final = self.trial.path / f"checkpoint_{self.index:06d}"
        partial = self.trial.path / f".partial-{final.name}"
        shutil.rmtree(partial, ignore_errors=True)
        try:
            algo.save_checkpoint(str(partial))
            partial.rename(final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return self.register(final, result)

    def kept(self) -> list[dict[str, Any]]:
        return self.policy.kept()

    def latest(self) -> Kept | None:
        return self.policy.latest()


def _checkpoint(path: Path) -> Any:
    from ray.tune import Checkpoint

    return Checkpoint.from_directory(str(path))


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


def _record_error(trial: DriverTrial, err: BaseException) -> Exception:
    """error.txt (the traceback, as Tune writes it) and error.pkl in the trial dir; the error
    as `ray.tune.Result.error` holds it."""
    import ray.cloudpickle

    text = "".join(traceback.format_exception(err))
    when = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    trial.init_local_path()
    error_txt = trial.path / "error.txt"
    error_txt.write_text(f"Failure # 1 (occurred at {when})\n{text}")
    error = RuntimeError(text)
    (trial.path / "error.pkl").write_bytes(ray.cloudpickle.dumps(error))
    trial.error_file = str(error_txt)
    return error


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
    from mobrl.training.diskspace import FULL, is_full
    from mobrl.training.raysession import trial_cpus
    from mobrl.training.tuning import stop_criteria

    experiment_dir.mkdir(parents=True, exist_ok=True)
    state = read_state(experiment_dir) if resume else None
    trial = DriverTrial(
        state["trainable"] if state else algo_class.__name__,
        state["trial_id"] if state else f"{uuid.uuid4().hex[:5]}_00000",
        experiment_dir,
        space,
    )
    checkpoints = _Checkpoints(cfg, trial)
    rows = read_trial_results(trial.path) if state else []
    restore_from = None
    for kept in state["checkpoints"] if state else []:
        path = trial.path / kept["dir"]
        if path.is_dir() and is_complete(path):
            row = next(
                (r for r in reversed(rows) if r.get(metrics.ITERATION) == kept["iteration"]),
                {metrics.ITERATION: kept["iteration"]},
            )
            checkpoints.register(path, row)
            restore_from = checkpoints.latest()
    status = state["status"] if state else RUNNING
    if status == TERMINATED or (status == ERROR and not retry_errored):
        return [_result(trial, checkpoints, _stored_error(trial))]

    hooks = _Hooks([*callbacks, *_tune_callbacks()], trial)
    stop, error, algo, before = [False], None, None, 0.0
    criteria = stop_criteria(cfg)
    trial.init_local_path()
    with (
        _stop_on_ctrl_c(stop),
        _torch_threads(trial_cpus(cfg)),
        _without_ray(),
        _trial_log(trial, cfg.ray.log_to_driver),
    ):
        hooks("setup")
        try:
            algo = _build(algo_class, space, trial)
            if restore_from is not None:
                before = _restore(algo, restore_from)
            hooks("on_trial_start")
            status = RUNNING
            _write_state(experiment_dir, trial, status, checkpoints.kept())
            while not stop[0]:
                result = algo.train()
                _continue_clock(result, before)
                hooks.iteration += 1
                result["trial_id"] = trial.trial_id
                if _should_stop(result, criteria):
                    result["done"] = True
                hooks("on_trial_result", result=result)
                if checkpoints.due(result):
                    checkpoint = checkpoints.save(algo, result)
                    hooks("on_checkpoint", checkpoint=checkpoint)
                    _write_state(experiment_dir, trial, status, checkpoints.kept())
                hooks("on_step_end")
                if result.get("done"):
                    status = TERMINATED
                    hooks("on_trial_complete")
                    break
        except KeyboardInterrupt:  # Ctrl-C: stop now, resumable
            stop[0] = True
        except Exception as err:
            if FULL.reason is not None or is_full(err):
                raise  # stopped for lack of room: resumable, and one line (train.run)
            status, error = ERROR, _record_error(trial, err)  # as a Tune trial's error
            hooks("on_trial_error")
        finally:
            hooks("on_experiment_end")
            if algo is not None:
                algo.stop()
            _write_state(experiment_dir, trial, status, checkpoints.kept())
    if stop[0] and status == RUNNING:
        from mobrl.training.progress import INTERRUPTED

        INTERRUPTED.set()
    return [_result(trial, checkpoints, error)]


def _stored_error(trial: DriverTrial) -> Exception | None:
    error_txt = trial.path / "error.txt"
    return RuntimeError(error_txt.read_text()) if error_txt.is_file() else None


def _result(trial: DriverTrial, checkpoints: _Checkpoints, error: Exception | None) -> Any:
    import pandas as pd
    from ray.tune import Result

    rows = read_trial_results(trial.path)
    latest = checkpoints.latest()
    return Result(
        metrics=rows[-1] if rows else {},
        checkpoint=_checkpoint(latest.path) if latest else None,
        error=error,
        path=str(trial.path),
        metrics_dataframe=pd.json_normalize(rows, sep="/") if rows else None,
        best_checkpoints=[(_checkpoint(k.path), k.result) for k in checkpoints.policy.best()],
    )
