"""`mobrl evaluate --scenarios`: a policy trained with env.obs=topk on small acts on every
layout; the matrix's cells equal single-scenario evaluations of the same seeds; a policy with
mobile-env's own observation is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_mobrl
from tests.e2e.conftest import train_smoke

pytestmark = pytest.mark.slow

LAYOUTS = ["small", "medium", "large"]


@pytest.fixture(scope="module")
def topk_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("small_topk") / "run"
    train_smoke(run_dir, "scenario=small", "env=ma", "env.obs=topk")
    return run_dir


def test_matrix_cells_equal_single_scenario_evaluations(topk_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    args = ["--episodes", "3", "--seed", "11", "--baselines", "greedy"]
    result = run_mobrl(
        "evaluate", "--checkpoint", str(topk_run), "--scenarios", ",".join(LAYOUTS),
        *args, "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    cells = pd.read_csv(out / "matrix.csv")
    assert sorted(cells.evaluated_on.unique()) == sorted(LAYOUTS)
    assert set(cells.policy) == {"trained", "greedy"} and (cells.n == 3).all()
    for column in ("ue/utility/mean_mean", "network/connected_fraction_mean"):
        assert cells[column].notna().all()  # service beside the return
    payload = json.loads((out / "matrix.json").read_text())
    assert payload["seed_range"] == [11, 13] and payload["scenarios"] == LAYOUTS
    episodes = pd.read_csv(out / "episodes.csv")
    assert len(episodes) == 2 * 3 * len(LAYOUTS)  # each policy once per layout and seed
    # the checkpoint's env.obs=topk carries over to scenario=LAYOUT; repeating it is fine too
    for layout, repeated in (("medium", []), ("large", ["env.obs=topk"])):
        single = tmp_path / f"single_{layout}"
        done = run_mobrl(
            "evaluate", "--checkpoint", str(topk_run), f"scenario={layout}", *repeated,
            *args, "--output", str(single), cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        summary = json.loads((single / "summary.json").read_text())
        mine = cells[(cells.evaluated_on == layout)].set_index("policy")
        for policy in ("trained", "greedy"):
            expected = summary["policies"][policy]["return"]
            assert mine.loc[policy, "return_mean"] == pytest.approx(expected["mean"])
            assert mine.loc[policy, "return_ci95"] == pytest.approx(expected["ci95"])
            connected = summary["policies"][policy]["network/connected_fraction"]["mean"]
            assert mine.loc[policy, "network/connected_fraction_mean"] == pytest.approx(connected)
        gap = summary["paired_vs_trained"]["greedy"]
        assert mine.loc["trained", "gap_vs_greedy_mean"] == pytest.approx(gap["return_diff_mean"])
        utility = gap["diff"]["ue/utility/mean"]  # the paired service gap, the same in both
        key = "ue/utility/mean_gap_vs_greedy"
        assert mine.loc["trained", f"{key}_mean"] == pytest.approx(utility["mean"])
        assert mine.loc["trained", f"{key}_ci95"] == pytest.approx(utility["ci95"])


def test_layout_specific_policy_is_refused_in_one_line(small_ma_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    result = run_mobrl(
        "evaluate", "--checkpoint", str(small_ma_run), "--scenarios", "small,medium",
        "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "env.obs=topk" in result.stderr and "medium" in result.stderr
    assert result.stderr.strip().count("\n") == 0 and not out.exists()
    bad = run_mobrl(
        "evaluate", "--checkpoint", str(small_ma_run), "--scenarios", "small,cartpole",
        "--output", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and "not a mobile-env layout" in bad.stderr
    assert not out.exists()
