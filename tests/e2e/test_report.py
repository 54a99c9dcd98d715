"""`mobrl report` on real `mobrl train` runs: groups, numbers and files from real run dirs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mobrl.core import metrics as keys
from tests.conftest import run_mobrl
from tests.unit.test_report import RAW_KEY, figure_texts

pytestmark = pytest.mark.slow


def test_report_of_two_real_runs(small_ma_run: Path, small_central_run: Path, tmp_path: Path):
    out = tmp_path / "report"
    done = run_mobrl("report", str(small_ma_run), str(small_central_run), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    groups = pd.read_csv(out / "groups.csv")
    returns = groups[groups["metric"] == keys.RETURN_MEAN].set_index("group")
    assert sorted(returns.index) == ["env.mode=central", "env.mode=ma"]
    for run, mode in ((small_ma_run, "ma"), (small_central_run, "central")):
        progress = pd.read_csv(next(run.glob("tune/*/progress.csv")))
        last = progress[keys.RETURN_MEAN].dropna().iloc[-1]
        assert returns.loc[f"env.mode={mode}", "last_mean"] == pytest.approx(last)
        assert returns.loc[f"env.mode={mode}", "trials"] == 1
    md = (out / "report.md").read_text()
    for name in ("curve_0_env_steps.png", "curve_0_time_s.png", "service.png"):
        assert (out / name).stat().st_size > 5000 and name in md
    assert (out / "report.html").stat().st_size > 20000  # the figures are inlined
    # in words: headings, figure titles and axes name measures, never their result keys
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert "## UE service during training" in headings
    assert not [h for h in headings if RAW_KEY.search(h)]
    for name in ("curve_0_env_steps.png", "service.png"):
        assert not [t for t in figure_texts(out / name) if RAW_KEY.search(t)], name
    assert "Mbit/s" in figure_texts(out / "service.png")
    assert f"report: {out / 'report.md'}" in done.stdout
