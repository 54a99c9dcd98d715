"""The render dashboard of a layout with a radio section: its SINR map, once per episode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.rendering import frames as dashboard
from mobrl.scenarios.kinds.mobile import make_mobile_core

SMALL = scenarios.builtin_dir() / "small.yaml"


def small_with(tmp_path: Path, radio: dict | None, name: str = "small_radio") -> Path:
    """mobile-env's small layout with a radio section (10 m small cells), as a file."""
    data = yaml.safe_load(SMALL.read_text())
    data["station_defaults"]["height"] = 10
    if radio is not None:
        data["radio"] = radio
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


UMI = {"channel": "umi", "shadowing": True, "interference": "full_buffer"}


def _frame(path: Path, seed: int = 0) -> tuple[dashboard.DashboardRenderer, np.ndarray, object]:
    core = make_mobile_core(scenarios.load(path), "central", "fast", {"seed": seed})
    core.reset()
    for _ in range(3):
        core.step(np.ones(core.NUM_USERS, dtype=int))
    scene = dashboard.scene_of(core)
    renderer = dashboard.DashboardRenderer(scene)
    return renderer, renderer.draw(dashboard.record_state(core, 0, -1.0)), core


def test_a_radio_layout_is_drawn_over_its_sinr_map(tmp_path: Path) -> None:
    radio, with_map, core = _frame(small_with(tmp_path, UMI))
    plain, without, _ = _frame(small_with(tmp_path, None, "plain"))
    scene = radio.scene
    assert scene.sinr is not None and scene.sinr.values_db.shape == (200, 200)
    assert scene.conn_isolines == [] and scene.rate_isolines == []  # Hata's: not drawn
    assert plain.scene.sinr is None and len(plain.scene.conn_isolines) == 3
    assert with_map.shape == without.shape == (500, 800, 3)
    # the map fills the background: most of the map's pixels differ from the plain picture
    assert (with_map != without).any(axis=-1).mean() > 0.3
    assert "SINR [dB]" in radio.sinr_bar.ax.get_xlabel()
    np.testing.assert_array_equal(radio.sinr_image.get_array(), scene.sinr.values_db)
    legend = [t.get_text() for t in radio.legend.get_texts()]
    assert len(legend) == 2 and not any("coverage" in t for t in legend)
    # rates of a thermal-noise channel are in Mbit/s (bandwidth in MHz)
    assert scene.rate_unit == "Mbit/s" and "[Mbit/s]" in radio.table[0, 0].get_text().get_text()
    assert plain.scene.rate_unit == dashboard.RATE_UNIT == "bit/s"


def test_each_episode_has_its_own_map_and_the_renderer_follows(tmp_path: Path) -> None:
    path = small_with(tmp_path, UMI)
    renderer, first_frame, core = _frame(path, seed=0)
    first = renderer.scene
    other = make_mobile_core(scenarios.load(path), "central", "fast", {"seed": 1})
    other.reset()
    second = dashboard.episode_scene(other, first)
    assert second.stations == first.stations and second.sinr is not first.sinr
    assert not np.array_equal(second.sinr.values_db, first.sinr.values_db)  # new fields
    state = dashboard.record_state(core, 0, -1.0)
    renderer.show_sinr(second.sinr)
    assert not np.array_equal(renderer.draw(state), first_frame)
    renderer.show_sinr(first.sinr)
    assert np.array_equal(renderer.draw(state), first_frame)
    # mobile-env's model: one scene for every episode
    stock = make_mobile_core("small", "central", "fast")
    stock.reset()
    scene = dashboard.scene_of(stock)
    assert dashboard.episode_scene(stock, scene) is scene


def test_render_computes_the_map_once_per_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import imageio.v3 as iio

    from mobrl.rendering.video import RenderOptions, render_command

    calls: list[int] = []
    original = dashboard.sinr_map

    def counted(core, *args, **kwargs):
        calls.append(int(core.seed))
        return original(core, *args, **kwargs)

    monkeypatch.setattr(dashboard, "sinr_map", counted)
    video = tmp_path / "radio.mp4"
    path = small_with(tmp_path, UMI)
    opts = RenderOptions(episodes=2, max_steps=4, fps=5, seed=3)
    render_command(None, "greedy", video, [f"scenario.path={path}"], opts)
    assert calls == [3, 4]  # each episode's own seed, not once per frame
    frames = iio.imread(video, index=None, plugin="FFMPEG")
    assert frames.shape[0] == 8
