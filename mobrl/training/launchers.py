"""Parallel multirun: one Ray instance shared by the jobs Hydra's joblib launcher runs side by
side on this machine.

Each `mobrl train` job otherwise starts a Ray of its own sized to the whole machine, so n
parallel jobs would claim n times its CPUs. With `hydra/launcher=joblib` and no `ray.address`,
this callback starts one local Ray before the first job and stops it after the last; every job
joins it, so Ray's scheduler holds the trials of all jobs to the machine's CPUs (a job whose
trial does not fit yet waits for one to finish) and Ray starts once instead of once per job.
Jobs on SLURM (`hydra/launcher=submitit_slurm`) each get a node and start their own Ray.
"""

from __future__ import annotations

import os
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mobrl.training.raysession import SHARED_RAY_ENV, shared_ray_address

#: launchers whose jobs run side by side on this machine
PARALLEL_LAUNCHERS = ("JoblibLauncher",)


def runs_in_parallel_here(config: Any) -> bool:
    launcher = config["hydra"]["launcher"] if isinstance(config, dict) else config.hydra.launcher
    target = str(launcher.get("_target_", ""))
    return target.rsplit(".", 1)[-1] in PARALLEL_LAUNCHERS


class SharedRay(Callback):
    """Hydra callback: one local Ray for a multirun whose jobs run in parallel on this machine."""

    def __init__(self) -> None:
        self.started = False

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not runs_in_parallel_here(config) or config.ray.address or shared_ray_address():
            return
        import ray

        from mobrl.training.raysession import configure_ray, ray_init_kwargs

        configure_ray(config.ray.log_level)
        context = ray.init(
            num_cpus=config.ray.num_cpus or os.cpu_count() or 1,
            object_store_memory=config.ray.object_store_memory,
            **ray_init_kwargs(config),
        )
        os.environ[SHARED_RAY_ENV] = context.address_info["gcs_address"]
        self.started = True

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if not self.started:
            return
        import ray

        os.environ.pop(SHARED_RAY_ENV, None)
        ray.shutdown()
        self.started = False


class MultirunReport(Callback):
    """Hydra callback: a multirun says where its jobs went once they are done, and keeps the
    launcher's own long start-up line out of the output."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        import logging

        # e.g. "Joblib.Parallel(n_jobs=2,backend=loky,...) is launching 4 jobs"
        for name in ("hydra_plugins.hydra_joblib_launcher._core", "hydra.core.utils"):
            logging.getLogger(name).setLevel(logging.WARNING)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from pathlib import Path

        from mobrl.core.console import make_console

        folder = Path(config.hydra.sweep.dir).absolute()
        swept = [str(o) for o in config.hydra.overrides.task]
        algorithms = any(o.startswith("algo=") and "," in o for o in swept)
        make_console().print(
            f"[bold]mobrl[/bold] multirun dir: {folder}\n  compare the jobs: mobrl report {folder}"
            + (f"\n  rank the algorithms: mobrl compare {folder}" if algorithms else "")
        )


class JobPrefix:
    """Prefixes every line a job of a parallel multirun writes (`[job 3] ...`), so lines of
    jobs running side by side can be told apart."""

    def __init__(self, stream: Any, prefix: str) -> None:
        self.stream, self.prefix, self.at_start = stream, prefix, True

    def write(self, text: str) -> int:
        out = []
        for piece in text.splitlines(keepends=True):
            if self.at_start and piece.strip():
                out.append(self.prefix)
            out.append(piece)
            self.at_start = piece.endswith("\n")
        self.stream.write("".join(out))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def prefix_job_output() -> None:
    """Inside a job of a parallel multirun: prefix its stdout and stderr lines with its number."""
    import sys

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        hydra = HydraConfig.get()
    except ValueError:  # not inside a Hydra job
        return
    if hydra.mode != RunMode.MULTIRUN or not runs_in_parallel_here({"hydra": hydra}):
        return
    prefix = f"[job {hydra.job.num}] "
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, JobPrefix):  # a worker process runs one job after another
            stream.prefix = prefix
        else:
            setattr(sys, name, JobPrefix(stream, prefix))
