"""mobrl from Python (a notebook, a script, another library), with the CLI's semantics: the
same config groups and overrides, the same checks and one-line `mobrl.UserError`s."""

from __future__ import annotations

from typing import Any

from mobrl.core.errors import UserError


def parallel_env(
    scenario: str = "small",
    *overrides: str,
    obs: str | None = None,
    reward: str | None = None,
    team_reward: float | None = None,
    render_mode: str | None = None,
    env: str = "ma",
) -> Any:
    """A mobile-env layout as a PettingZoo `ParallelEnv` on the fast engine: one agent per UE
    (`env="ma"`), or one per station deciding whether it sleeps (`env="cells"`, a layout with
    `power:`).

    `overrides` are the CLI's (e.g. `"env.topk=5"`); `obs`, `reward` and `team_reward` are
    short for `env.obs=`, `env.reward=` and `env.team_reward=`. Bad values raise
    `mobrl.UserError` with the CLI's one-line message::

        env = mobrl.parallel_env("dense_urban", obs="topk")
        observations, infos = env.reset(seed=0)
        cells = mobrl.parallel_env("uma19_energy", env="cells")
    """
    from mobrl.envs.factory import env_config_from, make_env
    from mobrl.envs.parallel import MobileParallelEnv
    from mobrl.scenarios.kinds import kind_of
    from mobrl.training.checks import validate_command_line

    if env not in ("ma", "cells"):
        raise UserError(
            f"parallel_env(env={env!r}): PettingZoo's parallel API has several agents; use "
            'env="ma" (one per UE) or env="cells" (one per station).'
        )
    given = [f"scenario={scenario}", f"env={env}", *overrides]
    for key, value in (("obs", obs), ("reward", reward), ("team_reward", team_reward)):
        if value is not None:
            given.append(f"env.{key}={value}")
    cfg = validate_command_line(given)
    if not kind_of(cfg).transferable:
        raise UserError(
            f"parallel_env serves mobile-env layouts (one agent per UE); scenario={scenario} is "
            "not one. Use a layout from `mobrl scenarios list`."
        )
    env_config = env_config_from(cfg, render_mode=render_mode)
    if env_config.get("decide", "at_once") != "at_once":
        raise UserError(
            "parallel_env steps every agent at once (PettingZoo's parallel API); "
            f"env.decide={env_config['decide']} has groups of agents act in turns. Drop "
            "env.decide."
        )
    env_config["sampler"] = None  # one env, stepped by the caller

    def make(seed: int | None) -> Any:
        if seed is None:
            return make_env(env_config)
        kwargs = {**(env_config.get("kwargs") or {}), "seed": seed}
        return make_env({**env_config, "kwargs": kwargs})

    return MobileParallelEnv(make)


class TrainingStopped(Exception):
    """`mobrl.train` ended without a finished run: interrupted (its state is saved: `resume`
    continues it) or a trial failed (its error is in the run dir)."""

    def __init__(self, message: str, run: Run) -> None:
        super().__init__(message)
        self.run = run


class Run:
    """A `mobrl train` run dir, read as a notebook wants it: config, manifest, summary,
    per-trial progress (pandas), complete checkpoints, and evaluation of the best one."""

    def __init__(self, path: Any) -> None:
        from pathlib import Path

        from mobrl.core.rundir import RunDir

        self.dir = RunDir(Path(path).expanduser().absolute())
        if not self.dir.is_run():
            raise UserError(f"'{path}' is not a mobrl run dir (no manifest.json).")

    def __repr__(self) -> str:
        return f"mobrl.Run({str(self.path)!r})"

    @property
    def path(self) -> Any:
        return self.dir.path

    @property
    def config(self) -> dict[str, Any]:
        return self.dir.read_config()

    @property
    def manifest(self) -> dict[str, Any]:
        return self.dir.read_manifest()

    @property
    def summary(self) -> dict[str, Any] | None:
        return self.dir.read_summary()

    @property
    def progress(self) -> Any:
        """Every trial's results per iteration (one DataFrame, a `trial` column), read as
        `mobrl report` reads them: a cut last row dropped, a repeated iteration once."""
        import pandas as pd

        from mobrl.core.rundir import TRIAL_PROGRESS
        from mobrl.reporting.runs import read_progress

        frames = []
        for trial in self.dir.trial_dirs():
            frame = read_progress(trial / TRIAL_PROGRESS)
            if not frame.empty:  # a column added by concat: no insert into a wide frame
                tag = pd.DataFrame({"trial": trial.name}, index=frame.index)
                frames.append(pd.concat([frame, tag], axis=1))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def checkpoints(self) -> list[Any]:
        """The complete checkpoints of the run, oldest first within each trial."""
        from mobrl.core.rundir import complete_checkpoints

        return complete_checkpoints(self.path)

    def evaluate(self, *overrides: str, pick: str = "best", **options: Any) -> Evaluation:
        """`mobrl evaluate --checkpoint RUN_DIR --pick PICK` (see `mobrl.evaluate`)."""
        return evaluate(self.path, *overrides, pick=pick, **options)


