"""`mobrl evaluate` and `mobrl baselines` as processes: errors that write nothing, paired files."""

from __future__ import annotations

import json

import pytest

ERRORS = [
    (["--checkpoint", "{tmp}/nope"], ["does not exist"]),
    (["--checkpoint", "{tmp}/empty"], ["no RLlib checkpoint under"]),
    (["--checkpoint", "{tmp}/corrupt"], ["could not be restored"]),
    (["--checkpoint", "{tmp}/corrupt", "--baselines", "greedyy"], ["unknown baseline 'greedyy'"]),
    (["--checkpoint", "{tmp}/nomanifest"], ["no mobrl manifest", "scenario=small env=ma"]),
    (["--checkpoint", "{tmp}/cut"], ["is incomplete (a file cut short"]),
]


@pytest.mark.parametrize("args,expected", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_evaluate_errors_exit_2_and_write_nothing(mobrl_cli, tmp_path, args, expected) -> None:
    (tmp_path / "empty").mkdir()
    import pickle

    junk = pickle.dumps("junk")  # a whole pickle, but no module state
    for name, state in (("corrupt", junk), ("nomanifest", junk), ("cut", junk[:-3])):
        ckpt = tmp_path / name / "checkpoint_000000"
        (ckpt / "learner_group" / "learner" / "rl_module").mkdir(parents=True)
        (ckpt / "rllib_checkpoint.json").write_text("{}")
        (ckpt / "learner_group" / "learner" / "rl_module" / "module_state.pkl").write_bytes(state)
    manifest = {"env_config": {"kind": "mobile", "id": "small", "mode": "ma", "kwargs": {}}}
    for name in ("corrupt", "cut"):
        (tmp_path / name / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "out"
    argv = [a.format(tmp=tmp_path) for a in args]
    result = mobrl_cli("evaluate", *argv, "--output", str(out), cwd=tmp_path, timeout=180)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in expected:
        assert fragment in lines[0]
    assert not out.exists()


def test_baselines_command_writes_paired_episodes(mobrl_cli, tmp_path) -> None:
    out = tmp_path / "out"
    result = mobrl_cli(
        "baselines",
        "scenario=small",
        "env=central",
        "--episodes",
        "3",
        "--workers",
        "1",
        "--output",
        str(out),
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    import pandas as pd

    frame = pd.read_csv(out / "episodes.csv")
    expected = ["capped", "full", "greedy", "greedy_fill", "noop", "oracle", "random"]
    assert sorted(frame.policy.unique()) == expected
    for _, group in frame.groupby("policy"):
        assert list(group.seed) == [0, 1, 2]
    summary = json.loads((out / "summary.json").read_text())
    noop = summary["policies"]["noop"]
    assert noop["network/connected_fraction"]["mean"] == 0.0
    assert summary["policies"]["greedy"]["return"]["mean"] > noop["return"]["mean"]
    # without a checkpoint each baseline is paired with greedy, in every measure
    oracle = summary["paired_vs_greedy"]["oracle"]["diff"]["ue/utility/mean"]
    assert oracle["mean"] >= 0 and oracle["n"] == 3
