"""Ray for one mobrl run: environment and log filters before Ray starts, a local Ray sized to
the run or a joined cluster (a reachability probe, token authentication, enough CPUs), the
session that registers mobrl's env, and Tune's files that need repair after a restore."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core.console import make_console
from mobrl.core.errors import UserError
from mobrl.core.files import atomic_write_csv

console = make_console()
#: how a job of a parallel multirun finds the Ray it shares (set by `launchers.SharedRay` in
#: the launcher's process, inherited by its workers)
SHARED_RAY_ENV = "MOBRL_SHARED_RAY"


def shared_ray_address() -> str | None:
    """The address of the Ray this multirun shares (None outside a parallel multirun)."""
    return os.environ.get(SHARED_RAY_ENV) or None


#: values of `ray.log_level`
LOG_LEVELS = ("error", "warning", "info")


def configure_ray(log_level: str = "error") -> None:
    """Environment and loggers for Ray and Tune, before they start; `log_level`: what Ray,
    Tune and RLlib print themselves (`ray.log_level`)."""
    # Tune saves its experiment state every 10+ s by default; every second instead, so that
    # `--resume` after a crash or kill -9 re-runs nothing that had finished (the file is small)
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "1")
    # mobrl shows its own progress table; Tune's reporter and Ray's INFO logs would duplicate it
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    # Tune logs each trial failure with a traceback; mobrl prints one line per retry and the
    # error of a trial that failed for good in its summary (the traceback is in error.txt)
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
    level = getattr(logging, log_level.upper(), logging.ERROR)
    for name in ("ray", "ray.tune", "ray.rllib", "ray.train"):
        logging.getLogger(name).setLevel(level)
    # known, harmless notices on every start (local single-user Ray; the new API stack is the
    # one mobrl uses on purpose)
    for name in (
        "ray._private.authentication.authentication_token_setup",
        "ray.rllib.algorithms.algorithm_config",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    # advice for Trainables that implement reset_config; RLlib's algorithms do not
    warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
    # on Ctrl-C Tune suggests its Python API to resume; mobrl prints its own command
    tune_logger = logging.getLogger("ray.tune.tune")
    if _drop_tune_notices not in tune_logger.filters:
        tune_logger.addFilter(_drop_tune_notices)


def _drop_tune_notices(record: logging.LogRecord) -> bool:
    """Tune's resume hint and its list of failed trials (mobrl prints its own of both)."""
    message = record.getMessage()
    return "Tuner.restore" not in message and "Trials did not complete" not in message


def repair_progress_csv(trial_dir: Path) -> None:
    """Rewrite a trial's progress.csv after a restore: from its result.json when it no longer
    parses (Tune appends rows with more columns than the header names), and with each
    iteration once (a run resumed from its last checkpoint repeats the iterations after it;
    the later rows are the ones the checkpoints continue)."""
    import pandas as pd

    from mobrl.core.metrics import ITERATION
    from mobrl.core.rundir import TRIAL_PROGRESS, TRIAL_RESULT, read_trial_results

    csv = trial_dir / TRIAL_PROGRESS
    if not csv.is_file():
        return
    try:
        frame = pd.read_csv(csv)
    except (pd.errors.ParserError, ValueError):
        if not (trial_dir / TRIAL_RESULT).is_file():
            return
        frame = pd.json_normalize(read_trial_results(trial_dir), sep="/")
    else:
        if ITERATION not in frame or not frame[ITERATION].duplicated().any():
            return
    if ITERATION in frame:
        frame = frame[~frame[ITERATION].duplicated(keep="last")]
    atomic_write_csv(csv, frame)


@contextmanager
def ray_session(cfg: DictConfig) -> Iterator[None]:
    """Ray for one experiment: started locally (and stopped after) or joined, with mobrl's
    env creator registered for its workers."""
    import ray

    from mobrl.envs import factory

    started_ray = init_ray(cfg)
    try:
        factory.register()
        yield
    finally:
        if started_ray:
            ray.shutdown()


def ray_address() -> str | None:
    """The GCS address of the Ray the run uses (a local one, a shared or a joined cluster)."""
    import ray

    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # not connected
        return None


def trial_cpus(cfg: DictConfig) -> int:
    from mobrl.training.algos import env_runners

    res = cfg.run.resources
    learners = max(res.num_learners, 0)
    return 1 + learners + env_runners(cfg) * res.num_cpus_per_env_runner


#: a local trial may ask for up to this many times the machine's cores (more: refused)
LOCAL_OVERSUBSCRIBE = 4

#: seconds to wait for a Ray cluster's GCS port to answer before giving up
PROBE_TIMEOUT_S = 5.0


