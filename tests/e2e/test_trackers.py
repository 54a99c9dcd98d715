"""`logger=mlflow` and `logger=wandb` end to end on both executors: a real smoke run, its
tracker's records read back with the tracker's own client or files and held against the
trial's progress.csv."""

from __future__ import annotations

import glob
import json
import struct
from pathlib import Path

import pandas as pd
import pytest

from mobrl.core import metrics
from tests.e2e.conftest import train_smoke

pytestmark = pytest.mark.slow

#: the headline service measure and the training return, as Tune's results name them
UTILITY = metrics.result_key(metrics.UTILITY_MEAN)
RETURN = metrics.RETURN_MEAN


def _progress(run_dir: Path) -> pd.DataFrame:
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    return pd.read_csv(trial / "progress.csv")


@pytest.mark.parametrize(
    "executor,store",
    [("driver", "file"), ("tune", "default")],  # each executor, each kind of local store
)
def test_mlflow_run_holds_the_config_and_service_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, store: str
) -> None:
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    run_dir = tmp_path / "run"
    if store == "file":
        uri = f"file:{tmp_path / 'mlruns'}"
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for this reader (MLflow 3)
        extra = [f"logger.tracking_uri={uri}"]
    else:
        uri, extra = f"sqlite:///{run_dir / 'mlflow' / 'mlflow.db'}", []
    train_smoke(run_dir, "scenario=small", "logger=mlflow", f"run.executor={executor}", *extra)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["executor"] == executor

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("small_ppo")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    params = run.data.params
    assert params["scenario.name"] == "small" and params["algo.name"] == "ppo"
    assert params["run.executor"] == executor and params["logger.name"] == "mlflow"
    progress = _progress(run_dir)
    for key in (UTILITY, RETURN):
        history = client.get_metric_history(run.info.run_id, key)
        assert [m.step for m in history] == [1, 2]
        assert [m.value for m in history] == pytest.approx(progress[key].tolist())
    assert -1.0 <= run.data.metrics[UTILITY] <= 1.0


def _wandb_records(path: Path) -> list:
    """The records of a `.wandb` file (W&B's LevelDB-style log of protobuf records)."""
    from wandb.proto import wandb_internal_pb2

    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B"
    records, pos, part = [], 7, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            pos += left
            continue
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        part = chunk if kind in (1, 2) else part + chunk  # full, first / middle, last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(part)
            records.append(record)
    return records


@pytest.mark.parametrize("executor", ["driver", "tune"])
def test_wandb_offline_run_holds_the_config_and_service_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str
) -> None:
    pytest.importorskip("wandb")
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))  # not logged in: offline
    run_dir = tmp_path / "run"
    train_smoke(run_dir, "scenario=small", "logger=wandb", f"run.executor={executor}")

    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    (offline,) = glob.glob(str(trial / "wandb" / "offline-run-*" / "run-*.wandb"))
    records = _wandb_records(Path(offline))
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run.project == "mobrl" and run.display_name.startswith("PPO_")
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["scenario.name"] == "small" and config["algo.name"] == "ppo"
    assert config["run.executor"] == executor
    history = [
        {
            item.nested_key[0] if item.nested_key else item.key: json.loads(item.value_json)
            for item in r.history.item
        }
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [h["_step"] for h in history] == [1, 2]
    progress = _progress(run_dir)
    for key in (UTILITY, RETURN):
        assert [h[key] for h in history] == pytest.approx(progress[key].tolist())
    assert any(r.WhichOneof("record_type") == "exit" for r in records)  # finished, whole
