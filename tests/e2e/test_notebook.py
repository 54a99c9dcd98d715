"""examples/quickstart.ipynb runs top to bottom on a real Jupyter kernel: train, plot,
evaluate, compare, render, PettingZoo; and it is kept in git without outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, ray_process_count

pytestmark = pytest.mark.slow
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"


def test_the_notebook_is_stored_without_outputs() -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_the_quickstart_notebook_runs_on_a_real_kernel(tmp_path: Path) -> None:
    """Top to bottom, it shows learning, warns about nothing, and writes nothing beside
    itself (its files go to a folder of their own, which it names)."""
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    nb = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    assert [p.name for p in tmp_path.iterdir()] == [NOTEBOOK.name]  # nothing beside it
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, stderr  # no warnings (ipywidgets, pandas, tqdm, ...)
    stdout = "".join(o.text for o in outputs if o.output_type == "stream")
    work = Path(stdout.split("working in ", 1)[1].split()[0])
    try:
        html = [
            o["data"].get("text/html", "") for o in outputs if o.output_type == "execute_result"
        ]
        assert any("<video" in h for h in html)  # the video plays inline
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        assert images  # the learning curve
        assert (work / "small.mp4").stat().st_size > 0
        (progress,) = work.glob("outputs/*/*/tune/*/progress.csv")
        import pandas as pd

        returns = pd.read_csv(progress)["env_runners/episode_return_mean"]
        assert len(returns) >= 10 and returns.iloc[-3:].mean() > returns.iloc[0] + 50  # it learns
        assert (work / "report" / "report.html").is_file()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert ray_process_count() == 0
