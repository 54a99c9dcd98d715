"""Evaluation statistics and the error cases that must stop before anything is written."""

from __future__ import annotations

import json

import pytest

from mobrl.evaluation.paired import mean_ci, service_notes, summarize


def test_mean_ci_known_sample() -> None:
    mean, half, n = mean_ci([1, 2, 3, 4, 5])
    # sd = 1.5811, sem = 0.7071, t(0.975, df=4) = 2.7764
    assert mean == 3 and n == 5
    assert half == pytest.approx(2.7764 * 0.70711, rel=1e-3)


def test_mean_ci_edge_cases() -> None:
    mean, half, n = mean_ci([2.0])
    assert mean == 2.0 and half != half and n == 1  # NaN half-width for one sample
    mean, half, _ = mean_ci([4.0, 4.0, 4.0])
    assert mean == 4.0 and half == 0.0


def test_summarize_pairs_by_seed() -> None:
    rows = [
        {"policy": "trained", "episode": 0, "seed": 10, "return": 5.0},
        {"policy": "trained", "episode": 1, "seed": 11, "return": 7.0},
        {"policy": "random", "episode": 0, "seed": 10, "return": 1.0},
        {"policy": "random", "episode": 1, "seed": 11, "return": 4.0},
    ]
    out = summarize(rows, ["trained", "random"])
    assert out["policies"]["trained"]["return"]["mean"] == 6.0
    paired = out["paired_vs_trained"]["random"]
    assert paired["return_diff_mean"] == 3.5 and paired["n"] == 2


def test_a_cost_metric_is_better_lower_in_the_summary_and_the_paired_table() -> None:
    """A `scenario.metrics` entry `KEY:REDUCE:min` is a cost: summary.json records which way
    each measure is better, and the paired table says < 0 favours the first there (the
    differences stay first − second), while the return keeps > 0."""
    from rich.console import Console

    from mobrl.evaluation.paired import senses
    from mobrl.evaluation.tables import better_legend, paired_table, policies_table

    better = senses({"metrics": ["hits", "energy:sum:min"]})
    assert better == {"info/hits": "max", "info/energy": "min"}
    rows = [
        {"policy": p, "episode": i, "seed": i, "return": r, "info/energy": e, "info/hits": h}
        for p, returns, energy, hits in (
            ("trained", [5.0, 7.0], [2.0, 4.0], [1.0, 1.0]),
            ("random", [1.0, 4.0], [5.0, 6.0], [0.0, 1.0]),
        )
        for i, (r, e, h) in enumerate(zip(returns, energy, hits))
    ]
    out = summarize(rows, ["trained", "random"], better)
    assert out["better"] == {"return": "max", "info/energy": "min", "info/hits": "max"}
    diff = out["paired_vs_trained"]["random"]["diff"]
    assert diff["info/energy"]["mean"] == -2.5 and diff["return"]["mean"] == 3.5
    assert better_legend(out) == "> 0: the first better; < 0 for info/energy"
    console = Console(width=300, record=True)
    console.print(paired_table(out, ["return", "info/energy", "info/hits"]))
    console.print(policies_table(out, ["trained", "random"], "small"))
    text = " ".join(console.export_text().split())  # the title wraps at the table's width
    assert "(> 0: the first better; < 0 for info/energy)" in text
    assert text.count("info/energy (lower better)") == 2 and "hits (lower" not in text
    # a summary with no cost, or written before it recorded which way, keeps > 0 alone
    plain = summarize(rows, ["trained", "random"])
    assert set(plain["better"].values()) == {"max"}
    assert better_legend(plain) == better_legend({}) == "> 0: the first better"


def _rows(policy: str, returns: list[float], connected: list[float]) -> list[dict]:
    from mobrl.core import metrics

    return [
        {"policy": policy, "episode": i, "seed": i, "return": r, metrics.NET_CONNECTED: c}
        for i, (r, c) in enumerate(zip(returns, connected))
    ]


def test_a_gain_bought_with_unconnected_ues_is_named() -> None:
    hack = _rows("trained", [20, 22, 21, 23], [0.80, 0.82, 0.81, 0.80])
    greedy = _rows("greedy", [10, 11, 10, 12], [1.0, 1.0, 0.99, 1.0])
    noop = _rows("noop", [0, 0, 0, 0], [0.0, 0.0, 0.0, 0.0])
    (note,) = summarize(hack + greedy + noop, ["trained", "greedy", "noop"])["notes"]
    assert "keeps 81% of UE-steps connected against greedy's 100%" in note
    # the same gain with the same service is not flagged, and neither is a tie in return
    fair = _rows("trained", [20, 22, 21, 23], [0.99, 1.0, 1.0, 0.99])
    assert summarize(fair + greedy, ["trained", "greedy"])["notes"] == []
    tie = _rows("trained", [10, 11.5, 9.5, 12], [0.80, 0.82, 0.81, 0.80])
    assert summarize(tie + greedy, ["trained", "greedy"])["notes"] == []


