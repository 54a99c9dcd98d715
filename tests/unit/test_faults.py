"""Faults made on purpose: each is made the planned number of times, across processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from mobrl.core.errors import error_summary
from mobrl.core.faults import InjectedFault, TrialExit, arm_env, claim, made, plan
from mobrl.training.checks import validate_command_line


def _plan(tmp_path: Path, *overrides: str) -> dict:
    cfg = validate_command_line(["run=smoke", *overrides])
    return plan(cfg.run.fault.inject, tmp_path)  # type: ignore[return-value]


def test_no_fault_unless_asked(tmp_path: Path) -> None:
    assert _plan(tmp_path) is None
    env = object()
    assert arm_env(env, None) is env


def test_claims_are_limited_to_times(tmp_path: Path) -> None:
    fault = _plan(tmp_path, "run.fault.inject.what=env_error", "run.fault.inject.times=2")
    assert [claim(fault) for _ in range(4)] == [True, True, False, False]
    assert made(tmp_path) == ["env_error-0", "env_error-1"]


def _claim_in_process(fault: dict, queue) -> None:
    queue.put(claim(fault))


def test_claims_are_atomic_across_processes(tmp_path: Path) -> None:
    fault = _plan(tmp_path, "run.fault.inject.what=env_exit", "run.fault.inject.times=3")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_claim_in_process, args=(fault, queue)) for _ in range(6)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert sorted(queue.get(timeout=5) for _ in procs) == [False] * 3 + [True] * 3


class _Counter:
    def __init__(self) -> None:
        self.steps = 0

    def step(self, action):
        self.steps += 1
        return action


def test_an_armed_env_raises_at_its_nth_step_once(tmp_path: Path) -> None:
    fault = _plan(tmp_path, "run.fault.inject.what=env_error", "run.fault.inject.at=3")
    first, second = arm_env(_Counter(), fault), arm_env(_Counter(), fault)
    assert [first.step(i) for i in range(2)] == [0, 1]
    with pytest.raises(InjectedFault, match="env_error at step 3"):
        first.step(2)
    assert first.steps == 2  # the failing step never reached the env
    # a restarted copy passes the same step: the one fault of the run was made
    assert [second.step(i) for i in range(5)] == list(range(5))


def test_trial_exit_is_not_armed_in_envs(tmp_path: Path) -> None:
    fault = _plan(tmp_path, "run.fault.inject.what=trial_exit", "run.fault.inject.at=1")
    env = _Counter()
    assert arm_env(env, fault) is env
    callback = TrialExit(fault)
    callback(result={"training_iteration": 2})  # not its iteration: nothing happens
    assert made(tmp_path) == []


def test_error_summary_names_the_cause() -> None:
    text = (
        "Failure # 1 (occurred at 2026-01-01)\nray::PPO.train() (pid=1)\n"
        '  File "x.py", line 1\nmobrl.faults.InjectedFault: env_error at step 5\n\n'
        "The above exception was the direct cause of the following exception:\nRuntimeError\n"
    )
    assert error_summary(text) == "mobrl.faults.InjectedFault: env_error at step 5"
    died = "Failure # 1 (occurred at x)\nThe actor died unexpectedly.\n\tclass_name: PPO\n"
    assert error_summary(died) == "The actor died unexpectedly."
    assert error_summary("") == "no message"
