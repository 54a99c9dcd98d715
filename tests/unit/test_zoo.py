"""The model zoo: shipped entries load without Ray or torch, act, and beat greedy; files are
plain arrays that cannot run code; bad references are one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.evaluation import zoo
from mobrl.evaluation.paired import mean_ci

ENTRIES = zoo.names()
#: the entries of cell agents (env=cells, env=hierarchical), measured against the cell rules
CELL_ENTRIES = [n for n in ENTRIES if zoo.entry(n).get("env_mode") in ("cells", "hierarchical")]
UE_ENTRIES = [n for n in ENTRIES if n not in CELL_ENTRIES]


def test_the_zoo_ships_policies_with_their_provenance() -> None:
    assert ENTRIES, "mobrl ships at least one zoo policy"
    for name in ENTRIES:
        meta = zoo.entry(name)
        for key in ("command", "mobrl_commit", "training", "evaluation", "env_config"):
            assert meta.get(key), (name, key)
        assert meta["training"]["env_steps"] > 0 and meta["training"]["wall_time_s"] > 0
        # the recorded held-out evaluation: >= 100 paired episodes in which the policy serves
        # the UEs better than greedy (CI of the paired utility gap above 0), connecting as
        # many UEs and serving the worst-off (p5) as well, within 0.01
        ev = meta["evaluation"]
        assert ev["episodes"] >= 100 and ev["explore"] is False
        size = (zoo.entries_dir() / f"{name}.npz").stat().st_size
        assert size < 200 * 1024, f"{name}.npz is {size} bytes: keep the wheel lean"
        if name in CELL_ENTRIES:
            # against O-RAN's threshold rule: a better objective (CI above 0), serving as well
            # (p5 and connected within 0.01), and less energy than all_on
            diff = ev["paired_vs_trained"]["threshold"]["diff"]
            gap = diff["network/objective"]
            assert gap["mean"] - gap["ci95"] > 0, (name, gap)
            for key in ("network/connected_fraction", "ue/utility/p5"):
                assert diff[key]["mean"] >= -0.01, (name, key, diff[key])
            assert ev["paired_vs_trained"]["all_on"]["diff"]["network/energy"]["mean"] < 0
            continue
        diff = ev["paired_vs_trained"]["greedy"]["diff"]
        gap = diff["ue/utility/mean"]
        assert gap["mean"] - gap["ci95"] > 0, (name, gap)
        for key in ("network/connected_fraction", "ue/utility/p5"):
            assert diff[key]["mean"] >= -0.01, (name, key, diff[key])
        assert ev["gap_closed"] > 0, name  # of greedy -> oracle, in mean UE utility


#: UE-steps of the paired episodes below: 20 episodes of a small layout, 5 of a 57-UE one, 3 of
#: a city-scale one (each of its episodes averages 1,000 UEs)
UE_STEPS = 30_000


@pytest.mark.parametrize("name", CELL_ENTRIES)
def test_cell_entry_beats_threshold_on_paired_episodes(name: str) -> None:
    """Inference only, no Ray: a cell agent entry's objective above O-RAN's threshold rule's
    on the same 10 episodes."""
    from mobrl.evaluation.policies import make_baseline
    from mobrl.evaluation.rollout import run_episode

    policy = zoo.ZooPolicy.load(f"zoo:{name}")
    key = "network/objective"
    gaps = [
        run_episode(policy.env_config, policy, s)[key]
        - run_episode(policy.env_config, make_baseline("threshold"), s)[key]
        for s in range(10)
    ]
    assert np.mean(gaps) > 0, gaps


@pytest.mark.parametrize("name", UE_ENTRIES)
def test_entry_serves_better_than_greedy_on_paired_episodes(name: str) -> None:
    """Inference only, no Ray: mean UE utility above greedy's on the same episodes (20, or as
    many as make `UE_STEPS` on a city-scale layout)."""
    from mobrl.evaluation.policies import GreedyPolicy
    from mobrl.evaluation.rollout import run_episode

    policy = zoo.ZooPolicy.load(f"zoo:{name}")
    env_config = policy.env_config
    layout = zoo.entry(name)["env_config"]["layout"]
    per_episode = layout["ues"]["count"] * layout["episode_length"]
    seeds = range(max(3, min(20, UE_STEPS // per_episode)))
    key = "ue/utility/mean"
    gaps = [
        run_episode(env_config, policy, s)[key] - run_episode(env_config, GreedyPolicy(), s)[key]
        for s in seeds
    ]
    mean, half, _ = mean_ci(gaps)
    assert mean > 0, (mean, half)


def test_zoo_files_hold_arrays_only(tmp_path) -> None:
    """A pickled object in a zoo file is refused, not executed."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.npz"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    np.savez(evil, layers=np.array([Boom()], dtype=object))
    with pytest.raises(UserError, match="damaged"):
        zoo.load_layers(evil)
    assert not marker.exists()


def test_unknown_zoo_name_names_the_closest() -> None:
    if not ENTRIES:
        pytest.skip("no entries")
    with pytest.raises(UserError, match=f"Did you mean '{ENTRIES[0]}'"):
        zoo.entry(f"zoo:{ENTRIES[0]}x")


