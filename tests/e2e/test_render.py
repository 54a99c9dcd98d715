"""`mobrl render` from a real smoke checkpoint, in a fresh process, decoded back with imageio."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def test_render_checkpoint_to_mp4_and_gif(small_ma_run: Path, tmp_path: Path) -> None:
    mp4 = tmp_path / "policy.mp4"
    result = run_mobrl(
        "render", "--checkpoint", str(small_ma_run), "--video", str(mp4), "--episodes", "2",
        "--max-steps", "15", "--seed", "3", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "best checkpoint by training return" in result.stdout
    assert f"video: {mp4} (30 frames, 3.0 s at 10 fps, 800x500" in result.stdout
    assert "episode 0 (seed 3): return" in result.stdout
    assert "episode 1 (seed 4): return" in result.stdout
    assert "DeprecationWarning" not in result.stderr
    frames = iio.imread(mp4, index=None, plugin="FFMPEG")
    assert frames.shape == (30, 500, 800, 3)
    assert sum(not np.array_equal(frames[0], f) for f in frames[1:]) >= 15

    gif = tmp_path / "policy.gif"
    result = run_mobrl(
        "render", "--checkpoint", str(small_ma_run), "--video", str(gif), "--max-steps", "6",
        "--pick", "last", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert iio.imread(gif, index=None).shape[:3] == (6, 500, 800)


def test_render_corrupt_checkpoint_is_a_user_error(small_ma_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(small_ma_run, run)
    import pickle

    for state in run.rglob("module_state*"):
        if state.is_file():  # whole files (not cut short) that hold no module state
            state.write_bytes(pickle.dumps("not a checkpoint"))
    video = tmp_path / "x.mp4"
    result = run_mobrl("render", "--checkpoint", str(run), "--video", str(video), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "could not be restored" in result.stderr and "Traceback" not in result.stderr
    assert not video.exists() and not list(tmp_path.glob(".x.partial*"))
