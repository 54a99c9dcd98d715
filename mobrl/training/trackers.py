"""Experiment trackers (`logger=mlflow|wandb`): which of Tune's logger callbacks a run gets
(`callbacks`), what they log (the resolved config as params, every numeric result key as a
metric: the keys TensorBoard gets, without its `ray/tune/`), where (`mlflow_uri`,
`wandb_mode`) and the check of `logger.*` (`check_logger`: a missing package is a one-line
error before Ray starts). No Ray and no tracker package at module level: the callbacks
themselves live in `mlflow_tracker.py` and `wandb_tracker.py`.

Both executors give the callback Tune's hooks: `Tuner.fit` through `RunConfig.callbacks` (and
`--resume` restores it with the experiment), the in-process driver through its own hook calls.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mobrl.core.errors import UserError, unknown_choice


@dataclass(frozen=True)
class Tracker:
    """A `logger` option: the package it needs and where its Tune callback is built
    (`module:function`, imported only when a run uses it)."""

    package: str
    build: str


#: the registry behind the `logger` group (`none`: no tracker)
TRACKERS: dict[str, Tracker | None] = {
    "none": None,
    "mlflow": Tracker("mlflow", "mobrl.training.mlflow_tracker:callback"),
    "wandb": Tracker("wandb", "mobrl.training.wandb_tracker:callback"),
}
WANDB_MODES = ("auto", "online", "offline")
#: what fixes a missing tracker package
INSTALL = 'pip install "mobrl[trackers]"'
#: the MLflow store of a run when `logger.tracking_uri` is null, inside the run dir
MLFLOW_DIR = "mlflow"
#: W&B's project when `logger.project` is null
WANDB_PROJECT = "mobrl"
#: the MLflow tag that names the run dir a trial belongs to (`--resume` finds its run by it)
RUN_DIR_TAG = "mobrl.run_dir"
#: result keys that are no measure of the trial (TensorBoard leaves them out too)
_NOT_METRICS = ("config", "pid", "timestamp")
#: MLflow takes these characters in param and metric names
_BAD_NAME_CHARS = re.compile(r"[^\w\-. :/]")
#: older MLflow versions take at most this many characters in a param value: longer are cut
_PARAM_VALUE_CHARS = 500


def check_logger(cfg: DictConfig) -> None:
    """`logger.*` as a one-line `UserError`: a known tracker whose package is installed."""
    log = cfg.logger
    if log.name not in TRACKERS:
        raise unknown_choice("logger", str(log.name), TRACKERS, "Use logger=mlflow or wandb.")
    tracker = TRACKERS[log.name]
    package = tracker.package if tracker is not None else None
    if package is not None and importlib.util.find_spec(package) is None:
        raise UserError(
            f"logger={log.name} needs the {package} package, which is not installed. "
            f"Run `{INSTALL}` or use logger=none."
        )
    if log.name == "wandb" and log.mode not in WANDB_MODES:
        raise unknown_choice("logger.mode", str(log.mode), WANDB_MODES, "Use logger.mode=auto.")
    if log.name == "mlflow" and mlflow_uri(log.tracking_uri, Path(".")).startswith("sqlite:"):
        for needed in ("sqlalchemy", "alembic"):  # MLflow's SQL store; optuna brings both
            if importlib.util.find_spec(needed) is None:
                raise UserError(
                    f"logger=mlflow stores runs in SQLite, which needs {needed}, not installed. "
                    f"Run `pip install {needed}`, or set logger.tracking_uri=file:DIR or a server."
                )


def mlflow_uri(tracking_uri: str | None, run_dir: Path) -> str:
    """The MLflow tracking URI: `logger.tracking_uri`, or a SQLite store in the run dir."""
    if tracking_uri:
        return str(tracking_uri)
    return f"sqlite:///{(run_dir / MLFLOW_DIR / 'mlflow.db').absolute()}"


def is_file_store(uri: str) -> bool:
    """Whether an MLflow tracking URI names MLflow's file store (`file:DIR` or a plain path)."""
    return uri.startswith("file:") or ("://" not in uri and not uri.startswith("sqlite:"))


