"""The field's rules (mobrl.evaluation.baselines) through `mobrl baselines`."""

from __future__ import annotations

import json

from mobrl.evaluation.baselines import FIELD_RULES


def test_field_rules_play_through_the_baselines_command(mobrl_cli, tmp_path) -> None:
    out = tmp_path / "out"
    result = mobrl_cli(
        "baselines",
        "scenario=small",
        "--baselines",
        ",".join(["greedy", *FIELD_RULES]),
        "--episodes",
        "2",
        "--workers",
        "1",
        "--output",
        str(out),
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    import pandas as pd

    frame = pd.read_csv(out / "episodes.csv")
    assert sorted(frame.policy.unique()) == sorted(["greedy", *FIELD_RULES])
    for _, group in frame.groupby("policy"):
        assert list(group.seed) == [0, 1]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["paired_vs_greedy"]) >= set(FIELD_RULES)


def test_a_field_rule_outside_mobile_env_is_one_line(mobrl_cli, tmp_path) -> None:
    out = tmp_path / "out"
    for args, fragment in (
        (["scenario=cartpole", "--baselines", "a3"], "baseline 'a3' does not apply"),
        (["scenario=small", "--baselines", "deepcomp_dynamic_eps8"], "unknown baseline"),
        (["scenario=umi_dense", "--baselines", "oracle_rollout"], "at most 16 UEs"),
    ):
        result = mobrl_cli(
            "baselines", *args, "--episodes", "1", "--output", str(out), cwd=tmp_path
        )
        assert result.returncode == 2, result.stdout + result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and fragment in lines[0], result.stderr
        assert not out.exists()
