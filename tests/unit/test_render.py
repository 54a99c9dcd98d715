"""Rendering without Ray: baselines to real MP4/GIF files, decoded back; the dashboard; errors."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.envs import channel
from mobrl.rendering import frames as dashboard
from mobrl.rendering.video import RenderOptions, render_command
from mobrl.scenarios.kinds.mobile import make_mobile_core


def read_video(path: Path) -> np.ndarray:
    plugin = "FFMPEG" if path.suffix == ".mp4" else None
    return iio.imread(path, index=None, plugin=plugin)


def assert_frames_change(frames: np.ndarray) -> None:
    """Frames of a rollout differ over time (not one picture repeated)."""
    changed = [not np.array_equal(frames[0], f) for f in frames[1:]]
    assert sum(changed) >= len(changed) // 2, "most frames equal the first"
    assert frames.std() > 10  # not blank


def test_baseline_to_mp4_decodes_with_one_frame_per_step(tmp_path: Path) -> None:
    video = tmp_path / "greedy.mp4"
    render_command(
        None, "greedy", video, ["scenario=small"], RenderOptions(episodes=2, max_steps=12, fps=5)
    )
    frames = read_video(video)
    assert frames.shape == (24, 500, 800, 3)  # 2 episodes x 12 steps, mobile-env's figure size
    assert_frames_change(frames)
    meta = iio.immeta(video, plugin="FFMPEG")
    assert meta["fps"] == 5 and meta["codec"] == "h264"
    assert not list(tmp_path.glob(".*partial*"))  # the temporary file is gone


def test_baseline_to_gif_and_central_mode(tmp_path: Path) -> None:
    video = tmp_path / "full.gif"
    render_command(
        None, "full", video, ["scenario=medium", "env=central"], RenderOptions(max_steps=8, fps=4)
    )
    frames = read_video(video)
    assert frames.shape[0] == 8 and frames.shape[-1] in (3, 4)
    assert iio.immeta(video)["duration"] == 250  # ms per frame at 4 fps
    assert_frames_change(frames[..., :3])


def test_gymnasium_task_renders_its_rgb_array_view(tmp_path: Path) -> None:
    video = tmp_path / "cartpole.mp4"
    render_command(None, "pole_angle", video, ["scenario=cartpole"], RenderOptions(max_steps=30))
    frames = read_video(video)
    assert frames.shape == (30, 400, 600, 3)  # CartPole's own frame size
    assert iio.immeta(video, plugin="FFMPEG")["fps"] == 50  # CartPole's render_fps
    assert_frames_change(frames)


def test_dashboard_isolines_match_mobile_env() -> None:
    core = make_mobile_core("medium", "ma", "stock")
    core.reset()
    for rate in (0.0, 1.0):
        stock = core.bs_isolines(rate)
        ours = channel.isolines(core, rate)
        for bs, (xs, ys) in zip(sorted(stock, key=lambda b: b.bs_id), ours):
            np.testing.assert_allclose(xs, stock[bs][0], rtol=1e-12)
            np.testing.assert_allclose(ys, stock[bs][1], rtol=1e-12)


def test_dashboard_frame_shows_the_recorded_state() -> None:
    core = make_mobile_core("small", "central", "fast", {"seed": 0})
    core.reset()
    for _ in range(3):
        core.step(np.ones(core.NUM_USERS, dtype=int))  # everyone connects to BS A
    state = dashboard.record_state(core, episode=0, episode_return=-1.0)
    assert state.time == 3 and len(state.ues) == 5
    assert len(state.links) == sum(len(u) for u in core.connections.values()) > 0
    assert state.mean_utility == [float(v) for v in core.monitor.scalar_results["mean utility"]]
    renderer = dashboard.DashboardRenderer(dashboard.scene_of(core))
    with_links = renderer.draw(state)
    no_links = renderer.draw(dashboard.FrameState(0, 3, -1.0, state.ues, []))
    assert with_links.shape == (500, 800, 3) and with_links.dtype == np.uint8
    assert not np.array_equal(with_links, no_links)  # the links are drawn
    assert np.array_equal(renderer.draw(state), with_links)  # nothing left over between frames
    # every UE's id is drawn on its dot, and a UE that left takes its id with it
    labels = renderer.ue_labels
    assert sorted(labels) == [u[0] for u in state.ues]
    for ue_id, x, y, _ in state.ues:
        np.testing.assert_allclose(labels[ue_id].get_offsets(), [[x, y]])
    # a reader can tell what is drawn: a key of the marks and a colour bar of UE utility;
    # the mean utility plotted on its own scale (mobile-env's scaled utility, -1...1); the
    # station names drawn over the UEs
    texts = [t.get_text() for t in renderer.legend.get_texts()]
    assert len(texts) == 4 and any("coverage" in t for t in texts) and any("UE" in t for t in texts)
    low, high = renderer.utility_line.axes.get_ylim()
    assert low < -1.0 < 1.0 < high and high - low < 3
    moving = renderer.moving
    assert all(moving.index(n) > moving.index(renderer.ue_dots) for n in renderer.station_names)
    fewer = renderer.draw(dashboard.FrameState(0, 3, -1.0, state.ues[1:], []))
    assert not np.array_equal(fewer, no_links)  # the first UE's dot and id are gone
    assert np.array_equal(renderer.draw(dashboard.FrameState(0, 3, -1.0, state.ues, [])), no_links)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"policy_name": "greedyy"}, "unknown baseline 'greedyy'. Did you mean 'greedy'"),
        ({"policy_name": "pole_angle"}, "baseline 'pole_angle' does not apply to small"),
        ({"policy_name": None}, "nothing to render: give --checkpoint"),
        ({"video": "out.avi"}, "no known video format"),
        ({"max_steps": 0}, "--max-steps must be at least 1"),
        ({"fps": -1.0}, "--fps must be positive"),
        ({"checkpoint": "missing"}, "does not exist"),
    ],
)
def test_bad_input_is_one_user_error(tmp_path: Path, kwargs: dict, message: str) -> None:
    args = {"policy_name": "greedy", "video": "out.mp4", **kwargs}
    checkpoint = tmp_path / args.pop("checkpoint") if "checkpoint" in args else None
    if checkpoint is not None:
        args["policy_name"] = None
    video = tmp_path / args.pop("video")
    with pytest.raises(UserError, match=message):
        render_command(
            checkpoint, args.pop("policy_name"), video, ["scenario=small"], RenderOptions(**args)
        )
    assert not video.exists()


def test_existing_video_is_kept_unless_overwrite(tmp_path: Path) -> None:
    video = tmp_path / "keep.mp4"
    video.write_bytes(b"precious")
    with pytest.raises(UserError, match="already exists.*--overwrite"):
        render_command(None, "noop", video, ["scenario=small"], RenderOptions(max_steps=2))
    assert video.read_bytes() == b"precious"
    render_command(
        None, "noop", video, ["scenario=small"], RenderOptions(max_steps=2, overwrite=True)
    )
    assert read_video(video).shape[0] == 2


def test_failed_render_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    original = dashboard.DashboardRenderer.draw

    def failing(self, state):
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("disk full")
        return original(self, state)

    monkeypatch.setattr(dashboard.DashboardRenderer, "draw", failing)
    video = tmp_path / "broken.mp4"
    with pytest.raises(RuntimeError, match="disk full"):
        render_command(None, "greedy", video, ["scenario=small"], RenderOptions(max_steps=10))
    assert list(tmp_path.iterdir()) == []  # neither the video nor a temporary file