def flat_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config under dotted keys as overrides write them (`algo.training.lr`):
    W&B's run config as it is, MLflow's params as text (`param_text`)."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, f"{prefix}{key}.")
        else:
            flat[_name(prefix[:-1])] = node

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return flat


def param_text(value: Any) -> str:
    """A config value as an MLflow param (JSON for lists, maps and null; cut when long)."""
    import json

    text = json.dumps(value) if isinstance(value, (list, dict, type(None))) else str(value)
    if len(text) > _PARAM_VALUE_CHARS:
        text = text[: _PARAM_VALUE_CHARS - 3] + "..."
    return text


def _name(key: str) -> str:
    return _BAD_NAME_CHARS.sub("_", key)


def result_metrics(result: dict[str, Any]) -> dict[str, float]:
    """A result's numeric values under flattened keys (`env_runners/ue/utility/mean`)."""
    from ray.tune.utils import flatten_dict

    out: dict[str, float] = {}
    for key, value in flatten_dict(result, delimiter="/").items():
        if key.split("/", 1)[0] in _NOT_METRICS or isinstance(value, (str, bytes)):
            continue
        try:
            out[_name(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def callbacks(
    cfg: DictConfig, run_dir: Path, locations: dict[str, tuple], in_driver: bool
) -> list[Any]:
    """The tracker's Tune callback for this run (none for `logger=none`); `locations`: where
    the search's keys sit in a trial's config (`tuning.param_space`)."""
    tracker = TRACKERS.get(cfg.logger.name)
    if tracker is None:
        return []
    check_logger(cfg)
    module, _, function = tracker.build.partition(":")
    build = getattr(importlib.import_module(module), function)
    return [build(cfg, run_dir, flat_config(cfg), locations, in_driver)]


def describe(cfg: DictConfig, run_dir: Path) -> str | None:
    """One line saying where the tracker's runs go (None for `logger=none`)."""
    log = cfg.logger
    if log.name == "mlflow":
        uri = mlflow_uri(log.tracking_uri, run_dir)
        return f"MLflow: experiment '{experiment_name(cfg)}' at {uri}"
    if log.name == "wandb":
        mode = wandb_mode(log.mode)
        where = "each trial dir's wandb/" + (
            " (offline: upload with `wandb sync DIR`)" if mode == "offline" else ""
        )
        return f"W&B: project '{log.project or WANDB_PROJECT}', {mode}, files in {where}"
    return None


def experiment_name(cfg: DictConfig) -> str:
    return str(cfg.logger.experiment_name or f"{cfg.scenario.name}_{cfg.algo.name}")


def trial_params(
    params: dict[str, Any], config: dict[str, Any], locations: dict[str, tuple]
) -> dict[str, Any]:
    """The run's flat config with the values this trial's search sampled
    (`algo.training.lr`: the trial's, not the preset's)."""
    if not locations:
        return params
    from mobrl.training.tuning import sampled

    trial = {f"algo.{key}": value for key, value in sampled(config, locations).items()}
    return {**params, **trial}


def wandb_mode(mode: str) -> str:
    """`logger.mode` as W&B's mode: `auto` is online where this machine is logged in
    (WANDB_API_KEY, or `wandb login`'s netrc entry) or WANDB_MODE says so, else offline."""
    if mode != "auto":
        return mode
    if os.environ.get("WANDB_MODE"):  # the user's own choice
        chosen = os.environ["WANDB_MODE"]
        return {"dryrun": "offline", "disabled": "disabled"}.get(chosen, chosen)
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    import netrc
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        path = os.environ.get("NETRC")
        logged_in = netrc.netrc(path).authenticators(host or "") is not None
    except (OSError, netrc.NetrcParseError):
        logged_in = False
    return "online" if logged_in else "offline"
