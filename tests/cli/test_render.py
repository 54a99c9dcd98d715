"""`mobrl render` as a process: an unwritable video path is one line."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_mobrl


def test_cli_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    result = run_mobrl("render", "--policy", "greedy", "--video", "/proc/x.mp4", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "--video '/proc' is not writable" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_video_in_a_missing_folder_makes_the_folder(tmp_path: Path) -> None:
    """`--video nodir/out.mp4` makes nodir/ (as --output does), and the file is a real video."""
    import imageio.v3 as iio

    result = run_mobrl(
        "render", "--policy", "greedy", "--max-steps", "5", "--video", "nodir/out.mp4",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    frames = iio.imread(tmp_path / "nodir" / "out.mp4", index=None, plugin="FFMPEG")
    assert frames.shape[0] >= 5


def test_a_policy_renders_on_a_named_layout_with_its_own_observation(tmp_path: Path) -> None:
    import imageio.v3 as iio

    result = run_mobrl(
        "render", "--checkpoint", "zoo:small", "scenario=medium", "--max-steps", "3",
        "--video", "medium.mp4", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "playing medium with its env=ma env.obs=topk_gain env.topk=3" in result.stdout
    frames = iio.imread(tmp_path / "medium.mp4", index=None, plugin="FFMPEG")
    assert frames.shape[0] == 3
