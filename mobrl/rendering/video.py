"""`mobrl render`: roll out a trained policy or a baseline and write the frames to MP4 or GIF.

Headless: mobile-env scenarios are drawn as mobile-env's network dashboard by
`mobrl.rendering.frames` (recorded during the rollout, drawn afterwards, in parallel processes for
long videos); Gymnasium tasks render through their own `rgb_array` mode. The video is written
to a temporary file next to the target and renamed at the end, so a failed render never
leaves a broken file behind.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import Interrupted, UserError
from mobrl.scenarios.kinds import kind_of

VIDEO_SUFFIXES = (".mp4", ".gif")
#: frames per second when neither --fps nor the env's metadata says
DEFAULT_FPS = 10
#: below this many dashboard frames, drawing in this process beats starting worker processes
#: (measured: 300 frames of `small` take as long with 2 workers as with 1)
PARALLEL_MIN_FRAMES = 500
_FRAMES_PER_TASK = 25


@dataclass
class Recording:
    """What a rollout leaves for the video: frames (Gymnasium) or dashboard states (mobile),
    with the dashboard's scene of each episode (one object for all under mobile-env's model;
    a layout with a radio section has its own SINR map per episode)."""

    scenes: dict[int, Any] = field(default_factory=dict)
    states: list[Any] = field(default_factory=list)
    frames: list[np.ndarray] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scene(self) -> Any:
        """The first episode's scene (None before the first step)."""
        return self.scenes[min(self.scenes)] if self.scenes else None

    @property
    def frame_count(self) -> int:
        return len(self.states) or len(self.frames)


def check_video_path(video: Path, overwrite: bool) -> Path:
    """The absolute output path, or a one-line error (format, existing file, not writable)."""
    from mobrl.core.files import check_writable

    video = Path(video).expanduser().absolute()
    if video.suffix.lower() not in VIDEO_SUFFIXES:
        raise UserError(
            f"--video '{video.name}' has no known video format ({video.suffix or 'no suffix'}). "
            f"End the file name with {' or '.join(VIDEO_SUFFIXES)}."
        )
    if video.is_dir():
        raise UserError(
            f"--video '{video}' is a directory. Give a file name, e.g. {video}/out.mp4."
        )
    if video.exists() and not overwrite:
        raise UserError(
            f"--video '{video}' already exists. Choose another file name or add --overwrite."
        )
    check_writable(video.parent, "--video", example=f"./{video.name}")
    return video


def _rollout(
    env_config: dict[str, Any],
    policy: Any,
    seeds: list[int],
    max_steps: int | None,
    progress: Any,
) -> Recording:
    from mobrl.envs.wrappers import find_core
    from mobrl.evaluation.rollout import run_episode
    from mobrl.rendering.frames import episode_scene, record_state

    recording = Recording()
    mobile = kind_of(env_config).draws_own_frames
    for episode, seed in enumerate(seeds):

        def on_step(env: Any, total: float, episode: int = episode) -> None:
            if mobile:
                core = find_core(env)
                if episode not in recording.scenes:  # once per episode, not per frame
                    recording.scenes[episode] = episode_scene(core, recording.scene)
                recording.states.append(record_state(core, episode, total))
            else:
                recording.frames.append(np.asarray(env.render()))
            progress()

        row = run_episode(env_config, policy, seed, on_step=on_step, max_steps=max_steps)
        recording.episodes.append(
            {"episode": episode, "seed": seed, "return": row["return"], "steps": row["length"]}
        )
    return recording


def _draw_task(args: tuple[Any, list[Any]]) -> list[np.ndarray]:
    from mobrl.rendering.frames import draw_frames

    scene, states = args
    return draw_frames(scene, states)


def _frames(recording: Recording, workers: int) -> Iterator[np.ndarray]:
    """The recording's frames in order; dashboard frames drawn by `workers` processes."""
    if recording.frames:
        yield from recording.frames
        return
    from mobrl.rendering.frames import draw_frames

    states, scenes = recording.states, recording.scenes
    if workers <= 1:
        for state in states:
            yield from draw_frames(scenes[state.episode], [state])
        return
    from mobrl.core.workers import process_pool

    # each task within one episode (its scene holds its SINR map), in order
    tasks = []
    for episode, group in groupby(states, key=lambda state: state.episode):
        mine = list(group)
        tasks += [
            (scenes[episode], mine[i : i + _FRAMES_PER_TASK])
            for i in range(0, len(mine), _FRAMES_PER_TASK)
        ]
    with process_pool(workers) as pool:
        drawn = [pool.submit(_draw_task, task) for task in tasks]
        for future in drawn:  # in order; an interrupt leaves the pool to kill the workers
            yield from future.result()