def test_mixed_scenarios_under_one_path_are_refused(tmp_path) -> None:
    from mobrl.core.errors import UserError
    from mobrl.evaluation.targets import pick_checkpoint

    for job, scenario in (("0_small_ppo", "small"), ("1_cartpole_ppo", "cartpole")):
        ckpt = tmp_path / job / "tune" / "PPO_x" / "checkpoint_000000"
        ckpt.mkdir(parents=True)
        (ckpt / "rllib_checkpoint.json").write_text("{}")
        manifest = {"scenario": scenario, "env_mode": "ma", "env_config": {}}
        (tmp_path / job / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match="runs of 2 scenarios"):
        pick_checkpoint(tmp_path, "best")
    chosen, note = pick_checkpoint(tmp_path / "0_small_ppo", "best")
    assert chosen.name == "checkpoint_000000" and "checkpoint" in note


def test_best_checkpoint_of_a_moved_run_dir_is_found_inside_it(tmp_path) -> None:
    from mobrl.evaluation.targets import _locate

    found = [
        tmp_path / "copy/tune/PPO_1/checkpoint_000000",
        tmp_path / "copy/tune/PPO_1/checkpoint_000001",
    ]
    # the summary still names where the run was trained, not where it is now
    assert _locate("/old/place/tune/PPO_1/checkpoint_000001", found) == found[1]
    assert _locate(str(found[0]), found) == found[0]
    assert _locate("/old/place/tune/PPO_9/checkpoint_000001", found) is None