def test_numpy_network_matches_layers_math() -> None:
    rng = np.random.default_rng(0)
    w0, b0 = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=4).astype(np.float32)
    w1, b1 = rng.normal(size=(2, 4)).astype(np.float32), rng.normal(size=2).astype(np.float32)
    layers = [("linear", (w0, b0)), ("activation", "Tanh"), ("linear", (w1, b1))]
    x = rng.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(zoo.logits(layers, x), np.tanh(x @ w0.T + b0) @ w1.T + b1, 1e-6)
    policy = zoo.ZooPolicy(layers, {}, nvec=[1, 1])
    assert policy.actions(x).shape == (5, 2)
    assert json.dumps(zoo.names())  # names are plain strings


def test_readme_zoo_table_is_what_mobrl_prints(capsys) -> None:
    from pathlib import Path

    from mobrl.evaluation.zoo.commands import list_command

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("<!-- zoo table: produced by `mobrl zoo list --markdown` -->")
    block = readme[start : readme.index("<!-- end zoo table -->")].split("\n", 1)[1]
    list_command(markdown=True)
    assert block.strip() == capsys.readouterr().out.strip()


def test_zoo_list_reads_at_80_columns_and_as_json(capsys) -> None:
    from mobrl.evaluation.zoo.commands import list_command

    list_command(width=80)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out  # nothing cut
    for name in zoo.names():
        assert f"│ zoo:{name} " in out  # whole names in the table
    list_command(as_json=True)
    records = json.loads(capsys.readouterr().out)
    assert {r["policy"] for r in records} == {f"zoo:{n}" for n in zoo.names()}
    for r in records:
        if r["policy"].removeprefix("zoo:") in CELL_ENTRIES:
            assert r["energy"]["trained"]["network/energy"]["mean"] > 0
            continue
        assert r["vs_greedy"]["ue/utility/mean"]["mean"] > 0 and 0 < r["gap_closed"]
        assert r["gap_reference"] in ("oracle", "oracle2")


def test_export_reads_the_training_progress_of_a_trial_whose_last_line_was_cut(
    tmp_path,
) -> None:
    """A trial stopped mid-write leaves half a line in result.json: the entry's training
    progress is the last whole result written before the checkpoint, not an error."""
    import os

    from mobrl.evaluation.zoo.commands import _trial_progress

    checkpoint = tmp_path / "checkpoint_000001"
    checkpoint.mkdir()
    saved = checkpoint.stat().st_mtime
    rows = [
        {"training_iteration": i, "num_env_steps_sampled_lifetime": 200 * i,
         "time_total_s": 1.5 * i, "timestamp": saved - 10 + i}
        for i in (1, 2)
    ] + [{"training_iteration": 3, "timestamp": saved + 60}]  # fmt: skip
    text = "\n".join(json.dumps(r) for r in rows)
    (tmp_path / "result.json").write_text(text + '\n{"training_iteration": 4, "time')
    os.utime(checkpoint, (saved, saved))
    assert _trial_progress(checkpoint) == {
        "iteration": 2, "env_steps": 400, "wall_time_s": 3.0, "imitation_s": 0.0,
        "evaluation_s": 0.0,
    }  # fmt: skip


def test_milestones_count_imitation_and_leave_out_evaluation() -> None:
    """When a run first beat greedy and first closed 90 % of the gap: the first evaluated
    result that did, as training time (imitation before RL plus the iterations' own time);
    None when never reached; absent when the run did not measure it."""
    from mobrl.evaluation.zoo.commands import milestones

    def row(i: int, beats: float, closed: float | None) -> dict:
        ev = {"beats": {"greedy": beats}, "iteration": i, "time_total_s": 20.0 * i}
        if closed is not None:
            ev["closed"] = closed
        return {
            "training_iteration": i, "time_total_s": 5.0 * i,
            "num_env_steps_sampled_lifetime": 2000 * i, "imitation": {"time_s": 40.0},
            "evaluation": ev,
        }  # fmt: skip

    rows = [row(1, 0.0, 0.5), row(2, 1.0, 0.85), row(3, 1.0, 0.93), row(4, 1.0, 0.95)]
    assert milestones(rows) == {
        "beat_greedy": {"s": 50.0, "env_steps": 4000, "iteration": 2},
        "closed_90": {"s": 55.0, "env_steps": 6000, "iteration": 3},
    }
    assert milestones(rows[:2]) == {
        "beat_greedy": {"s": 50.0, "env_steps": 4000, "iteration": 2}, "closed_90": None,
    }  # fmt: skip
    resumed = rows[:2] + [{k: v for k, v in r.items() if k != "imitation"} for r in rows[2:]]
    assert milestones(resumed) == milestones(rows)  # a resumed run does not imitate again
    unmeasured = [{k: v for k, v in r.items() if k != "evaluation"} for r in rows]
    assert milestones(unmeasured) == {}


def test_a_share_reads_as_a_person_reads_it() -> None:
    """Below greedy and above the reference are said in words; in between, a percentage."""
    from mobrl.evaluation.paired import closed_text

    assert closed_text(None) == "-"
    assert closed_text(-0.2) == "below greedy"
    assert closed_text(0.934) == "93%"
    assert closed_text(1.0) == "100%"
    assert closed_text(2.92) == "above the reference (292%)"
