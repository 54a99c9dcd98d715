"""`mobrl compare` on a real multirun of two algorithms and two seeds: tables on the terminal,
files a script reads back, figures that open; runs that don't line up refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PPO and DQN on CartPole, seeds 0 and 1, 4,000 env steps each under `run=compare`
    (evaluated on 5 episodes as they pass each 1,000 env steps), sampled in the trial's own
    process."""
    sweep_dir = tmp_path_factory.mktemp("compare") / "sweep"
    result = run_mobrl(
        "train", "-m", "scenario=cartpole", "algo=ppo,dqn", "run.seed=0,1", "run=compare",
        "run.stop.env_steps=4000", "run.eval.every_env_steps=1000", "run.eval.episodes=5",
        "run.resources.num_env_runners=0", "run.checkpoint.at_end=false",
        f"hydra.sweep.dir={sweep_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"mobrl compare {sweep_dir}" in result.stdout  # the multirun says how to rank them
    return sweep_dir


def test_compare_writes_tables_csvs_and_figures(sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = run_mobrl("compare", str(sweep), "--out", str(out), "--reps", "300")
    assert result.returncode == 0, result.stdout + result.stderr
    for words in ("IQM", "optimality gap", "P(", "Per task"):
        assert words in result.stdout
    scores = pd.read_csv(out / "scores.csv")
    assert sorted(scores["algorithm"]) == ["dqn", "dqn", "ppo", "ppo"]
    assert set(scores["task"]) == {"cartpole"} and sorted(scores["seed"]) == [0, 0, 1, 1]
    # each run was evaluated at the first iteration past each multiple of 1,000 env steps,
    # recorded as the largest it passed (PPO's 2,000-step iterations pass two at once), and
    # is scored at the budget's mark by that evaluation's return over CartPole-v1's solved
    # return (475)
    progress = {
        (r.algorithm, r.seed): pd.read_csv(next(Path(r.run).glob(f"tune/{r.trial}/progress.csv")))
        for r in scores.itertuples()
    }
    for (algo, _), p in progress.items():
        passed = p["num_env_steps_sampled_lifetime"] // 1000 * 1000
        new = passed > passed.shift(1).fillna(0)
        marks = p["evaluation/at_env_steps"]
        assert list(marks[marks.notna()]) == list(passed[new]), algo
        assert list(passed[new])[-1] == 4000 and (marks[~new].isna()).all()
    assert list(progress[("ppo", 0)]["evaluation/at_env_steps"].dropna()) == [2000, 4000]
    for r in scores.itertuples():
        p = progress[(r.algorithm, r.seed)]
        at_budget = p[p["evaluation/at_env_steps"] == 4000]
        assert r.score == pytest.approx(at_budget["evaluation/return_mean"].iloc[-1] / 475)
    aggregates = pd.read_csv(out / "aggregates.csv")
    assert set(aggregates["aggregate"]) == {"IQM", "mean", "median", "optimality gap"}
    for a in aggregates.itertuples():
        assert a.ci_low <= a.value + 1e-12 and a.value <= a.ci_high + 1e-12
        mine = scores[scores["algorithm"] == a.algorithm]["score"]
        if a.aggregate == "mean":
            assert a.value == pytest.approx(mine.mean())
    (pair,) = json.loads((out / "compare.json").read_text())["improvement"]
    assert pair["probability"] >= 0.5 and {pair["x"], pair["y"]} == {"ppo", "dqn"}
    from PIL import Image

    for stem in (
        "aggregates",
        "profiles",
        "improvement",
        "efficiency_env_steps",
        "efficiency_seconds",
    ):
        with Image.open(out / f"{stem}.png") as image:
            assert min(image.size) > 100
    assert (out / "compare.md").read_text().count("![") == 5
    again = run_mobrl("compare", str(sweep), "--out", str(out))
    assert again.returncode == 2 and "--overwrite" in again.stderr


def test_runs_with_other_seeds_are_refused_in_one_line(sweep: Path, tmp_path: Path) -> None:
    jobs = {p.name: p for p in sweep.iterdir() if (p / "manifest.json").is_file()}
    # hydra numbers the jobs: algo varies slowest, then the seed
    keep = [jobs[name] for name in sorted(jobs) if not name.startswith("3_")]
    result = run_mobrl("compare", *map(str, keep), "--out", str(tmp_path / "c"))
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "dqn ran seeds [0] and ppo [0, 1]" in line and "run.seed=0" in line
    assert not (tmp_path / "c" / "compare.md").exists()
