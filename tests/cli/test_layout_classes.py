"""A layout naming its own mobile-env classes (`classes:`), evaluated by the real CLI from a
directory that is neither the repository nor the module's: the notice, the stock engine and
mobrl's UE metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mobrl.core import metrics
from tests.conftest import REPO, run_mobrl

EXAMPLE = REPO / "examples" / "mobile_env_classes"
NOTICE = (
    "note: layout logdistance names its own mobile-env classes (channel=logdistance:LogDistance):"
    " it runs on mobile-env's stock engine, not mobrl's fast engine."
)


def _baselines(cwd: Path, layout: Path, *extra: str) -> dict:
    out = cwd / "out"
    result = run_mobrl(
        "baselines", f"scenario.path={layout}", "--episodes", "3",
        "--baselines", "greedy,random", "--output", str(out), *extra, cwd=cwd, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(NOTICE) == 1, result.stdout
    for label in ("UE utility", "connected", "p5 UE utility", "Jain (utility)"):
        assert label in result.stdout  # mobrl's UE metrics in the printed table
    return json.loads((out / "summary.json").read_text())


def test_the_example_layout_evaluates_with_ue_metrics_from_anywhere(tmp_path: Path) -> None:
    """Its `classes.pythonpath: [.]` finds the module beside the layout file."""
    summary = _baselines(tmp_path, EXAMPLE / "logdistance.yaml", "--workers", "1")
    assert summary["env_config"]["engine"] == "stock"
    for policy in ("greedy", "random"):
        for key in metrics.EPISODE_METRICS:
            assert summary["policies"][policy][key]["n"] == 3, (policy, key)
    greedy = summary["policies"]["greedy"][metrics.UTILITY_MEAN]["mean"]
    random = summary["policies"]["random"][metrics.UTILITY_MEAN]["mean"]
    assert -1 <= random < greedy <= 1


def test_a_module_on_the_working_directory_reaches_the_worker_processes(tmp_path: Path) -> None:
    """Without `pythonpath`, the module is found on the working directory; the evaluation's
    worker processes import it from the folder the layout recorded."""
    shutil.copy(EXAMPLE / "logdistance.py", tmp_path)
    text = (EXAMPLE / "logdistance.yaml").read_text()
    layout = tmp_path / "nets" / "logdistance.yaml"
    layout.parent.mkdir()
    layout.write_text("\n".join(line for line in text.splitlines() if "pythonpath" not in line))
    summary = _baselines(tmp_path, layout, "--workers", "2")
    assert summary["env_config"]["layout"]["classes"]["pythonpath"] == [str(tmp_path.resolve())]
    assert summary["policies"]["greedy"][metrics.NET_CONNECTED]["n"] == 3
