"""A run dir of `mobrl train`: every file name in it, and the reading and writing of its files.

```
<run dir>/
  config.yaml      the resolved config           (RunDir.config_file)
  manifest.json    env and versions to rebuild   (RunDir.manifest_file; also in the
                   a run's policies anywhere      experiment dir when run.storage_path is set)
  summary.json     the ranking of the trials     (RunDir.summary_file)
  trials.csv       the same, one row per trial   (RunDir.trials_file)
  .faults/         faults claimed by run.fault.inject
  tune/            Tune's experiment dir         (RunDir.experiment_dir)
    tuner.pkl      what --resume restores from
    <trial>/progress.csv, result.json, events.out.tfevents.*, checkpoint_*/
```

Everything is written atomically (`mobrl.core.files`); reading a damaged file is a one-line error.
"""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError

#: files of a Tune trial dir
TRIAL_PROGRESS = "progress.csv"
TRIAL_RESULT = "result.json"
#: marker file RLlib writes into every algorithm checkpoint
RLLIB_CHECKPOINT_MARKER = "rllib_checkpoint.json"

_PACKAGES = ("mobrl", "ray", "torch", "gymnasium", "mobile-env", "hydra-core", "numpy")


class RunDir:
    """The files of one `mobrl train` run."""

    CONFIG = "config.yaml"
    MANIFEST = "manifest.json"
    #: the training outcome (best return, best and last checkpoints, every trial)
    SUMMARY = "summary.json"
    TRIALS = "trials.csv"
    #: Tune's experiment dir inside a run dir (unless run.storage_path puts it elsewhere)
    TUNE = "tune"
    #: Tune's experiment state inside the experiment dir
    TUNER_STATE = "tuner.pkl"
    #: claimed faults of run.fault.inject (mobrl.core.faults)
    FAULTS = ".faults"
    #: what envs that failed under this run said (mobrl.core.envfailures)
    ENV_FAILURES = ".env-failures"

    def __init__(self, path: Path | str):
        self.path = Path(path).expanduser().absolute()

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def config_file(self) -> Path:
        return self.path / self.CONFIG

    @property
    def manifest_file(self) -> Path:
        return self.path / self.MANIFEST

    @property
    def summary_file(self) -> Path:
        return self.path / self.SUMMARY

    @property
    def trials_file(self) -> Path:
        return self.path / self.TRIALS

    @property
    def faults_dir(self) -> Path:
        return self.path / self.FAULTS

    @property
    def env_failures_dir(self) -> Path:
        return self.path / self.ENV_FAILURES

    def is_run(self) -> bool:
        """Whether the folder holds a `mobrl train` run (its config and manifest)."""
        return self.config_file.is_file() and self.manifest_file.is_file()

    def experiment_dir(self, manifest: dict[str, Any] | None = None) -> Path:
        """Tune's experiment dir of the run (where the manifest says, else `tune/`)."""
        where = (manifest or {}).get("experiment_dir")
        return Path(where) if where else self.path / self.TUNE

    def read_manifest(self) -> dict[str, Any]:
        """The manifest as plain data ({} when missing or damaged; `load` names the damage)."""
        try:
            return json.loads(self.manifest_file.read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    def elsewhere(self) -> Path | None:
        """The experiment dir when run.storage_path put it outside the run dir, else None. A
        run dir with its own `tune/` (also one copied or moved, whose manifest still names the
        old place) keeps its experiment inside."""
        if (self.path / self.TUNE).is_dir():
            return None
        experiment = self.experiment_dir(self.read_manifest())
        return experiment if experiment.parent != self.path else None

    def trial_dirs(self) -> list[Path]:
        """The trial dirs that have written progress, by name (in run.storage_path too)."""
        experiment = self.elsewhere() or self.path / self.TUNE
        return sorted({p.parent for p in experiment.glob(f"*/{TRIAL_PROGRESS}")})

    def write_config(self, cfg: Any) -> Path:
        from omegaconf import OmegaConf

        from mobrl.core.files import atomic_write_text

        self.path.mkdir(parents=True, exist_ok=True)
        return atomic_write_text(self.config_file, OmegaConf.to_yaml(cfg, resolve=True))

    def write_manifest(self, manifest: dict[str, Any]) -> Path:
        """The manifest in the run dir, and in the experiment dir when that is elsewhere
        (run.storage_path), so checkpoints there describe themselves too."""
        from mobrl.core.files import atomic_write_json

        self.path.mkdir(parents=True, exist_ok=True)
        experiment = self.experiment_dir(manifest)
        if experiment.parent != self.path:
            experiment.mkdir(parents=True, exist_ok=True)
            atomic_write_json(experiment / self.MANIFEST, manifest)
        return atomic_write_json(self.manifest_file, manifest)

    def read_config(self) -> dict[str, Any]:
        """The resolved config as plain data (no schema)."""
        import yaml

        return yaml.safe_load(self.config_file.read_text()) or {}

    def write_summary(self, summary: dict[str, Any], trials: Any) -> list[Path]:
        """summary.json and trials.csv (`trials`: a DataFrame, one row per trial)."""
        from mobrl.core.files import atomic_write_csv, atomic_write_json

        written = [
            atomic_write_json(self.summary_file, summary),
            atomic_write_csv(self.trials_file, trials),
        ]
        elsewhere = self.elsewhere()
        if elsewhere is not None and elsewhere.is_dir():  # its checkpoints rank there too
            written.append(atomic_write_json(elsewhere / self.SUMMARY, summary))
        return written

    def read_summary(self) -> dict[str, Any] | None:
        """The training summary, or None while the run has not finished."""
        if not self.summary_file.is_file():
            return None
        return json.loads(self.summary_file.read_text())

    @classmethod
    def holding(cls, path: Path) -> RunDir | None:
        """The finished run (one with a summary) that `path`, e.g. a checkpoint, lies in."""
        for folder in Path(path).absolute().parents:
            if (folder / cls.SUMMARY).is_file():
                return cls(folder)
        return None


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def build_manifest(
    cfg: Any, env_config: dict[str, Any], policy_ids: list[str], command: list[str]
) -> dict[str, Any]:
    """Everything needed to rebuild env and policies of a run on another machine."""
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": package_versions(),
        "python": platform.python_version(),
        "scenario": cfg.scenario.name,
        "scenario_kind": cfg.scenario.kind,
        "scenario_id": cfg.scenario.id,
        "env_mode": env_config["mode"],
        "env_config": env_config,
        "algo": cfg.algo.name,
        "policy_ids": policy_ids,
        "seed": cfg.run.seed,
        "command": " ".join(command),
        "mobrl_commit": source_commit(),
    }


