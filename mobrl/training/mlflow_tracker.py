"""`logger=mlflow`: Tune's MLflowLoggerCallback with mobrl's config as each trial's params.

Tune's own callback logs RLlib's whole config dict (hundreds of keys, one request each) and a
result one metric per request; this one logs mobrl's resolved config (with the values a
search sampled for the trial) and each result in one batch, and a trial that `mobrl train
--resume` continues logs into its MLflow run of before instead of a new one.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from ray.air.integrations.mlflow import MLflowLoggerCallback

from mobrl.training.trackers import (
    RUN_DIR_TAG,
    experiment_name,
    is_file_store,
    mlflow_uri,
    param_text,
    result_metrics,
    trial_params,
)

#: MLflow's limits per request
_PARAMS_PER_BATCH, _METRICS_PER_BATCH = 100, 1000


def callback(
    cfg: DictConfig,
    run_dir: Path,
    params: dict[str, Any],
    locations: dict[str, tuple],
    in_driver: bool,
) -> MLflowLoggerCallback:
    """`logger=mlflow`'s callback, the same for both executors."""
    uri = mlflow_uri(cfg.logger.tracking_uri, run_dir)
    return MobrlMLflowLoggerCallback(uri, experiment_name(cfg), run_dir, params, locations)


class MobrlMLflowLoggerCallback(MLflowLoggerCallback):
    """One MLflow run per trial in experiment `experiment_name` at `tracking_uri`."""

    def __init__(
        self,
        tracking_uri: str,
        experiment_name: str,
        run_dir: Path,
        params: dict[str, Any],
        locations: dict[str, tuple],
    ):
        run_dir = Path(run_dir).absolute()
        super().__init__(
            tracking_uri=tracking_uri,
            experiment_name=experiment_name,
            tags={RUN_DIR_TAG: str(run_dir)},
        )
        self.run_dir, self.params, self.locations = run_dir, params, locations
        self.client: Any = None

    def setup(self, *args: Any, **kwargs: Any) -> None:
        uri = str(self.tracking_uri)
        if is_file_store(uri):  # asked for by name: MLflow 3 wants consent for its file store
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        for name in ("mlflow", "alembic"):  # a new store's schema migrations are no news
            logging.getLogger(name).setLevel(logging.WARNING)
        from mlflow import MlflowClient

        self.client = MlflowClient(uri)
        if uri.startswith("sqlite:///"):
            self._create_local_experiment(Path(uri[len("sqlite:///") :]).parent)
        super().setup(*args, **kwargs)
        self._ended: set[str] = set()

    def _create_local_experiment(self, folder: Path) -> None:
        """A SQLite store's experiment keeps its artifacts beside the store (MLflow's default
        is ./mlruns of wherever the command runs)."""
        from mlflow.exceptions import MlflowException

        folder.mkdir(parents=True, exist_ok=True)  # SQLite makes the file, not its folder
        if self.client.get_experiment_by_name(self.experiment_name) is None:
            try:
                self.client.create_experiment(
                    self.experiment_name,
                    artifact_location=(folder / "artifacts").absolute().as_uri(),
                )
            except MlflowException:  # made by another job meanwhile
                pass

    def log_trial_start(self, trial: Any) -> None:
        from mlflow.entities import Param

        if trial not in self._trial_runs:
            self._trial_runs[trial] = self._run_of(trial)
        run_id = self._trial_runs[trial]
        self._ended.discard(run_id)
        logged = self.client.get_run(run_id).data.params  # a param, once logged, stays
        todo = trial_params(self.params, trial.config, self.locations)
        batch = [Param(key, param_text(value)) for key, value in todo.items() if key not in logged]
        for start in range(0, len(batch), _PARAMS_PER_BATCH):
            self.client.log_batch(run_id, params=batch[start : start + _PARAMS_PER_BATCH])

    def _run_of(self, trial: Any) -> str:
        """The trial's MLflow run: the one it logged into before `--resume`, or a new one."""
        from mlflow.exceptions import MlflowException

        experiment = self.mlflow_util.experiment_id
        where = f"tags.trial_name = '{trial}' and tags.`{RUN_DIR_TAG}` = '{self.run_dir}'"
        try:
            found = self.client.search_runs([experiment], where, max_results=1)
        except MlflowException:  # a run dir whose name the filter cannot quote
            found = []
        if found:
            run_id = found[0].info.run_id
            self.client.update_run(run_id, status="RUNNING")
            return run_id
        tags = {**self.tags, "trial_name": str(trial)}
        return self.client.create_run(experiment, tags=tags, run_name=str(trial)).info.run_id

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        from mlflow.entities import Metric

        if trial not in self._trial_runs:
            self.log_trial_start(trial)
        # the step TensorBoard's events have
        step = int(result.get("timesteps_total") or result.get("training_iteration") or iteration)
        now = int(time.time() * 1000)
        batch = [Metric(key, value, now, step) for key, value in result_metrics(result).items()]
        run_id = self._trial_runs[trial]
        for start in range(0, len(batch), _METRICS_PER_BATCH):
            self.client.log_batch(run_id, metrics=batch[start : start + _METRICS_PER_BATCH])

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        super().log_trial_end(trial, failed)
        self._ended.add(self._trial_runs[trial])

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        """Trials that stopped unfinished (Ctrl-C, a full disk): their runs say KILLED
        until `--resume` continues them."""
        for run_id in set(self._trial_runs.values()) - self._ended:
            self.client.set_terminated(run_id, status="KILLED")
