"""Which runs train in mobrl's own process (run.executor) and which need Tune and Ray."""

from __future__ import annotations

import pytest

from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.training.executor import in_driver, tune_reason


@pytest.mark.parametrize(
    "overrides",
    [
        ["run=smoke"],
        ["scenario=cartpole"],
        ["run=quick", "env=central"],
        ["run.eval.interval=1"],
        ["run.fault.inject.what=env_error", "run.fault.inject.at=5"],
    ],
)
def test_one_trial_with_nothing_remote_trains_in_the_driver(overrides: list[str]) -> None:
    cfg = compose(overrides)
    assert tune_reason(cfg) is None and in_driver(cfg)


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (["run.executor=tune"], "run.executor=tune"),
        (["ray.address=10.0.0.5:6379"], "ray.address"),
        (["tune=lr_grid"], "several trials"),
        (["tune.num_samples=2"], "several trials"),
        (["tune=random_asha"], "several trials"),
        (["tune.scheduler=asha"], "tune.scheduler=asha"),
        (["run.resources.num_env_runners=1"], "env-runner actors"),
        (["algo=appo"], "env-runner actors"),
        (["run.resources.num_learners=1"], "learner actors"),
        (["run.fault.max_failures=1"], "run.fault.max_failures"),
        (["run.fault.inject.what=trial_exit", "run.fault.inject.at=1"], "trial_exit"),
        (["run.fault.inject.what=env_exit", "run.fault.inject.at=1"], "env_exit"),
    ],
)
def test_runs_that_need_ray_keep_tune(overrides: list[str], reason: str) -> None:
    cfg = compose(overrides)
    assert reason in (tune_reason(cfg) or "")
    assert not in_driver(cfg)
    cfg.run.executor = "driver"
    if reason != "run.executor=tune":  # insisting on the driver is a one-line error
        with pytest.raises(UserError, match="run.executor=driver cannot train this run"):
            in_driver(cfg)


def test_a_parallel_multirun_job_keeps_tune(monkeypatch) -> None:
    from mobrl.training.raysession import SHARED_RAY_ENV

    monkeypatch.setenv(SHARED_RAY_ENV, "127.0.0.1:6379")
    assert "parallel multirun" in (tune_reason(compose(["run=smoke"])) or "")


def test_an_unknown_executor_is_one_line_with_the_closest_value() -> None:
    cfg = compose(["run=smoke"])
    cfg.run.executor = "drive"
    with pytest.raises(UserError, match="'drive'. Did you mean 'driver'"):
        in_driver(cfg)
