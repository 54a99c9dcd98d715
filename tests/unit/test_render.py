"""Rendering without Ray: baselines to real MP4/GIF files, decoded back; the dashboard; errors."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.network import channel
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


def _mixed_links_core(engine: str) -> object:
    """A small core after 12 steps in which every UE but UE 0 links to its strongest station
    whenever it has no link: some stations serve several UEs, UE 0 none."""
    core = make_mobile_core("small", "central", engine, {"seed": 0})
    core.reset()
    stations = sorted(core.stations.values(), key=lambda bs: bs.bs_id)
    for _ in range(12):
        actions = []
        for ue in sorted(core.users.values(), key=lambda ue: ue.ue_id):
            linked = any(ue in ues for ues in core.connections.values())
            best = max(stations, key=lambda bs: core.channel.snr(bs, ue))
            actions.append(0 if ue.ue_id == 0 or linked else best.bs_id + 1)
        core.step(np.array(actions))
    return core


@pytest.mark.parametrize("engine", ["stock", "fast"])
def test_dashboard_units_agree_with_each_other_and_with_mobile_env(engine: str) -> None:
    """One data-rate unit, one utility scale (colour bar, UE dots, links, table, plot), and a
    time axis in env steps, each as mobile-env defines it."""
    from matplotlib.colors import Normalize
    from matplotlib.text import Text

    core = _mixed_links_core(engine)
    state = dashboard.record_state(core, episode=0, episode_return=0.0)
    assert len(state.links) >= 3 and state.ues[0][3] == -1.0  # linked UEs and an unlinked one
    scene = dashboard.scene_of(core)
    renderer = dashboard.DashboardRenderer(scene)
    renderer.draw(state)

    # the utility scale: mobile-env's scaled utility, what its rewards use, -1...1
    utility = core.utility
    assert scene.scaled_range == (utility.scale(utility.lower), utility.scale(utility.upper))
    assert scene.scaled_range == (-1.0, 1.0)
    bar = renderer.colorbar
    assert (bar.norm.vmin, bar.norm.vmax) == scene.scaled_range
    np.testing.assert_allclose(bar.ax.get_xlim(), scene.scaled_range)
    assert "(scaled)" in bar.ax.get_xlabel()
    low, high = renderer.utility_line.axes.get_ylim()
    assert low < -1.0 and high > 1.0 and high - low < 2.5  # the plot's axis: the same scale
    assert renderer.utility_line.axes.get_ylabel() == dashboard.MEAN_UTILITY_LABEL
    assert renderer.table[0, 1].get_text().get_text() == dashboard.MEAN_UTILITY_LABEL
    assert "(scaled)" in dashboard.MEAN_UTILITY_LABEL

    # UE dots are coloured on the colour bar's scale by the utility the table averages
    scaled = {ue.ue_id: float(u) for ue, u in core.utilities.items()}
    assert [u for _, _, _, u in state.ues] == [scaled[i] for i, *_ in state.ues]
    np.testing.assert_allclose(
        renderer.ue_dots.get_facecolors(), [bar.cmap(bar.norm(scaled[i])) for i, *_ in state.ues]
    )
    np.testing.assert_allclose(np.mean(list(scaled.values())), state.mean_utility[-1])
    # links keep mobile-env's own colours (share * unscaled utility on -20...20): scaling is
    # linear, so the colour bar's -1...1 labels the very same colours
    own = Normalize(utility.lower, utility.upper)
    expected = []
    for bs, linked in core.connections.items():
        for ue in linked:
            share = core.datarates[(bs, ue)] / core.macro[ue]
            expected.append(bar.cmap(own(share * utility.unscale(core.utilities[ue]))))
    np.testing.assert_allclose(renderer.links.get_colors(), expected, atol=1e-12)

    # the plotted values are the table's: current = last point, history = mean of the points
    cells = {key: renderer.table_texts[key].get_text() for key in dashboard._CELLS}
    ys = renderer.utility_line.get_ydata()
    assert cells[(1, 1)] == f"{ys[-1]:.3f}" and cells[(2, 1)] == f"{np.mean(ys):.3f}"
    rates = state.mean_datarate
    assert cells[(1, 0)] == f"{rates[-1]:.3f}" and cells[(2, 0)] == f"{np.mean(rates):.3f}"

    # one data-rate unit: mobile-env's rate is bandwidth [Hz] * log2(1 + SNR), in bit/s
    # (its mean over linked UEs is the table's current value)
    bs, ue = next(iter(core.datarates))
    full = bs.bw * np.log2(1 + core.channel.snr(bs, ue))
    assert core.datarates[(bs, ue)] == pytest.approx(full / len(core.connections[bs]))
    assert rates[-1] == pytest.approx(np.mean(list(core.macro.values())))
    assert dashboard.RATE_UNIT == "bit/s"
    header = renderer.table[0, 0].get_text().get_text()
    legend = [t.get_text() for t in renderer.legend.get_texts()]
    assert f"[{dashboard.RATE_UNIT}]" in header
    assert f"{dashboard.REACH_RATE:g} {dashboard.RATE_UNIT} reach" in legend
    texts = " ".join(t.get_text() for t in renderer.fig.findobj(Text))
    for other in ("GB/s", "MB/s", "Mbit/s", "kbit/s"):
        assert other not in texts

    # time in env steps: one point per step so far, on an axis up to the episode's length
    time_axis = renderer.connected_line.axes
    assert time_axis.get_xlabel() == "Time [env steps]"
    assert time_axis.get_xlim() == renderer.utility_line.axes.get_xlim() == (0, core.EP_MAX_TIME)
    np.testing.assert_array_equal(renderer.utility_line.get_xdata(), np.arange(int(core.time)))
    assert "t = 12" in renderer.title.get_text() and state.time == 12


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