@pytest.mark.parametrize("workers", [1, 2])
def test_evaluation_reproduces_recorded_episodes(workers: int) -> None:
    """Every policy's return on every seed equals what mobrl evaluate recorded for
    `--checkpoint zoo:small` (seeds 0-11) before evaluation ran in worker processes without Ray."""
    import csv
    from pathlib import Path

    from mobrl.evaluation import zoo
    from mobrl.evaluation.scheduling import run_all
    from mobrl.evaluation.targets import Target

    recorded = Path(__file__).parents[1] / "data" / "evaluate_zoo_small_seeds0-11.csv"
    with recorded.open() as f:
        expected = {(r["policy"], int(r["seed"])): float(r["return"]) for r in csv.DictReader(f)}
    policies = ["trained", "random", "noop", "greedy", "full"]
    target = Target("zoo:small", zoo.entry("small")["env_config"], "")
    rows = run_all(target, policies, list(range(12)), explore=False, workers=workers)
    got = {(r["policy"], r["seed"]): r["return"] for r in rows}
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_paired_service_statistics_are_recomputed_from_episodes_csv(tmp_path) -> None:
    """summary.json's paired service gaps and gap share follow from episodes.csv alone."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    from mobrl.core import metrics
    from mobrl.evaluation.outputs import EvalDir

    def write_results(folder, rows, summary, meta) -> None:
        EvalDir(folder).write_episodes(rows)
        EvalDir(folder).write_summary({**meta, **summary})

    rng = np.random.default_rng(0)
    base = rng.normal(0.0, 0.1, 12)
    shift = {"trained": 0.01, "greedy": 0.0, "oracle": 0.02, "full": -0.03}
    rows = [
        {
            "policy": name,
            "episode": i,
            "seed": 40 + i,
            "return": float(10 * b + rng.normal()),
            metrics.UTILITY_MEAN: float(b + delta + rng.normal(0, 0.003)),
            metrics.NET_CONNECTED: float(0.9 + rng.normal(0, 0.01)),
            metrics.UTILITY_P5: float(b - 0.3 + delta),
            metrics.JAIN_UTILITY: 0.9,
        }
        for name, delta in shift.items()
        for i, b in enumerate(base)
    ]
    policies = list(shift)
    write_results(tmp_path, rows, summarize(rows, policies), {})
    summary = json.loads((tmp_path / "summary.json").read_text())
    frame = pd.read_csv(tmp_path / "episodes.csv").set_index(["policy", "seed"])
    for name in ("greedy", "oracle", "full"):
        for col in (metrics.UTILITY_MEAN, metrics.NET_CONNECTED, metrics.UTILITY_P5, "return"):
            diffs = frame.loc["trained"][col] - frame.loc[name][col]
            half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
            got = summary["paired_vs_trained"][name]["diff"][col]
            assert got["mean"] == pytest.approx(diffs.mean(), abs=1e-12)
            assert got["ci95"] == pytest.approx(half, rel=1e-9)
    means = frame[metrics.UTILITY_MEAN].groupby("policy").mean()
    share = (means["trained"] - means["greedy"]) / (means["oracle"] - means["greedy"])
    assert summary["gap_closed"]["trained"] == pytest.approx(share, rel=1e-9)
    assert 0.2 < share < 0.8


def test_baselines_alone_are_paired_with_greedy() -> None:
    rows = [
        {"policy": p, "episode": i, "seed": i, "return": r + i}
        for p, r in (("greedy", 1.0), ("oracle", 3.0))
        for i in range(3)
    ]
    out = summarize(rows, ["greedy", "oracle"])
    assert out["reference"] == "greedy"
    assert out["paired_vs_greedy"]["oracle"]["diff"]["return"]["mean"] == 2.0  # oracle − greedy


def test_a_return_gain_that_serves_worse_is_named() -> None:
    from mobrl.core import metrics

    rows = [
        {"policy": p, "episode": i, "seed": i, "return": r + i, metrics.NET_CONNECTED: 1.0,
         metrics.UTILITY_MEAN: u + 0.001 * i}
        for p, r, u in (("trained", 30.0, -0.10), ("greedy", 10.0, 0.05))
        for i in range(4)
    ]  # fmt: skip
    summary = summarize(rows, ["trained", "greedy"])
    (note,) = summary["notes"]
    assert "serves the UEs worse (mean UE utility -0.150" in note
    # cell agents trade service for energy by design: no such note for them (`mobrl evaluate`
    # takes the notes again once the summary names what was played)
    for mode in ("cells", "hierarchical"):
        assert service_notes({**summary, "env_config": {"mode": mode}}) == []


def test_blocks_give_what_one_pass_gives(tmp_path) -> None:
    """Episodes played, tallied and written a block at a time (constant memory for any
    --episodes) give the rows, summary and episodes.csv of one pass over all of them; each
    episode's seconds reach the pace, wherever it ran."""
    import pandas as pd

    from mobrl.core.console import Pace
    from mobrl.evaluation import zoo
    from mobrl.evaluation.outputs import EvalDir
    from mobrl.evaluation.scheduling import play_blocks, policy_jobs, run_all

    EPISODES_FILE = EvalDir.EPISODES
    from mobrl.evaluation.paired import Tally
    from mobrl.evaluation.targets import Target

    policies = ["trained", "greedy", "oracle"]
    target = Target("zoo:small", zoo.entry("small")["env_config"], "")
    seeds = range(5, 12)
    whole = run_all(target, policies, seeds, explore=False, workers=1)
    tally, log = Tally(policies), EvalDir(tmp_path / "blocks").episode_log(len(policies))
    (tmp_path / "blocks").mkdir()
    jobs = policy_jobs(target, policies)
    pace = Pace(policies, [len(seeds)] * len(policies))  # told each episode's seconds
    blocks = list(play_blocks(jobs, seeds, explore=False, workers=2, block=3, pace=pace))
    assert [[len(rows) for rows in b] for b in blocks] == [[3] * 3, [3] * 3, [1] * 3]
    assert pace.timed == [7, 7, 7] and pace.todo == [0, 0, 0]
    assert all(s > 0 for s in pace.spent), pace.spent
    for block in blocks:
        tally.add([row for rows in block for row in rows])
        for j, rows in enumerate(block):
            log.add(j, rows)
    log.finish()
    assert sorted(p.name for p in (tmp_path / "blocks").iterdir()) == [EPISODES_FILE]
    streamed = pd.read_csv(tmp_path / "blocks" / EPISODES_FILE)  # by policy, then episode
    EvalDir(tmp_path / "whole").write_episodes(whole)
    pd.testing.assert_frame_equal(streamed, pd.read_csv(tmp_path / "whole" / EPISODES_FILE))
    expected = summarize(whole, policies)
    got = tally.summary()
    assert got.keys() == expected.keys() and got["reference"] == "trained"
    for name, gap in expected["paired_vs_trained"].items():
        for col, stats in gap["diff"].items():
            assert got["paired_vs_trained"][name]["diff"][col]["n"] == stats["n"] == 7
            assert got["paired_vs_trained"][name]["diff"][col]["mean"] == pytest.approx(
                stats["mean"], abs=1e-12
            )
    assert got["gap_closed"] == pytest.approx(expected["gap_closed"], rel=1e-9)


def test_running_moments_match_numpy() -> None:
    import numpy as np

    values = np.random.default_rng(3).normal(5.0, 2.0, 5000)
    mean, half, n = mean_ci(list(values) + [float("nan")])  # NaN: a measure not reported
    sem = values.std(ddof=1) / np.sqrt(values.size)
    assert n == 5000 and mean == pytest.approx(values.mean(), rel=1e-12)
    assert half == pytest.approx(1.96045 * sem, rel=1e-4)
