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
    # not a terminal: the progress is plain lines, the last one when every episode is done
    assert "21 episodes (" in result.stdout and ": 21/21 (100%), " in result.stdout
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


def _episodes(folder) -> dict[tuple[str, int], dict[str, float]]:
    """episodes.csv of an evaluation or a matrix: each (policy, seed)'s measures."""
    import pandas as pd

    frame = pd.read_csv(folder / "episodes.csv").drop(
        columns=["trained_on", "evaluated_on", "episode"], errors="ignore"
    )
    return {(r.pop("policy"), int(r.pop("seed"))): r for r in frame.to_dict("records")}


def _evaluate_both_ways(mobrl_cli, cwd, layout: str) -> tuple:
    """`zoo:small` on `layout` named as scenario=LAYOUT and as --scenarios LAYOUT, same seeds:
    (single evaluation's output dir and stdout, matrix output dir)."""
    args = ["--episodes", "2", "--seed", "5", "--baselines", "greedy", "--workers", "1"]
    single, matrix = cwd / "single", cwd / "matrix"
    named = mobrl_cli(
        "evaluate", "--checkpoint", "zoo:small", f"scenario={layout}", *args,
        "--output", str(single), cwd=cwd, timeout=180,
    )  # fmt: skip
    assert named.returncode == 0, named.stdout + named.stderr
    listed = mobrl_cli(
        "evaluate", "--checkpoint", "zoo:small", "--scenarios", layout, *args,
        "--output", str(matrix), cwd=cwd, timeout=180,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    return single, named.stdout, matrix


@pytest.mark.parametrize("layout", ["medium", "campus"])
def test_a_policy_plays_a_named_layout_with_its_own_observation(
    mobrl_cli, tmp_path, layout: str
) -> None:
    """scenario=LAYOUT (a built-in, or the user's ./scenarios/campus.yaml) plays the zoo
    policy with its env.obs/env.topk, the episodes `--scenarios LAYOUT` plays."""
    from mobrl import scenarios

    if layout == "campus":  # the README's way to a layout of one's own
        (tmp_path / "scenarios").mkdir()
        shown = mobrl_cli("scenarios", "show", "small", cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        (tmp_path / "scenarios" / "campus.yaml").write_text(shown.stdout)
    single, printed, matrix = _evaluate_both_ways(mobrl_cli, tmp_path, layout)
    summary = json.loads((single / "summary.json").read_text())
    assert (summary["scenario"], summary["trained_on"]) == (layout, "small")
    env = summary["env_config"]
    assert (env["scenario"], env["obs"], env["topk"], env["mode"]) == (layout, "topk_gain", 3, "ma")
    source = tmp_path / "scenarios" / "campus.yaml" if layout == "campus" else None
    assert env["layout"] == scenarios.load(source or scenarios.path_of(layout))
    assert f"playing {layout} with its env=ma env.obs=topk_gain env.topk=3" in printed
    assert f"{layout}: 2 episodes per policy" in printed  # the table's header
    mine, theirs = _episodes(single), _episodes(matrix)
    assert mine.keys() == theirs.keys() == {(p, s) for p in ("trained", "greedy") for s in (5, 6)}
    for key, row in mine.items():
        assert row == pytest.approx(theirs[key], rel=1e-12, abs=1e-12), key


def test_a_contradicting_observation_is_one_line(mobrl_cli, tmp_path) -> None:
    out = tmp_path / "out"
    result = mobrl_cli(
        "evaluate", "--checkpoint", "zoo:small", "scenario=medium", "env.obs=mobile",
        "--output", str(out), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "trained with env.obs=topk_gain, not env.obs=mobile: drop env.obs=mobile" in lines[0]
    assert not out.exists()


def test_a_killed_evaluation_continues_where_it_stopped(mobrl_cli, tmp_path) -> None:
    """An evaluation killed outright (its workers too) keeps the episodes it played: the same
    command continues from them, and its files equal those of an evaluation never stopped."""
    import os
    import signal
    import subprocess
    import sys
    import time

    args = ["evaluate", "--checkpoint", "zoo:small", "--episodes", "12",
            "--baselines", "greedy,oracle", "--workers", "2"]  # fmt: skip
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    result = mobrl_cli(*args, "--output", str(whole), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr

    journal = cut / ".episodes.journal"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", *args, "--output", str(cut)], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.is_file() and len(journal.read_text().splitlines()) > 6:
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to tidy up: its claim stays too
        proc.wait()
    played = len(journal.read_text().splitlines()) - 1
    assert 6 <= played < 36, f"{played} episodes played before the kill"

    longer = [a if a != "12" else "13" for a in args]
    other = mobrl_cli(*longer, "--output", str(cut), cwd=tmp_path, timeout=120)
    assert other.returncode == 2 and "holds an unfinished evaluation with other" in other.stderr
    assert journal.is_file()  # nothing already played lost

    again = mobrl_cli(*args, "--output", str(cut), cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "played before" in again.stdout + again.stderr
    assert (cut / "episodes.csv").read_text() == (whole / "episodes.csv").read_text()
    one, two = (json.loads((d / "summary.json").read_text()) for d in (whole, cut))
    assert one["policies"] == two["policies"] and one["gap_closed"] == two["gap_closed"]
    assert sorted(p.name for p in cut.iterdir()) == ["episodes.csv", "summary.json"]
