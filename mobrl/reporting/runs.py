"""Finding what `mobrl train` and `mobrl evaluate` left behind, and grouping trials by the
settings that differ between them (seeds excepted, so seeds become the confidence band)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError
from mobrl.core.rundir import TRIAL_PROGRESS, RunDir

#: composed-config keys that never tell runs apart in a meaningful way
_IGNORED = ("run.name", "run.storage_path", "scenario.path", "preset.found_by", "preset.notes")
_IGNORED_PREFIXES = ("preset.expect.",)
#: the keys that name a config group's option, in the order labels show them
_CHOICES = ("scenario.name", "env.mode", "algo.name", "tune.name", "engine", "env.obs")


@dataclass
class Trial:
    """One Tune trial of one run: its settings and its progress.csv."""

    run_dir: Path
    name: str
    settings: dict[str, Any]
    progress: Any  # pandas DataFrame (empty when the trial wrote nothing yet)
    status: str = "finished"  # finished | error | running


@dataclass
class Found:
    trials: list[Trial] = field(default_factory=list)
    evaluations: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    #: `mobrl evaluate --scenarios` output dirs and their matrix.json
    matrices: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(node, list):
        return {prefix[:-1]: json.dumps(node)}
    return {prefix[:-1]: node}


def read_progress(path: Path, notes: list[str] | None = None) -> Any:
    """A trial's progress.csv, read defensively: a last row cut short (a write that never
    finished) is dropped, and an iteration written twice (an interrupted run resumed from its
    last checkpoint repeats the iterations after it) keeps its later row; each is noted."""
    import io

    import pandas as pd

    from mobrl.core import metrics

    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return pd.DataFrame()
    notes = notes if notes is not None else []
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        notes.append(f"{path}: its last row is cut short (an unfinished write); it is left out")
    try:
        frame = pd.read_csv(io.StringIO(text))
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    if metrics.ITERATION in frame:
        repeated = frame[metrics.ITERATION].duplicated(keep="last")
        if repeated.any():
            notes.append(
                f"{path}: iterations {sorted(set(frame[metrics.ITERATION][repeated]))} were "
                "written twice (a resumed run repeats them); the later rows count"
            )
            frame = frame[~repeated].reset_index(drop=True)
    return frame


def _run_trials(run: RunDir, found: Found) -> None:
    config = _flatten(run.read_config())
    summary = run.read_summary()
    by_trial = {t["trial"]: t for t in (summary or {}).get("trials", [])}
    trial_dirs = run.trial_dirs()
    if not trial_dirs:
        found.notes.append(f"{run.path}: no trial has written progress yet")
    for trial_dir in trial_dirs:
        info = by_trial.get(trial_dir.name, {})
        sampled = {f"tune.{k}": v for k, v in _flatten(info.get("params") or {}).items()}
        status = "running" if summary is None else ("error" if info.get("error") else "finished")
        progress = read_progress(trial_dir / TRIAL_PROGRESS, found.notes)
        if status != "finished":
            found.notes.append(f"{trial_dir}: trial {status}; its curves end where its data ends")
        found.trials.append(
            Trial(run.path, trial_dir.name, {**config, **sampled}, progress, status)
        )


def discover(paths: list[Path]) -> Found:
    """Every trial and evaluation under `paths` (run, multirun, trial or evaluation dirs)."""
    from mobrl.evaluation.outputs import EvalDir

    found = Found()
    runs: set[Path] = set()
    for path in paths:
        path = Path(path).expanduser().absolute()
        if not path.exists():
            raise UserError(f"'{path}' does not exist. Give run, multirun or evaluation dirs.")
        for manifest in sorted(path.rglob(RunDir.MANIFEST)):
            run = RunDir(manifest.parent)
            if run.is_run() and run.path not in runs:
                runs.add(run.path)
                _run_trials(run, found)
        for episodes in sorted(path.rglob(EvalDir.EPISODES)):
            folder = EvalDir(episodes.parent)
            if any(run in folder.path.parents for run in runs):
                continue
            summary = folder.read_summary()
            if summary is not None and folder.path not in {f for f, _ in found.evaluations}:
                found.evaluations.append((folder.path, summary))
        for matrix in sorted(path.rglob(EvalDir.MATRIX_JSON)):
            data = EvalDir(matrix.parent).read_matrix()
            if data is not None and matrix.parent not in {f for f, _ in found.matrices}:
                found.matrices.append((matrix.parent, data))
    if not found.trials and not found.evaluations and not found.matrices:
        raise UserError(
            f"no mobrl runs or evaluations under {', '.join(str(p) for p in paths)}. Give the "
            "run dir `mobrl train` printed, a multirun dir or an `mobrl evaluate` output dir."
        )
    return found


def _seed_like(key: str) -> bool:
    return key.split(".")[-1] == "seed"


def group_trials(trials: list[Trial], group_by: list[str] | None = None) -> dict[str, list[Trial]]:
    """Trials grouped by the settings in `group_by`, or by every setting that differs between
    them except seeds (so runs that differ only by seed form one group)."""
    if group_by:
        unknown = [k for k in group_by if not any(k in t.settings for t in trials)]
        if unknown:
            names = sorted({k for t in trials for k in t.settings})
            from mobrl.core.errors import unknown_choice

            raise unknown_choice(
                "--group-by", unknown[0], names, "Use a config key, e.g. algo.name."
            )
        varying = list(group_by)
    else:
        all_keys = sorted({k for t in trials for k in t.settings})
        varying = [
            k
            for k in all_keys
            if not _seed_like(k)
            and k not in _IGNORED
            and not k.startswith(_IGNORED_PREFIXES)
            and len({json.dumps(t.settings.get(k), default=str) for t in trials}) > 1
        ]
        # keys that split the trials the same way as an earlier one say nothing new
        # (scenario.name and scenario.id, algo.name and the algorithm's class)
        partitions: set[tuple[str, ...]] = set()
        distinct = []

        # prefer the config groups a user picks (scenario, env, algo) to the values that
        # follow from them (a preset's hyperparameters)
        def preference(key: str) -> tuple[int, str]:
            if key in _CHOICES:
                return (0, f"{_CHOICES.index(key):03d}")
            return (2 if key.startswith("preset.") else 1, key)

        for key in sorted(varying, key=preference):
            split = tuple(json.dumps(t.settings.get(key), default=str) for t in trials)
            index = {v: i for i, v in enumerate(dict.fromkeys(split))}
            shape = tuple(str(index[v]) for v in split)
            if shape not in partitions:
                partitions.add(shape)
                distinct.append(key)
        varying = sorted(distinct)
    groups: dict[str, list[Trial]] = {}
    for trial in trials:
        label = ", ".join(f"{k}={trial.settings.get(k)}" for k in varying) or "all runs"
        groups.setdefault(label, []).append(trial)
    return groups
