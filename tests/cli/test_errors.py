"""Bad input through `mobrl` processes: exit code 2, one line naming the bad value and the fix."""

from __future__ import annotations

import pytest

CASES = [
    (["train", "scenario=smal"], ["unknown scenario 'smal'", "Did you mean 'small'"]),
    (["train", "env=centrl"], ["unknown env 'centrl'", "Did you mean 'central'", "ma"]),
    (["train", "algo=ppp"], ["unknown algo 'ppp'", "ppo"]),
    (["train", "run.stop.iteration=3"], ["'run.stop.iteration'", "run.stop.iterations"]),
    (["train", "run.stop.iterations=abc"], ["abc", "Integer"]),
    (["train", "scenario=small,"], ["unknown scenario 'small,'. Did you mean 'small'"]),
    (["train", "scenario"], ["malformed override 'scenario'"]),
    (["train", "env=central", "algo=dqn"], ["algo=dqn", "multidiscrete", "algo=ppo", "env=ma"]),
    (["train", "scenario=gym"], ["scenario.id=", "Gymnasium"]),
    (["train", "scenario=gym", "scenario.id=CartPol-v1"], ["'CartPol-v1'", "CartPole-v1"]),
    (["train", "algo.training.lrr=1"], ["'algo.training.lrr'", "algo.training.lr"]),
    (["train", "run.storage_path=/proc/mobrl"], ["run.storage_path", "/proc/mobrl", "writable"]),
    (["train", "algo=appo", "run.resources.num_env_runners=0"], ["at least 1 env runner"]),
    (["train", "tune.mode=maximum"], ["tune.mode", "max"]),
    (["train", "nonsense=1"], ["unknown config group 'nonsense'"]),
]


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(c[0][1:]) for c in CASES])
def test_bad_input_exits_2_with_one_line(mobrl_cli, tmp_path, args, expected) -> None:
    result = mobrl_cli(*args, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in expected:
        assert fragment in lines[0]
    # nothing was started or written
    assert not (tmp_path / "outputs").exists()
