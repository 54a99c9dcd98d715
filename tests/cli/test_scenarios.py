"""The scenario commands and a bad layout file, through `mobrl` processes."""

from __future__ import annotations

from pathlib import Path

from mobrl import scenarios
from tests.conftest import run_mobrl
from tests.unit.test_scenarios import _with, _write


def test_bad_scenario_file_stops_mobrl_train_with_exit_2(tmp_path: Path) -> None:
    path = _write(tmp_path, _with(ues__count=0), "empty.yaml")
    result = run_mobrl("train", f"scenario.path={path}", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "ues.count is 0" in result.stderr
    assert not (tmp_path / "outputs").exists()  # nothing was started or written


def test_scenarios_list_shows_every_yaml_file(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    _write(tmp_path / "scenarios", _with(), "my_campus.yaml")
    result = run_mobrl("scenarios", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = [p.stem for p in scenarios.builtin_dir().glob("*.yaml")] + ["my_campus"]
    assert len(names) >= 6
    for name in names:
        assert f"│ {name} " in result.stdout, name
    assert "arena" in result.stdout and "cartpole" in result.stdout


def test_scenarios_plot_writes_a_png_of_the_requested_size(tmp_path: Path) -> None:
    import imageio.v3 as iio

    out = tmp_path / "plots" / "layout.png"
    result = run_mobrl("scenarios", "plot", "dense_urban", "--out", str(out), "--size", "640x480")
    assert result.returncode == 0, result.stderr
    image = iio.imread(out)
    assert image.shape[:2] == (480, 640) and image.std() > 10
    bad = run_mobrl("scenarios", "plot", "cartpole", "--out", str(tmp_path / "x.png"))
    assert bad.returncode == 2 and "not a mobile-env layout" in bad.stderr


def test_scenarios_generate_writes_a_layout_that_mobrl_shows_and_plots(tmp_path: Path) -> None:
    import imageio.v3 as iio

    out = tmp_path / "net.yaml"
    made = run_mobrl("scenarios", "generate", "--sites", "hex:19", "--ues", "60", "--out", str(out))
    assert made.returncode == 0, made.stderr
    assert "19 stations, 60 UEs" in made.stdout and "covered" in made.stdout
    assert "# made by" in out.read_text()
    shown = run_mobrl("scenarios", "show", str(out))
    assert shown.returncode == 0 and "count: 60" in shown.stdout
    again = run_mobrl("scenarios", "generate", "--sites", "hex:19", "--ues", "6", "--out", str(out))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    # a city-scale layout plots (small markers, no letters, no outlines: commands.plot)
    png = tmp_path / "city.png"
    plotted = run_mobrl("scenarios", "plot", "city", "--out", str(png), "--size", "400x300")
    assert plotted.returncode == 0, plotted.stderr
    assert iio.imread(png).shape[:2] == (300, 400)
