"""`logger=`: the tracker config, its checks, what it logs, and the MLflow callback's hooks
called as the in-process driver calls them (a real MLflow file store, read back with
MLflow's own client; no Ray cluster)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.training import trackers
from mobrl.training.checks import validate_command_line


def test_logger_group_defaults_to_none() -> None:
    cfg = compose([])
    assert cfg.logger.name == "none"
    assert trackers.callbacks(cfg, Path("."), {}, in_driver=True) == []


def test_mlflow_experiment_defaults_to_scenario_and_algo() -> None:
    cfg = compose(["logger=mlflow", "scenario=cartpole"])
    assert cfg.logger.experiment_name == "cartpole_ppo"
    assert cfg.logger.tracking_uri is None
    assert compose(["logger=wandb"]).logger.project == "mobrl"


@pytest.mark.parametrize("name,package", [("mlflow", "mlflow"), ("wandb", "wandb")])
def test_a_missing_tracker_package_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, name: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # find_spec then finds nothing
    with pytest.raises(UserError) as err:
        validate_command_line([f"logger={name}", "run=smoke"])
    message = str(err.value)
    assert "\n" not in message
    assert f"logger={name} needs the {package} package" in message
    assert 'pip install "mobrl[trackers]"' in message


def test_unknown_logger_option_and_mode_are_user_errors() -> None:
    with pytest.raises(UserError, match="mlfow.*Did you mean 'mlflow'"):
        validate_command_line(["logger=mlfow"])
    pytest.importorskip("wandb")
    with pytest.raises(UserError, match="unknown logger.mode 'ofline'.*'offline'"):
        validate_command_line(["logger=wandb", "logger.mode=ofline"])


def test_params_are_the_resolved_config_under_override_keys() -> None:
    cfg = compose(["logger=mlflow", "algo.training.lr=0.0005"])
    params = trackers.flat_config(cfg)
    assert params["scenario.name"] == "small" and params["algo.name"] == "ppo"
    assert params["algo.training.lr"] == 0.0005
    assert params["logger.experiment_name"] == "small_ppo"
    assert trackers.param_text([64, 64]) == "[64, 64]"
    assert trackers.param_text(None) == "null"
    assert len(trackers.param_text("x" * 2000)) == 500
    # a searched key shows the trial's value, not the preset's
    config = {"lr": 0.01, "_model_config": {"fcnet_hiddens": [32]}}
    locations = {"training.lr": ("lr",), "model.fcnet_hiddens": ("_model_config", "fcnet_hiddens")}
    trial = trackers.trial_params(params, config, locations)
    assert trial["algo.training.lr"] == 0.01 and trial["algo.model.fcnet_hiddens"] == [32]


def test_metrics_are_the_numeric_result_keys_flattened() -> None:
    result = {
        "env_runners": {"episode_return_mean": -3.5, "ue": {"utility": {"mean": 0.25}}},
        "training_iteration": 2,
        "config": {"lr": 0.1},  # the trial's config: params, not metrics
        "trial_id": "abc",
        "hostname": "vm",
        "done": False,
    }
    assert trackers.result_metrics(result) == {
        "env_runners/episode_return_mean": -3.5,
        "env_runners/ue/utility/mean": 0.25,
        "training_iteration": 2.0,
        "done": 0.0,
    }


def test_mlflow_store_defaults_to_sqlite_in_the_run_dir(tmp_path: Path) -> None:
    uri = trackers.mlflow_uri(None, tmp_path)
    assert uri == f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    assert trackers.mlflow_uri("http://host:5000", tmp_path) == "http://host:5000"
    assert trackers.is_file_store("file:/x") and trackers.is_file_store("./mlruns")
    assert not trackers.is_file_store(uri) and not trackers.is_file_store("http://h:5000")


def test_wandb_is_offline_unless_logged_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    netrc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    assert trackers.wandb_mode("auto") == "offline"  # no netrc at all
    netrc.write_text("machine example.org login x password y\n")
    assert trackers.wandb_mode("auto") == "offline"
    netrc.write_text("machine api.wandb.ai login user password secret\n")
    assert trackers.wandb_mode("auto") == "online"  # `wandb login` writes this
    assert trackers.wandb_mode("offline") == "offline"
    netrc.unlink()
    monkeypatch.setenv("WANDB_API_KEY", "k")
    assert trackers.wandb_mode("auto") == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert trackers.wandb_mode("auto") == "offline"  # the user's own setting wins


class _Trial:
    """What Tune's loggers read of a trial (as `driver.DriverTrial` gives it)."""

    def __init__(self, path: Path, trial_id: str = "abcde_00000"):
        self.trial_id, self.config = trial_id, {"lr": 0.1}
        self.path, self.local_path = path, str(path)

    def __str__(self) -> str:
        return f"PPO_{self.trial_id}"