def probe_ray_address(address: str | None, timeout: float = PROBE_TIMEOUT_S) -> None:
    """A one-line error within seconds when `ray.address` names a host:port nobody answers
    on (Ray itself would retry for minutes); `auto` and unset are left to Ray."""
    import socket

    if not address or address == "auto":
        return
    target = address.split("://", 1)[-1].rstrip("/")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(
            f"ray.address={address} is not host:port. Use e.g. ray.address=10.0.0.5:6379, "
            "ray.address=ray://10.0.0.5:10001 or ray.address=auto."
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except OSError as err:
        raise UserError(
            f"cannot reach a Ray cluster at ray.address={address} (no answer on {host}:{port} "
            f"within {timeout:g} s: {err.strerror or err}). Start one with `ray start --head`, "
            "or drop ray.address to run locally."
        ) from None


def join_cluster(address: str, locally: str, describe: Any, **kwargs: Any) -> None:
    """`ray.init` at `address` with this machine's Ray token, if it has one; a refused token or
    an unreachable cluster is one line (`describe` turns the error into its part of it;
    `locally`: what dropping ray.address does instead)."""
    import ray

    _use_local_token()
    try:
        ray.init(address=address, **kwargs)
    except ConnectionError as err:
        if _auth_refused(err):
            raise UserError(
                f"the Ray cluster at ray.address={address} refused this machine's "
                "token: it uses token authentication. Copy its token (`ray get-auth-token` "
                "on the head node) to ~/.ray/auth_token or set RAY_AUTH_TOKEN."
            ) from None
        raise UserError(
            f"cannot reach a Ray cluster at ray.address={address} ({describe(err)}). "
            f"Start one with `ray start --head`, or drop ray.address to {locally}."
        ) from None


def _use_local_token() -> None:
    """Join with Ray's token authentication when this machine holds a token: `ray start
    --head` turns it on by default, but Ray's client does not (a token is also accepted by a
    cluster without authentication). An explicit RAY_AUTH_MODE is left as it is."""
    if os.environ.get("RAY_AUTH_MODE"):
        return
    token_file = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray/auth_token")
    if os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file():
        os.environ["RAY_AUTH_MODE"] = "token"
        from ray._raylet import Config

        Config.initialize("")  # Ray read its settings from the environment at import


def _auth_refused(err: BaseException) -> bool:
    cause: BaseException | None = err
    while cause is not None:
        if type(cause).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(cause):
            return True
        cause = cause.__cause__
    return False


def ray_init_kwargs(cfg: DictConfig) -> dict[str, Any]:
    """`ray.init` settings every Ray of mobrl's shares: no dashboard, quiet logs."""
    return {
        "log_to_driver": cfg.ray.log_to_driver,
        "logging_level": getattr(logging, str(cfg.ray.get("log_level", "error")).upper()),
        "include_dashboard": False,
    }


def init_ray(cfg: DictConfig) -> bool:
    """Start a local Ray sized to the run, or join `ray.address`; True if mobrl started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs = ray_init_kwargs(cfg)
    needed = trial_cpus(cfg)
    address = cfg.ray.address or shared_ray_address()
    if address:
        if cfg.ray.address:
            console.print(f"joining the Ray cluster at {address}")
        join_cluster(address, "run locally", str, **kwargs)
        available = ray.cluster_resources().get("CPU", 0)
        if available < needed:  # Tune would keep the trial pending for ever
            ray.shutdown()
            raise UserError(
                f"the Ray cluster at ray.address={address} has {available:g} CPUs but "
                f"one trial needs {needed} (1 + run.resources.num_env_runners x "
                "num_cpus_per_env_runner). Add nodes, or lower run.resources.num_env_runners."
            )
        return True
    cores = os.cpu_count() or 1
    if not cfg.ray.num_cpus and needed > LOCAL_OVERSUBSCRIBE * cores:
        # each env runner is a process with its own copy of RLlib and torch: hundreds on a
        # few cores thrash the machine for minutes before anything samples
        raise UserError(
            f"run.resources.num_env_runners={cfg.run.resources.num_env_runners} asks for "
            f"{needed} CPUs on this machine's {cores}. Use at most "
            f"{max(LOCAL_OVERSUBSCRIBE * cores - 1, 0)} env runners here (num_envs_per_env_runner "
            "adds envs without processes), or join a cluster with ray.address=HOST:PORT."
        )
    num_cpus = cfg.ray.num_cpus or max(cores, needed)
    if num_cpus < needed:
        raise UserError(
            f"one trial needs {needed} CPUs (1 + run.resources.num_env_runners x "
            f"num_cpus_per_env_runner) but ray.num_cpus={num_cpus}. Raise ray.num_cpus or "
            "lower run.resources.num_env_runners."
        )
    ray.init(
        num_cpus=num_cpus,
        object_store_memory=cfg.ray.object_store_memory,
        **kwargs,
    )
    return True