def write_video(path: Path, frames: Iterator[np.ndarray], fps: float, progress: Any) -> tuple:
    """Encode `frames` into `path` (MP4 with ffmpeg/H.264, or GIF) via a temporary file in a
    temporary folder beside it, removed whatever happens: an ffmpeg that a Ctrl-C caught (it
    gets the terminal's SIGINT too) finds no folder to write into once mobrl has given up.

    Returns (frame count, (width, height))."""
    import shutil

    import imageio.v2 as imageio

    folder = path.with_name(f".{path.stem}.partial")
    folder.mkdir(exist_ok=True)
    tmp = folder / path.name
    count, size = 0, (0, 0)
    try:
        if path.suffix.lower() == ".gif":
            writer = imageio.get_writer(tmp, mode="I", duration=1000.0 / fps, loop=0)
        else:
            writer = imageio.get_writer(
                tmp,
                format="FFMPEG",
                fps=fps,
                codec="libx264",
                quality=7,
                macro_block_size=2,
                ffmpeg_log_level="error",
            )
        with writer:
            for frame in frames:
                writer.append_data(frame)
                count += 1
                size = (frame.shape[1], frame.shape[0])
                progress()
        if count == 0:
            raise UserError("the rollout produced no frames. Check --max-steps and --episodes.")
        os.replace(tmp, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return count, size


def _policy(
    checkpoint: Path | None,
    policy_name: str | None,
    overrides: list[str],
    pick: str,
    explore: bool,
    trust: bool = False,
) -> tuple[Any, dict[str, Any], str]:
    """(policy, env_config, description) for a checkpoint or a named baseline."""
    from mobrl.evaluation.paired import TRAINED
    from mobrl.evaluation.policies import (
        BASELINES,
        check_baselines,
        make_baseline,
        policy_for_env,
    )
    from mobrl.evaluation.targets import target_for

    if checkpoint is not None and policy_name not in (None, TRAINED):
        raise UserError(
            f"--policy {policy_name} renders a baseline, which needs no --checkpoint. "
            "Drop one of the two."
        )
    if checkpoint is None and policy_name in (None, TRAINED):
        raise UserError(
            "nothing to render: give --checkpoint PATH, or --policy NAME for a baseline "
            f"({', '.join(BASELINES)})."
        )
    target = target_for(checkpoint, overrides or ([] if checkpoint else ["scenario=small"]), pick)
    env_config = {**target.env_config}
    if not kind_of(env_config).draws_own_frames:
        env_config["render_mode"] = "rgb_array"
    if checkpoint is None:
        check_baselines([policy_name], env_config, flag="--policy")
        return make_baseline(policy_name), env_config, f"baseline {policy_name}"
    policy = policy_for_env(target.checkpoint, env_config, explore, trust)
    return policy, env_config, target.note


def _default_fps(env_config: dict[str, Any]) -> float:
    from mobrl.envs.factory import make_env

    env = make_env({**env_config, "render_mode": None})
    try:
        return float(getattr(env, "metadata", {}).get("render_fps") or DEFAULT_FPS)
    finally:
        env.close()


@dataclass
class RenderOptions:
    """The options of `mobrl render` besides what to render and where (see its --help)."""

    episodes: int = 1
    seed: int = 0
    fps: float | None = None  # None: the env's own
    max_steps: int | None = None
    pick: str = "best"
    explore: bool = False
    workers: int | None = None  # None: up to 4 drawing processes for long mobile-env videos
    overwrite: bool = False
    trust: bool = False  # --trust-checkpoint: load pickled objects of any kind

    def check(self) -> None:
        from mobrl.evaluation.targets import check_pick

        if self.episodes < 1:
            raise UserError(f"--episodes must be at least 1, got {self.episodes}.")
        if self.max_steps is not None and self.max_steps < 1:
            raise UserError(f"--max-steps must be at least 1, got {self.max_steps}.")
        if self.fps is not None and self.fps <= 0:
            raise UserError(f"--fps must be positive, got {self.fps}.")
        check_pick(self.pick)


def render_command(
    checkpoint: Path | None,
    policy_name: str | None,
    video: Path,
    overrides: list[str],
    opts: RenderOptions | None = None,
) -> Path:
    """`mobrl render`: validate, roll out, draw, encode, and print what was written."""
    # pygame draws some Gymnasium tasks: no display, no sound card needed
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn

    from mobrl.core.console import make_console, progress

    console = make_console()
    opts = opts or RenderOptions()
    opts.check()
    video = check_video_path(video, opts.overwrite)
    policy, env_config, note = _policy(
        checkpoint, policy_name, overrides, opts.pick, opts.explore, opts.trust
    )
    console.print(note)
    fps = opts.fps or _default_fps(env_config)
    seeds = [opts.seed + i for i in range(opts.episodes)]
    workers, max_steps = opts.workers, opts.max_steps

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    existed = video.exists()
    stage = "rolling out"
    try:
        with progress(console, *columns) as bar:
            task = bar.add_task(stage, total=None)
            recording = _rollout(env_config, policy, seeds, max_steps, lambda: bar.advance(task))
            stage = "drawing and encoding"
            bar.update(task, description=stage, completed=0)
            bar.update(task, total=recording.frame_count)
            if workers is None:
                many = recording.frame_count >= PARALLEL_MIN_FRAMES and recording.states
                workers = min(os.cpu_count() or 1, 4) if many else 1
            video.parent.mkdir(parents=True, exist_ok=True)  # like --output: made when missing
            with closing(_frames(recording, workers)) as frames:  # its pool ends here
                count, (width, height) = write_video(video, frames, fps, lambda: bar.advance(task))
    except KeyboardInterrupt:
        kept = f"the earlier {video} is kept" if existed else f"{video} was not written"
        raise Interrupted(
            f"rendering stopped while {stage}; {kept} (a video is written whole or not at all)."
        ) from None
    size_mb = video.stat().st_size / 1e6
    console.print(
        f"video: {video} ({count} frames, {count / fps:.1f} s at {fps:g} fps, "
        f"{width}x{height}, {size_mb:.1f} MB)"
    )
    for ep in recording.episodes:
        console.print(
            f"episode {ep['episode']} (seed {ep['seed']}): return {ep['return']:.3f}, "
            f"{int(ep['steps'])} steps"
        )
    sys.stdout.flush()
    return video
