"""`mobrl report`: grouping by what differs, numbers equal to the runs' own progress.csv,
figures with the data behind them, partial data reported, bad input as one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from mobrl.core import metrics as keys
from mobrl.reporting import build_report, discover, group_trials

RETURN = keys.RETURN_MEAN
UTILITY = keys.result_key(keys.UTILITY_MEAN)


def make_run(
    root: Path,
    name: str,
    algo: str,
    seed: int,
    slope: float,
    finished: bool = True,
    evaluated: bool = False,
):
    """A run dir laid out as `mobrl train` writes it, with one trial of 10 iterations;
    `evaluated`: with every UE measure and evaluation during training (against greedy)."""
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
    if evaluated:
        config["run"]["eval"] = {"metric": "utility", "baselines": ["greedy"]}
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        it = np.arange(1, 11)
        frame[keys.result_key(keys.RATE_MEAN)] = 150_000 + 5_000 * slope * it  # bit/s
        frame[keys.result_key(keys.JAIN_UTILITY)] = 0.7 + 0.01 * it
        frame[keys.result_key(keys.NET_CONNECTED)] = 0.9 + 0.005 * it
        due = it % 2 == 1  # evaluated every other iteration: NaN in between
        section = {
            keys.UTILITY_MEAN: -0.05 + 0.002 * slope * it + 0.001 * seed,
            keys.NET_CONNECTED: 0.95 + 0.003 * it,
            keys.UTILITY_P5: -0.4 + 0.01 * it,
            "return_mean": -60 + slope * it,
            "gap/greedy/mean": -0.03 + 0.001 * slope * it,
        }
        for key, values in section.items():
            frame[f"{keys.EVALUATION}/{key}"] = np.where(due, values, np.nan)
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


def make_evaluation(folder: Path) -> dict:
    """An output dir of `mobrl evaluate` on a mobile-env layout: the trained policy and three
    baselines, every service measure, paired by seed."""
    folder.mkdir(parents=True)
    measures = {  # (mean, ci95) per policy: utility, connected, p5, Jain, return
        "trained": (0.061, 0.004, 0.99, 0.004, -0.21, 0.02, 0.83, 0.01, 210.0, 12.0),
        "greedy": (0.049, 0.005, 0.99, 0.004, -0.23, 0.02, 0.82, 0.01, 5.8, 9.0),
        "full": (-0.022, 0.006, 1.0, 0.0, -0.30, 0.03, 0.80, 0.01, -60.2, 8.0),
        "noop": (-0.95, 0.02, 0.03, 0.01, -1.0, 0.0, 0.50, 0.02, -4800.0, 90.0),
    }
    columns = (keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5, keys.JAIN_UTILITY)
    columns += ("return",)

    def stats(values: tuple) -> dict:
        return {c: {"mean": values[2 * i], "ci95": values[2 * i + 1], "n": 30}
                for i, c in enumerate(columns)}  # fmt: skip

    policies = {name: stats(v) for name, v in measures.items()}
    paired = {}
    for name in ("greedy", "full", "noop"):
        diff = {
            c: {"mean": policies["trained"][c]["mean"] - policies[name][c]["mean"],
                "ci95": 0.5 * policies[name][c]["ci95"], "n": 30}
            for c in columns
        }  # fmt: skip
        paired[name] = {
            "return_diff_mean": diff["return"]["mean"],
            "ci95": diff["return"]["ci95"],
            "n": 30,
            "diff": diff,
        }
    summary = {
        "checkpoint": str(folder.parent / "run" / "checkpoint_000010"),
        "env_config": {"scenario": "medium"},
        "episodes": 30,
        "seed_range": [0, 29],
        "explore": False,
        "policies": policies,
        "reference": "trained",
        "paired_vs_trained": paired,
        "gap_closed": {"trained": 0.4},
        "notes": [],
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "episodes.csv").write_text("policy,episode,seed,return\n")
    return summary


@pytest.fixture
def evaluated(tmp_path: Path) -> Path:
    return make_study(tmp_path)


def make_study(tmp_path: Path) -> Path:
    """Two algorithms x two seeds that logged every UE measure and evaluated during training,
    a `mobrl evaluate` output dir and a generalisation matrix beside them, as one input dir."""
    root = tmp_path / "study"
    for i, (algo, seed) in enumerate([("ppo", 0), ("ppo", 1), ("appo", 0), ("appo", 1)]):
        slope = 5.0 if algo == "ppo" else 2.0
        make_run(root / "multirun", f"{i}_medium_{algo}", algo, seed, slope, evaluated=True)
    make_evaluation(root / "evaluations" / "10-00-00_medium")
    make_matrix(root / "evaluations" / "11-00-00_matrix")
    return root


def make_matrix(folder: Path) -> dict:
    """`mobrl evaluate --scenarios` output: two checkpoints on two layouts, paired gaps to
    greedy in the return and in mean UE utility."""
    folder.mkdir(parents=True)
    cells = [
        {"trained_on": t, "evaluated_on": e, "policy": "trained",
         "gap_vs_greedy_mean": ret, "gap_vs_greedy_ci95": 1.5,
         f"{keys.UTILITY_MEAN}_gap_vs_greedy_mean": util,
         f"{keys.UTILITY_MEAN}_gap_vs_greedy_ci95": 0.004}
        for t, e, ret, util in [("medium", "small", 14.8, 0.012), ("medium", "large", 81.2, -0.006),
                                ("small", "small", 10.3, 0.009), ("small", "large", -2.0, -0.021)]
    ]  # fmt: skip
    matrix = {"scenarios": ["small", "large"], "baselines": ["greedy"], "cells": cells}
    (folder / "matrix.json").write_text(json.dumps(matrix))
    return matrix


#: a raw result key where words belong: `env_runners/...`, `ue/...`, `time_s`, ...
RAW_KEY = re.compile(
    r"\b(env_runners|evaluation|ue|network|fairness|info|learners?)/|\btime_s\b|time_total_s"
    r"|num_env_steps|training_iteration|episode_return_mean"
)


def figure_texts(png: Path) -> list[str]:
    """Every text of a figure (titles, axis labels, ticks, legend), read from the SVG
    written beside its PNG."""
    import xml.etree.ElementTree as ET

    root = ET.parse(png.with_suffix(".svg")).getroot()
    return ["".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")]


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


def test_evaluated_runs_are_reported_service_first_in_words(evaluated, tmp_path: Path) -> None:
    """Runs evaluated during training, a `mobrl evaluate` dir and a matrix: mean UE utility,
    connected UEs and p5 lead with the return beside them; headings, figure titles and axes
    are words with units (data rate in Mbit/s); folders are named relative to the input."""
    out = tmp_path / "report"
    result = build_report([evaluated], out)
    md = (out / "report.md").read_text()
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert "## Evaluation: evaluations/10-00-00_medium" in headings
    assert "## Generalisation matrix: evaluations/11-00-00_matrix" in headings
    assert headings[2:5] == [
        "## Mean UE utility, evaluation during training",
        "## Mean UE utility, training episodes",
        "## Training return (last 20 episodes)",
    ]
    assert "## Evaluation during training" in headings
    assert str(tmp_path) not in md  # no absolute paths
    for text in headings + re.findall(r"!\[([^\]]*)\]", md):
        assert not RAW_KEY.search(text), text
    for png in result["files"]:
        texts = figure_texts(png)
        assert texts and not [t for t in texts if RAW_KEY.search(t)], png.name
    service = figure_texts(out / "service.png")
    assert "Mean UE data rate" in service and "Mbit/s" in service
    # 150,000-400,000 bit/s drawn as 0.15-0.40 Mbit/s
    ticks = [float(t.replace("−", "-")) for t in service if re.fullmatch(r"−?[\d.]+", t)]
    assert ticks and max(ticks) < 1.0
    # `mobrl evaluate`: service first, the return beside it, per policy and paired by seed
    part = md[md.index("## Evaluation: evaluations/10-00-00_medium") :]
    header = next(line for line in part.splitlines() if line.startswith("| policy"))
    assert header == (
        "| policy | mean UE utility | connected UEs | 5th-percentile UE utility "
        "| Jain fairness of UE utility | episode return | episodes |"
    )
    assert "| trained | 0.061 ± 0.004 | 0.990 ± 0.004 | -0.210 ± 0.020 | 0.830 ± 0.010 " in part
    assert "| greedy | +0.012 ± 0.003 | +0.000 ± 0.002 | +0.020 ± 0.010 " in part
    assert "the trained policy closes: 40% (0 %: greedy" in part
    evaluation = figure_texts(out / "evaluation_0.png")
    titles = [t for t in evaluation if t in ("Mean UE utility", "Episode return")]
    assert titles == ["Mean UE utility", "Episode return"]  # utility drawn first
    # evaluation during training: the last evaluation's values, the gap to greedy in utility
    part = md[md.index("## Evaluation during training") : md.index("## Evaluation: ")]
    ppo = [pd.read_csv(f) for f in sorted(evaluated.glob("multirun/*_ppo/tune/*/progress.csv"))]
    last = {
        key: np.array([f[f"evaluation/{key}"].dropna().iloc[-1] for f in ppo])
        for key in (keys.UTILITY_MEAN, keys.NET_CONNECTED, "gap/greedy/mean")
    }
    row = next(line for line in part.splitlines() if line.startswith("| algo.name=ppo"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2].startswith(f"{last[keys.UTILITY_MEAN].mean():.3f} ± ")
    assert cells[3].startswith(f"{last[keys.NET_CONNECTED].mean():.3f} ± ")
    assert cells[-1].startswith(f"{last['gap/greedy/mean'].mean():+.3f} ± ")
    assert "| mean UE utility − greedy, paired |" in part
    # the matrix: a heat map of the gap in mean UE utility, the return's gaps beside it
    assert result["matrices"][0][0] == {
        "trained on": "medium", "small": "0.012 ± 0.004", "large": "-0.006 ± 0.004"
    }  # fmt: skip
    assert "| medium | 14.80 ± 1.50 | 81.20 ± 1.50 |" in md
    groups = pd.read_csv(out / "groups.csv")
    assert f"evaluation/{keys.NET_CONNECTED}" in set(groups["metric"])


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


def test_an_evaluation_with_energy_gets_its_energy_service_figure(tmp_path: Path) -> None:
    """On a layout with power:, an evaluation's report also draws each policy's energy
    against its service (a point per policy, both CIs), service and energy on two axes."""
    from mobrl.evaluation.paired import summarize

    folder = tmp_path / "eval"
    folder.mkdir()
    rows = [
        {"policy": p, "episode": i, "seed": i, "return": 1.0,
         keys.UTILITY_MEAN: u + 0.01 * i, keys.UTILITY_P5: u - 0.1,
         keys.NET_ENERGY: e * (1 + 0.1 * i), keys.NET_POWER: e / 100}
        for p, u, e in (("trained", 0.15, 2.0e5), ("all_on", 0.16, 2.4e5),
                        ("energy_oracle", 0.14, 1.6e5))
        for i in range(3)
    ]  # fmt: skip
    summary = summarize(rows, ["trained", "all_on", "energy_oracle"], {keys.NET_ENERGY: "min"})
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "episodes.csv").write_text("policy,episode,seed,return\n")
    result = build_report([folder], tmp_path / "report")
    assert [p.name for p in result["files"]] == ["evaluation_0.png", "energy_0.png"]
    md = (tmp_path / "report" / "report.md").read_text()
    assert "![Energy and service of each policy on" in md and "energy_0.png" in md
    # (an evaluation without energy draws its one chart: test_evaluation_dirs_get_their_chart)


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


def test_the_paired_table_says_where_lower_is_better() -> None:
    """An evaluation whose env reports a cost (`scenario.metrics` `KEY:REDUCE:min`) says so
    above its paired table: < 0 favours the first policy in that column."""
    from mobrl.evaluation.paired import summarize
    from mobrl.reporting.evaluation_sections import _evaluation_lines

    rows = [
        {"policy": p, "episode": i, "seed": i, "return": r, "info/energy": e}
        for p, returns, energy in (("trained", [5, 7], [2, 4]), ("random", [1, 4], [5, 6]))
        for i, (r, e) in enumerate(zip(returns, energy))
    ]
    cost = summarize(rows, ["trained", "random"], {"info/energy": "min"})
    lines = _evaluation_lines("e", cost, Path("e.png"))
    assert (
        "Trained − each baseline, paired by seed (> 0: the first is better; < 0 for info "
        "energy, where lower is better):" in lines
    )
    plain = _evaluation_lines("e", summarize(rows, ["trained", "random"]), Path("e.png"))
    assert "Trained − each baseline, paired by seed (> 0: the first is better):" in plain
