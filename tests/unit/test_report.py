"""`mobrl report`: grouping by what differs, numbers equal to the runs' own progress.csv,
figures with the data behind them, partial data reported, bad input as one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mobrl.core import metrics as keys
from mobrl.reporting import build_report, discover, group_trials

RETURN = keys.RETURN_MEAN
UTILITY = keys.result_key(keys.UTILITY_MEAN)


def make_run(root: Path, name: str, algo: str, seed: int, slope: float, finished: bool = True):
    """A run dir laid out as `mobrl train` writes it, with one trial of 10 iterations."""
    run = root / name
    trial = run / "tune" / f"{algo.upper()}_{seed}_00000"
    trial.mkdir(parents=True)
    config = {
        "scenario": {"name": "small", "kind": "mobile"},
        "algo": {"name": algo, "training": {"lr": 0.001}},
        "run": {"seed": seed, "name": "default", "stop": {"iterations": 10}},
    }
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "manifest.json").write_text(json.dumps({"scenario": "small", "seed": seed}))
    steps = np.arange(1, 11) * 1000.0
    frame = pd.DataFrame(
        {
            keys.ITERATION: np.arange(1, 11),
            keys.ENV_STEPS: steps,
            keys.TIME_TOTAL: np.arange(1, 11) * 2.0,
            RETURN: -100 + slope * np.arange(1, 11) + seed,
            UTILITY: np.linspace(-0.5, 0.1 * slope, 10),
        }
    )
    frame.to_csv(trial / "progress.csv", index=False)
    if finished:
        summary = {"trials": [{"trial": trial.name, "params": {}, "error": None}]}
        (run / "summary.json").write_text(json.dumps(summary))
    return run, frame


@pytest.fixture
def multirun(tmp_path: Path) -> tuple[Path, dict[str, list[pd.DataFrame]]]:
    """Two algorithms x two seeds, as `mobrl train -m algo=ppo,appo run.seed=0,1` leaves them."""
    frames: dict[str, list[pd.DataFrame]] = {"ppo": [], "appo": []}
    for i, (algo, seed) in enumerate([("ppo", 0), ("ppo", 1), ("appo", 0), ("appo", 1)]):
        _, frame = make_run(
            tmp_path / "multirun", f"{i}_small_{algo}", algo, seed, 5.0 if algo == "ppo" else 2.0
        )
        frames[algo].append(frame)
    return tmp_path / "multirun", frames


def test_runs_that_differ_by_seed_form_one_group(multirun) -> None:
    root, _ = multirun
    groups = group_trials(discover([root]).trials)
    assert sorted(groups) == ["algo.name=appo", "algo.name=ppo"]
    assert [len(trials) for trials in groups.values()] == [2, 2]


def test_report_numbers_equal_the_runs_progress(multirun, tmp_path: Path) -> None:
    root, frames = multirun
    result = build_report([root], tmp_path / "report")
    rows = {r["group"]: r for r in result["tables"][RETURN]}
    for algo, runs in frames.items():
        row = rows[f"algo.name={algo}"]
        last = np.array([f[RETURN].iloc[-1] for f in runs])
        assert row["trials"] == 2
        assert row["last_mean"] == pytest.approx(last.mean())
        # two seeds: t(0.975, 1) * sd / sqrt(2)
        assert row["last_ci95"] == pytest.approx(12.706204736 * last.std(ddof=1) / np.sqrt(2))
        assert row["best_mean"] == pytest.approx(np.mean([f[RETURN].max() for f in runs]))
    curves = {c.label: c for c in result["curves"][RETURN]}
    assert len(curves) == 2 and all(c.n == 2 for c in curves.values())
    ppo = curves["algo.name=ppo"]
    expected = np.mean([np.interp(ppo.x, f[keys.ENV_STEPS], f[RETURN]) for f in frames["ppo"]], 0)
    np.testing.assert_allclose(ppo.mean, expected)
    assert ppo.mean[-1] > curves["algo.name=appo"].mean[-1]  # the steeper group ends higher
    md = (tmp_path / "report" / "report.md").read_text()
    assert "curve_0_env_steps.png" in md and "curve_0_time_s.png" in md  # both x axes
    written = pd.read_csv(tmp_path / "report" / "groups.csv")
    assert sorted(set(written["group"])) == sorted(rows)
    # service first: the UEs' mean utility leads, the return follows
    assert list(result["tables"])[:2] == [UTILITY, RETURN]


def test_report_files_are_written_and_figures_are_not_blank(multirun, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    root, _ = multirun
    out = tmp_path / "report"
    result = build_report([root], out, x="time_s")
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for png in result["files"]:
        assert png.name in md
        assert png.with_suffix(".svg").is_file()
        pixels = mpimg.imread(png)
        assert pixels.std() > 0.01, f"{png.name} is blank"
    assert "service.png" in md  # the runs logged UE utility: small multiples
    assert html.count("data:image/png;base64,") == len(result["files"])
    assert "<table>" in html and "algo.name=ppo" in html


def test_partial_data_is_reported_not_fatal(multirun, tmp_path: Path) -> None:
    root, _ = multirun
    make_run(root, "4_small_ppo", "ppo", 2, 5.0, finished=False)  # still running
    crashed, _ = make_run(root, "5_small_ppo", "ppo", 3, 5.0)
    (crashed / "tune" / "PPO_3_00000" / "progress.csv").write_text("")  # died before a result
    summary = json.loads((crashed / "summary.json").read_text())
    summary["trials"][0]["error"] = "RayActorError: the actor died"
    (crashed / "summary.json").write_text(json.dumps(summary))
    result = build_report([root], tmp_path / "report")
    assert any("running" in note for note in result["notes"])
    assert any("error" in note for note in result["notes"])
    assert len(result["groups"]["algo.name=ppo"]) == 4
    assert "## Notes" in (tmp_path / "report" / "report.md").read_text()


def test_groups_of_three_seeds_get_an_iqm_with_a_bootstrap_interval(
    multirun, tmp_path: Path
) -> None:
    from scipy import stats

    root, frames = multirun
    _, extra = make_run(root, "4_small_ppo", "ppo", 7, 5.0)  # an outlying third seed
    result = build_report([root], tmp_path / "report")
    rows = {r["group"]: r for r in result["tables"][RETURN]}
    last = np.array([f[RETURN].iloc[-1] for f in frames["ppo"] + [extra]])
    ppo = rows["algo.name=ppo"]
    # rliable's IQM: the mean of the middle half; with 3 values scipy trims a quarter of each end
    assert ppo["last_iqm"] == pytest.approx(stats.trim_mean(last, 0.25))
    assert ppo["last_iqm_low"] <= ppo["last_iqm"] <= ppo["last_iqm_high"]
    assert last.min() <= ppo["last_iqm_low"] < ppo["last_iqm_high"] <= last.max()
    assert np.isnan(rows["algo.name=appo"]["last_iqm"])  # two seeds: no aggregate
    md = (tmp_path / "report" / "report.md").read_text()
    assert "aggregate_0.png" in md and "IQM" in md
    assert (tmp_path / "report" / "aggregate_0.png").is_file()
    # the same data, the same interval: the bootstrap is seeded
    again = build_report([root], tmp_path / "again")["tables"][RETURN]
    assert {r["group"]: r["last_iqm_low"] for r in again}["algo.name=ppo"] == ppo["last_iqm_low"]


def test_evaluation_dirs_get_their_chart(tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    folder.mkdir()
    stats = {"return": {"mean": -30.0, "ci95": 5.0, "n": 20}}
    summary = {
        "policies": {"trained": stats, "greedy": {"return": {"mean": -36.0, "ci95": 6.0, "n": 20}}},
        "paired_vs_trained": {"greedy": {"return_diff_mean": 6.0, "ci95": 3.0, "n": 20}},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "episodes.csv").write_text("policy,episode,seed,return\n")
    result = build_report([folder], tmp_path / "report")
    assert [p.name for p in result["files"]] == ["evaluation_0.png"]
    assert "-30.00 ± 5.00" in (tmp_path / "report" / "report.md").read_text()


def test_generalisation_matrix_dirs_get_a_heat_map(tmp_path: Path) -> None:
    folder = tmp_path / "matrix"
    folder.mkdir()
    cells = [
        {"trained_on": t, "evaluated_on": e, "policy": "trained",
         "gap_vs_greedy_mean": gap, "gap_vs_greedy_ci95": 1.5}
        for t, e, gap in [("medium", "small", 14.8), ("medium", "large", 81.2),
                          ("small", "small", 10.3), ("small", "large", -2.0)]
    ] + [{"trained_on": "medium", "evaluated_on": "small", "policy": "greedy"}]  # fmt: skip
    matrix = {"scenarios": ["small", "large"], "baselines": ["greedy"], "cells": cells}
    (folder / "matrix.json").write_text(json.dumps(matrix))
    result = build_report([tmp_path], tmp_path / "report")
    assert [p.name for p in result["files"]] == ["matrix_0.png"]
    table = result["matrices"][0]
    assert table == [
        {"trained on": "medium", "small": "14.80 ± 1.50", "large": "81.20 ± 1.50"},
        {"trained on": "small", "small": "10.30 ± 1.50", "large": "-2.00 ± 1.50"},
    ]
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Generalisation matrix" in md and "81.20 ± 1.50" in md


def test_progress_with_a_cut_last_row_and_repeated_iterations(tmp_path) -> None:
    """A cut last row ("-20.48" written as "-2") never becomes a number in a report, and
    iterations that a resumed run wrote twice count once (the later rows)."""
    from mobrl.reporting.runs import read_progress

    path = tmp_path / "progress.csv"
    path.write_text(
        "training_iteration,env_runners/episode_return_mean\n"
        "1,-30.0\n2,-25.0\n3,-24.0\n2,-26.0\n3,-23.5\n4,-2"  # cut mid-number, no newline
    )
    notes: list[str] = []
    frame = read_progress(path, notes)
    assert frame["training_iteration"].tolist() == [1, 2, 3]
    assert frame["env_runners/episode_return_mean"].tolist() == [-30.0, -26.0, -23.5]
    assert any("cut short" in n for n in notes) and any("[2, 3]" in n for n in notes)
    path.write_text("training_iteration,x\n1,1.0\n")
    notes.clear()
    assert len(read_progress(path, notes)) == 1 and notes == []


def test_progress_csv_is_repaired_after_a_resume(tmp_path) -> None:
    """After --resume: repeated iterations keep their later rows; a progress.csv that no
    longer parses is rebuilt from result.json (whose cut last line is skipped)."""
    import json

    import pandas as pd

    from mobrl.training.raysession import repair_progress_csv

    trial = tmp_path / "PPO_x"
    trial.mkdir()
    rows = [{"training_iteration": i, "ret": float(i)} for i in (1, 2, 3, 2, 3, 4)]
    rows[3]["ret"] = rows[4]["ret"] = -1.0  # the resumed run's rows
    pd.DataFrame(rows).to_csv(trial / "progress.csv", index=False)
    repair_progress_csv(trial)
    frame = pd.read_csv(trial / "progress.csv")
    assert frame["training_iteration"].tolist() == [1, 2, 3, 4]
    assert frame["ret"].tolist() == [1.0, -1.0, -1.0, 4.0]

    (trial / "progress.csv").write_text("training_iteration,ret\n1,1.0\n2,2.0,extra,cols\n")
    lines = [json.dumps(r) for r in rows[:3]] + ['{"training_iteration": 4, "re']
    (trial / "result.json").write_text("\n".join(lines))
    repair_progress_csv(trial)
    assert pd.read_csv(trial / "progress.csv")["training_iteration"].tolist() == [1, 2, 3]
