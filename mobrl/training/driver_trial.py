"""The files of a trial in the driver (`driver.fit`), as Tune would leave them: the trial
itself as Tune's callbacks read it, `driver-state.json` (what `mobrl train --resume`
continues), its checkpoints (written under a hidden name, renamed when whole, kept by
`checkpoint_policy.KeepPolicy`), its error files, and its `ray.tune.Result` for the ranking.
Ray is imported only where a Tune object is made.
"""

from __future__ import annotations

import json
import logging
import shutil
import traceback
import uuid
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


def open_trial(
    state: dict[str, Any] | None, trainable_name: str, experiment_dir: Path, config: dict
) -> DriverTrial:
    """The trial the state file names (a resumed run), or a new one with a fresh id as Tune
    names trials."""
    return DriverTrial(
        state["trainable"] if state else trainable_name,
        state["trial_id"] if state else f"{uuid.uuid4().hex[:5]}_00000",
        experiment_dir,
        config,
    )


def write_state(experiment_dir: Path, trial: DriverTrial, status: str, kept: list[dict]) -> None:
    """`driver-state.json`, written atomically: the trial, its status and kept checkpoints."""
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


class Checkpoints:
    """The trial's checkpoints: written under a hidden name and renamed into place when
    whole, registered with the keep policy, and the ones it drops deleted at once (as Tune's
    checkpoint bookkeeping deletes them on registration)."""

    def __init__(self, cfg: DictConfig, trial: DriverTrial):
        ckpt = cfg.run.checkpoint
        self.frequency, self.at_end = ckpt.frequency, ckpt.at_end
        self.policy = KeepPolicy.from_config(cfg)
        self.trial = trial
        self.index = 0

    def reopen(self, state: dict[str, Any]) -> Kept | None:
        """Register again the checkpoints the state file lists that are whole on disk, each
        with its iteration's result; return the latest, which the trial continues from."""
        rows = read_trial_results(self.trial.path)
        restore_from = None
        for kept in state["checkpoints"]:
            path = self.trial.path / kept["dir"]
            if path.is_dir() and is_complete(path):
                row = next(
                    (r for r in reversed(rows) if r.get(metrics.ITERATION) == kept["iteration"]),
                    {metrics.ITERATION: kept["iteration"]},
                )
                self.register(path, row)
                restore_from = self.latest()
        return restore_from

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
        return checkpoint(path)

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


def checkpoint(path: Path) -> Any:
    """A checkpoint dir as the `ray.tune.Checkpoint` Tune's callbacks and results hold."""
    from ray.tune import Checkpoint

    return Checkpoint.from_directory(str(path))


def record_error(trial: DriverTrial, err: BaseException) -> Exception:
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


def clear_error(trial_dir: Path) -> None:
    """A trial that finished after an earlier failure (`--resume --retry-errored`) keeps no
    error file of that failure, which would name it failed again."""
    for name in ("error.txt", "error.pkl"):
        (Path(trial_dir) / name).unlink(missing_ok=True)


def stored_error(trial: DriverTrial) -> Exception | None:
    """The error a trial that failed earlier recorded (its error.txt), for its result."""
    error_txt = trial.path / "error.txt"
    return RuntimeError(error_txt.read_text()) if error_txt.is_file() else None


def trial_result(trial: DriverTrial, checkpoints: Checkpoints, error: Exception | None) -> Any:
    """The trial's `ray.tune.Result` as Tune's ResultGrid would hold it: its results read back
    from its files, its latest and best checkpoints, its error."""
    import pandas as pd
    from ray.tune import Result

    rows = read_trial_results(trial.path)
    latest = checkpoints.latest()
    return Result(
        metrics=rows[-1] if rows else {},
        checkpoint=checkpoint(latest.path) if latest else None,
        error=error,
        path=str(trial.path),
        metrics_dataframe=pd.json_normalize(rows, sep="/") if rows else None,
        best_checkpoints=[(checkpoint(k.path), k.result) for k in checkpoints.policy.best()],
    )
