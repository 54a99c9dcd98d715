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


def runs_in_parallel_here(config: DictConfig) -> bool:
    target = str(config.hydra.launcher.get("_target_", ""))
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

        configure_ray()
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