class Evaluation:
    """The output dir of `mobrl evaluate`: the summary, the episodes (pandas) and the table
    of per-policy statistics and paired differences."""

    def __init__(self, path: Any) -> None:
        from mobrl.evaluation.outputs import EvalDir

        self.dir = EvalDir(path)
        summary = self.dir.read_summary()
        if summary is None:
            raise UserError(f"'{path}' holds no summary.json of `mobrl evaluate`.")
        self.summary: dict[str, Any] = summary

    def __repr__(self) -> str:
        return f"mobrl.Evaluation({str(self.path)!r})"

    @property
    def path(self) -> Any:
        return self.dir.path

    @property
    def episodes(self) -> Any:
        import pandas as pd

        return pd.read_csv(self.dir.path / self.dir.EPISODES)

    @property
    def table(self) -> Any:
        """Per policy (rows) the mean of every measure, service first (pandas)."""
        import pandas as pd

        policies = self.summary["policies"]
        return pd.DataFrame(
            {name: {col: stats["mean"] for col, stats in cols.items()}
             for name, cols in policies.items()}
        ).T  # fmt: skip

    @property
    def paired(self) -> Any:
        """The paired differences (trained − each baseline, or each baseline − greedy) per
        measure: mean and 95 % CI half-width (pandas, one row per compared policy)."""
        import pandas as pd

        ref = self.summary.get("reference")
        gaps = self.summary.get(f"paired_vs_{ref}", {}) if ref else {}
        rows = {
            name: {f"{col} {part}": stats[key] for col, stats in gap["diff"].items()
                   for part, key in (("diff", "mean"), ("ci95", "ci95"))}
            for name, gap in gaps.items()
        }  # fmt: skip
        return pd.DataFrame(rows).T


def _settings(settings: dict[str, Any]) -> list[str]:
    return [f"{key}={value}" for key, value in settings.items()]


def train(*overrides: str, run_dir: Any = None, **settings: Any) -> Run:
    """`mobrl train OVERRIDES` from Python: the same config groups, overrides and checks, one
    experiment (for sweeps, call it per value or use `mobrl train -m`). Keyword arguments are
    more overrides with dots as double underscores, e.g. `run__stop__iterations=5`. Returns
    the `Run`; a bad value raises `mobrl.UserError`, an interrupted or failed run
    `mobrl.api.TrainingStopped`::

        run = mobrl.train("scenario=small", "run=quick")
        run.progress.plot(x="training_iteration", y="env_runners/episode_return_mean")
    """
    from datetime import datetime
    from pathlib import Path

    from mobrl.config import parse_overrides
    from mobrl.training.checks import validate_command_line
    from mobrl.training.run import run_training

    given = [*overrides, *_settings({k.replace("__", "."): v for k, v in settings.items()})]
    for override in parse_overrides(given):
        if override.is_sweep_override() or override.key_or_group.startswith("hydra"):
            raise UserError(
                f"'{override.input_line}': mobrl.train runs one experiment, without sweeps or "
                "Hydra's settings. Call it once per value, or use `mobrl train -m` for a sweep."
            )
    cfg = validate_command_line(given)
    if run_dir is None:
        now = datetime.now()
        name = f"{now:%H-%M-%S}_{cfg.scenario.name}_{cfg.algo.name}"
        run_dir = Path("outputs") / f"{now:%Y-%m-%d}" / name
    run_dir = Path(run_dir).expanduser().absolute()
    try:
        run_training(cfg, run_dir, overrides=given)
    except SystemExit as stop:
        from mobrl.core.errors import INTERRUPTED_EXIT

        why = (
            "interrupted; mobrl.resume(run) continues it"
            if stop.code == INTERRUPTED_EXIT
            else ("a trial failed; its error is in the run dir")
        )
        raise TrainingStopped(f"training {why}: {run_dir}", Run(run_dir)) from None
    return Run(run_dir)


def resume(run: Run | Any, retry_errored: bool = False) -> Run:
    """`mobrl train --resume RUN_DIR` from Python."""
    from mobrl.training.run import resume_training

    path = run.path if isinstance(run, Run) else run
    resume_training(path, retry_errored=retry_errored)
    return Run(path)