def source_commit() -> str | None:
    """The git commit of the mobrl source tree when it runs from a checkout (else None),
    with `-dirty` when the package's files differ from that commit."""
    import subprocess

    root = Path(__file__).resolve().parents[2]  # mobrl/core/rundir.py -> the checkout
    if not (root / ".git").exists():
        return None

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "mobrl")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not commit:
        return None
    return f"{commit}-dirty" if changed else commit


def find_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the run that `path` (a checkpoint, trial or run dir) belongs to."""
    for folder in [path, *path.parents]:
        candidate = folder / RunDir.MANIFEST
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text())
            except json.JSONDecodeError as err:
                raise UserError(
                    f"manifest '{candidate}' is not valid JSON ({err}). Restore it from a backup "
                    "or name the scenario with overrides."
                ) from err
    return None


def is_complete(checkpoint: Path) -> bool:
    """Whether an RLlib checkpoint was written to the end: its JSON files parse and every
    pickle is non-empty and ends with pickle's STOP opcode (a write cut short by a full disk
    or a killed process leaves a truncated file)."""
    try:
        json.loads((checkpoint / RLLIB_CHECKPOINT_MARKER).read_text())
        for file in checkpoint.rglob("*"):
            if file.suffix == ".json":
                json.loads(file.read_text())
            elif file.suffix == ".pkl":
                size = file.stat().st_size
                with open(file, "rb") as f:
                    f.seek(max(size - 1, 0))
                    if not size or f.read(1) != b".":
                        return False
    except (OSError, ValueError):
        return False
    return True


def complete_checkpoints(path: Path) -> list[Path]:
    """The checkpoints at or below `path` that were written to the end (`is_complete`)."""
    return [c for c in list_checkpoints(path) if is_complete(c)]


def read_trial_results(trial_dir: Path) -> list[dict[str, Any]]:
    """The results in a trial's result.json, one per iteration written (a blank line or one
    cut by a stop is left out; no file: none)."""
    path = Path(trial_dir) / TRIAL_RESULT
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def last_complete_checkpoint(path: Path) -> Path | None:
    """The newest checkpoint at or below `path` written to the end (None: none is)."""
    kept = complete_checkpoints(path)
    return max(kept, key=lambda c: c.stat().st_mtime) if kept else None


def unresumable_hint(path: Path) -> str:
    """What a user can do with a run that cannot be resumed: its last complete checkpoint."""
    kept = last_complete_checkpoint(path)
    if kept is None:
        return "start the run again"
    return (
        f"evaluate its last complete checkpoint with mobrl evaluate --checkpoint {kept}, or "
        "start the run again"
    )


def list_checkpoints(path: Path) -> list[Path]:
    """All RLlib algorithm checkpoints at or below `path`, oldest first within each trial."""
    path = Path(path)
    if (path / RLLIB_CHECKPOINT_MARKER).is_file():
        return [path]
    roots = [path]
    run = RunDir(path)
    if run.is_run() and run.elsewhere() is not None:  # run.storage_path holds its trials
        roots.append(run.elsewhere())
    found = sorted(p.parent for root in roots for p in root.rglob(RLLIB_CHECKPOINT_MARKER))
    return [p for p in found if p.name.startswith("checkpoint_")]
