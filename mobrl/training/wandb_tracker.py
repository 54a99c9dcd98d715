"""`logger=wandb`: Tune's WandbLoggerCallback with mobrl's config as each run's config, offline
unless this machine is logged in (`trackers.wandb_mode`, decided when the experiment starts or
resumes).

Under Tune the callback logs each trial from a Ray actor; a trial in mobrl's own process
(`driver.py`, which starts no Ray) logs with wandb in that process instead
(`InProcessWandbCallback`): the same run id, name, group, project, config and files
(`<trial dir>/wandb/`), and every numeric result key at the trial's iteration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from ray.air.integrations.wandb import WandbLoggerCallback

from mobrl.training.trackers import WANDB_PROJECT, result_metrics, trial_params, wandb_mode


def callback(
    cfg: DictConfig,
    run_dir: Path,
    params: dict[str, Any],
    locations: dict[str, tuple],
    in_driver: bool,
) -> WandbLoggerCallback:
    """`logger=wandb`'s callback: Tune's under Tune, wandb in this process in the driver;
    the trials of one mobrl run form one W&B group, named after the run dir."""
    log = cfg.logger
    init = {"group": run_dir.name, **({"entity": log.entity} if log.entity else {})}
    klass = InProcessWandbCallback if in_driver else MobrlWandbCallback
    return klass(log.mode, params, locations, project=log.project or WANDB_PROJECT, **init)


def _trial_dir(trial: Any) -> str:
    """The trial's dir in the run (Tune's `trial.path`). Tune's callback would write into the
    trial's staging dir in Ray's session folder (`trial.local_path`), whose copy in the run
    is taken before wandb has finished writing."""
    path = Path(trial.path)
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


class MobrlWandbCallback(WandbLoggerCallback):
    """Tune's W&B callback; `mode`: `logger.mode`, resolved when the experiment starts."""

    def __init__(
        self, mode: str, params: dict[str, Any], locations: dict[str, tuple], **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.mode, self.params, self.locations = mode, params, locations

    def setup(self, *args: Any, **kwargs: Any) -> None:
        mode = wandb_mode(self.mode)
        self.kwargs["mode"] = mode
        if mode in ("offline", "disabled"):  # else Tune's setup asks for an API key
            os.environ["WANDB_MODE"] = mode
        os.environ.setdefault("WANDB_SILENT", "true")  # the terminal shows mobrl's lines
        super().setup(*args, **kwargs)

    def log_trial_start(self, trial: Any) -> None:
        before = dict(self.kwargs)
        self.kwargs["config"] = trial_params(self.params, trial.config, self.locations)
        self.kwargs["dir"] = _trial_dir(trial)
        try:
            super().log_trial_start(trial)
        finally:
            self.kwargs = before


class InProcessWandbCallback(MobrlWandbCallback):
    """The same W&B run from a trial that trains in mobrl's process, with wandb in it."""

    run: Any = None

    def log_trial_start(self, trial: Any) -> None:
        import wandb

        if self.run is not None:
            return
        self.run = wandb.init(
            id=trial.trial_id,
            name=str(trial),
            project=self.project,
            config=trial_params(self.params, trial.config, self.locations),
            dir=_trial_dir(trial),
            resume="allow",  # `--resume` continues the trial's run
            # mobrl's own terminal is no output of the trial's: leave it unwrapped
            settings=wandb.Settings(console="off"),
            **self.kwargs,
        )
        self.run.config.update({"trial_log_path": str(trial.path)}, allow_val_change=True)

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        if self.run is None:
            self.log_trial_start(trial)
        step = int(result.get("training_iteration") or iteration)  # as Tune's actor logs it
        self.run.log(result_metrics(result), step=step)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        self._finish(1 if failed else 0)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self._finish(0)

    def _finish(self, exit_code: int) -> None:
        if self.run is not None:
            self.run.finish(exit_code=exit_code)
            self.run = None