def _hooks(callback, trial: _Trial, results: list[dict], complete: bool) -> None:
    """The hook calls of `driver.fit`: setup, start, a result per iteration, the end."""
    callback.setup()
    callback.on_trial_start(iteration=0, trials=[trial], trial=trial)
    for i, result in enumerate(results, 1):
        callback.on_trial_result(iteration=i, trials=[trial], trial=trial, result=result)
    if complete:
        callback.on_trial_complete(iteration=len(results), trials=[trial], trial=trial)
    callback.on_experiment_end(trials=[trial])


def _result(iteration: int, utility: float) -> dict:
    return {
        "training_iteration": iteration,
        "env_runners": {
            "episode_return_mean": -100.0 + iteration,
            "ue": {"utility": {"mean": utility}},
        },
    }


def test_mlflow_callback_logs_params_and_metrics_and_resume_continues_its_run(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mlflow")
    import ray.cloudpickle
    from mlflow import MlflowClient

    cfg = compose(["logger=mlflow", f"logger.tracking_uri=file:{tmp_path / 'store'}"])
    run_dir = tmp_path / "run"
    (callback,) = trackers.callbacks(cfg, run_dir, {}, in_driver=True)
    # Tune keeps its callbacks in tuner.pkl, from which `--resume` restores them
    callback = ray.cloudpickle.loads(ray.cloudpickle.dumps(callback))
    trial = _Trial(run_dir / "tune" / "PPO_abcde_00000")
    _hooks(callback, trial, [_result(1, -0.5), _result(2, -0.25)], complete=False)

    client = MlflowClient(f"file:{tmp_path / 'store'}")
    experiment = client.get_experiment_by_name("small_ppo")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "PPO_abcde_00000"
    assert run.info.status == "KILLED"  # stopped before its end, as by Ctrl-C
    assert run.data.params["scenario.name"] == "small" and run.data.params["algo.name"] == "ppo"
    assert run.data.tags[trackers.RUN_DIR_TAG] == str(run_dir.absolute())
    history = client.get_metric_history(run.info.run_id, "env_runners/ue/utility/mean")
    assert [(m.step, m.value) for m in history] == [(1, -0.5), (2, -0.25)]

    # `--resume`: a new callback for the same run dir logs on into the trial's MLflow run
    (again,) = trackers.callbacks(cfg, run_dir, {}, in_driver=True)
    _hooks(again, trial, [_result(3, 0.0)], complete=True)
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    history = client.get_metric_history(run.info.run_id, "env_runners/episode_return_mean")
    assert [m.step for m in history] == [1, 2, 3]


def test_a_relative_sqlite_store_gets_an_absolute_artifact_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # logger.tracking_uri=sqlite:///mlruns.db (relative to where the command runs)
    from mlflow import MlflowClient

    from mobrl.training.mlflow_tracker import MobrlMLflowLoggerCallback

    monkeypatch.chdir(tmp_path)
    uri = "sqlite:///mlruns.db"
    callback = MobrlMLflowLoggerCallback(uri, "exp", tmp_path, {}, {})
    callback.client = MlflowClient(uri)
    callback._create_local_experiment(Path("mlruns.db").parent)
    experiment = callback.client.get_experiment_by_name("exp")
    assert experiment.artifact_location == (tmp_path / "artifacts").as_uri()
