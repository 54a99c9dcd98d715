"""Where a run's trial trains (`run.executor`): in mobrl's own process, without Ray, when it is
one trial that needs nothing remote; otherwise under Ray Tune. The decision only: the loop
that trains in the driver is `driver.py`."""

from __future__ import annotations

from omegaconf import DictConfig

from mobrl.core.errors import UserError

#: values of `run.executor`
EXECUTORS = ("auto", "driver", "tune")


def tune_reason(cfg: DictConfig) -> str | None:
    """Why this run needs Tune and Ray (None: one trial that trains in mobrl's process)."""
    from mobrl.training.algos import env_runners
    from mobrl.training.raysession import shared_ray_address
    from mobrl.training.tuning import space_entries

    fault = cfg.run.fault
    reasons = [
        (cfg.run.executor == "tune", "run.executor=tune"),
        (bool(cfg.ray.address), "it joins a Ray cluster (ray.address)"),
        (bool(shared_ray_address()), "it is a job of a parallel multirun"),
        (
            cfg.tune.num_samples > 1 or bool(space_entries(cfg)),
            "it samples several trials (tune.num_samples, tune.param_space)",
        ),
        (cfg.tune.scheduler != "fifo", f"tune.scheduler={cfg.tune.scheduler} schedules trials"),
        (env_runners(cfg) > 0, "it samples in env-runner actors (run.resources.num_env_runners)"),
        (cfg.run.resources.num_learners > 0, "it learns in learner actors (num_learners)"),
        (
            fault.max_failures > 0,
            "a crashed trial is retried in a new process (run.fault.max_failures)",
        ),
        (
            fault.inject.what in ("env_exit", "trial_exit"),
            f"run.fault.inject.what={fault.inject.what} ends the trial's process",
        ),
    ]
    return next((reason for needed, reason in reasons if needed), None)


def in_driver(cfg: DictConfig) -> bool:
    """Whether the run trains in mobrl's own process (`run.executor`: auto picks the driver
    whenever `tune_reason` finds nothing; driver insists, tune never)."""
    if cfg.run.executor not in EXECUTORS:
        from mobrl.core.errors import unknown_choice

        raise unknown_choice("run.executor", str(cfg.run.executor), EXECUTORS, "Fix it.")
    reason = tune_reason(cfg)
    if reason is not None and cfg.run.executor == "driver":
        raise UserError(
            f"run.executor=driver cannot train this run in mobrl's process: {reason}. "
            "Use run.executor=auto (Tune then runs it)."
        )
    return reason is None