def evaluate(
    checkpoint: Any = None,
    *overrides: str,
    episodes: int = 20,
    seed: int = 0,
    baselines: list[str] | None = None,
    pick: str = "best",
    output: Any = None,
    explore: bool = False,
    workers: int | None = None,
    trust_checkpoint: bool = False,
) -> Evaluation:
    """`mobrl evaluate --checkpoint CHECKPOINT OVERRIDES` (or, without a checkpoint, `mobrl
    baselines OVERRIDES`) from Python, with the same options and the same numbers. Returns
    the `Evaluation` (summary, per-episode DataFrame, tables)::

        ev = mobrl.evaluate("zoo:small", episodes=100, baselines=["greedy", "oracle"])
        ev.paired
    """
    from pathlib import Path

    from mobrl.evaluation.evaluate import EvalOptions, evaluate_command

    opts = EvalOptions(
        episodes=episodes,
        seed=seed,
        baselines=None if baselines is None else ",".join(baselines),
        pick=pick,
        output=None if output is None else Path(output),
        explore=explore,
        workers=workers,
        trust=trust_checkpoint,
    )
    target = None if checkpoint is None else Path(str(checkpoint))
    return Evaluation(evaluate_command(target, list(overrides), opts))


class Video:
    """A rendered video file; in Jupyter it plays inline."""

    def __init__(self, path: Any) -> None:
        from pathlib import Path

        self.path = Path(path)

    def __repr__(self) -> str:
        return f"mobrl.Video({str(self.path)!r})"

    def _repr_html_(self) -> str:
        import base64

        data = base64.b64encode(self.path.read_bytes()).decode()
        if self.path.suffix == ".gif":
            return f'<img src="data:image/gif;base64,{data}"/>'
        return f'<video controls src="data:video/mp4;base64,{data}"></video>'


def render(
    checkpoint: Any = None,
    *overrides: str,
    policy: str | None = None,
    video: Any = "rollout.mp4",
    episodes: int = 1,
    seed: int = 0,
    max_steps: int | None = None,
    pick: str = "best",
    overwrite: bool = False,
    trust_checkpoint: bool = False,
) -> Video:
    """`mobrl render --checkpoint CHECKPOINT --video VIDEO` (or `--policy BASELINE` with
    overrides naming the scenario) from Python; the `Video` plays inline in Jupyter::

        mobrl.render("zoo:small", video="small.mp4")
    """
    from pathlib import Path

    from mobrl.rendering.video import RenderOptions, render_command

    opts = RenderOptions(
        episodes=episodes, seed=seed, max_steps=max_steps, pick=pick, overwrite=overwrite,
        trust=trust_checkpoint,
    )  # fmt: skip
    target = None if checkpoint is None else Path(str(checkpoint))
    return Video(render_command(target, policy, Path(video), list(overrides), opts))


class Report:
    """The output dir of `mobrl report`: its figures (shown inline in Jupyter), the per-group
    table (pandas) and the Markdown report."""

    def __init__(self, path: Any) -> None:
        from pathlib import Path

        self.path = Path(path)

    def __repr__(self) -> str:
        return f"mobrl.Report({str(self.path)!r})"

    @property
    def figures(self) -> list[Any]:
        return sorted(self.path.glob("*.png"))

    @property
    def groups(self) -> Any:
        import pandas as pd

        table = self.path / "groups.csv"
        return pd.read_csv(table) if table.is_file() else pd.DataFrame()

    def _repr_html_(self) -> str:
        import base64

        images = "".join(
            f'<img src="data:image/png;base64,{base64.b64encode(f.read_bytes()).decode()}"/>'
            for f in self.figures
        )
        return f"<p>{self.path / 'report.md'}</p>{images}"


def report(
    *paths: Any,
    out: Any = None,
    metrics: list[str] | None = None,
    x: str | None = None,
    group_by: list[str] | None = None,
    overwrite: bool = False,
) -> Report:
    """`mobrl report PATHS...` from Python (runs, multiruns, evaluations, `Run`s); the `Report`
    shows its figures inline in Jupyter::

        mobrl.report(run_a, run_b)
    """
    from pathlib import Path

    from mobrl.reporting import report_command

    folders = [Path(str(p.path if isinstance(p, (Run, Evaluation)) else p)) for p in paths]
    if not folders:
        raise UserError("mobrl.report needs run, multirun or evaluation dirs (or Runs).")
    out_path = None if out is None else Path(out)
    return Report(report_command(folders, out_path, metrics, x, group_by, overwrite))
