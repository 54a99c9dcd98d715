"""RunDir: the file names of a run, the manifest, config and summary written and read back."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mobrl.config import compose, load_run
from mobrl.core.errors import UserError
from mobrl.core.rundir import RunDir, find_manifest


def test_a_run_dir_round_trips_its_files(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    assert not run.is_run() and run.read_summary() is None
    cfg = compose(["scenario=small", "run=smoke"])
    run.write_config(cfg)
    run.write_manifest({"scenario": "small", "experiment_dir": str(run.path / RunDir.TUNE)})
    assert run.is_run()
    loaded, manifest = load_run(run)
    assert loaded.scenario.name == "small" and manifest["scenario"] == "small"
    assert run.experiment_dir(manifest) == run.path / "tune"
    assert not (run.path / "tune" / RunDir.MANIFEST).exists()  # the run dir's copy is enough

    run.write_summary({"best_return": 1.5}, pd.DataFrame([{"rank": 1, "trial": "a"}]))
    assert run.read_summary() == {"best_return": 1.5}
    assert pd.read_csv(run.trials_file)["trial"].tolist() == ["a"]
    checkpoint = run.path / "tune" / "trial_a" / "checkpoint_000001"
    checkpoint.mkdir(parents=True)
    assert RunDir.holding(checkpoint).path == run.path
    assert RunDir.holding(tmp_path) is None
    assert find_manifest(checkpoint)["scenario"] == "small"


def test_manifest_is_also_written_next_to_checkpoints_elsewhere(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    experiment = tmp_path / "storage" / "run"
    run.write_manifest({"scenario": "small", "experiment_dir": str(experiment)})
    assert json.loads((experiment / RunDir.MANIFEST).read_text())["scenario"] == "small"
    assert run.experiment_dir(json.loads(run.manifest_file.read_text())) == experiment


def test_a_run_with_storage_elsewhere_leads_to_its_trials_and_checkpoints(tmp_path: Path) -> None:
    """With run.storage_path the run dir `mobrl train` prints is no dead end: its trials,
    checkpoints and summary are found from it, and its checkpoints rank where they lie."""
    from mobrl.core.rundir import RLLIB_CHECKPOINT_MARKER, list_checkpoints

    run = RunDir(tmp_path / "run")
    experiment = tmp_path / "storage" / "run"
    run.write_config(compose(["scenario=small", "run=smoke"]))
    run.write_manifest({"scenario": "small", "experiment_dir": str(experiment)})
    trial = experiment / "PPO_x_00000"
    checkpoint = trial / "checkpoint_000001"
    checkpoint.mkdir(parents=True)
    (checkpoint / RLLIB_CHECKPOINT_MARKER).write_text("{}")
    (trial / "progress.csv").write_text("training_iteration\n1\n")
    assert run.elsewhere() == experiment
    assert run.trial_dirs() == [trial]
    assert list_checkpoints(run.path) == [checkpoint]
    run.write_summary({"best_checkpoint": str(checkpoint)}, pd.DataFrame([{"trial": "x"}]))
    assert RunDir.holding(checkpoint).path == experiment  # its summary lies beside it too
    # a run dir copied elsewhere with its own tune/ keeps to its own checkpoints
    copy = RunDir(tmp_path / "copy")
    copy.write_manifest({"scenario": "small", "experiment_dir": str(tmp_path / "run" / "tune")})
    copy.write_config(compose(["scenario=small", "run=smoke"]))
    own = copy.path / "tune" / "PPO_x_00000" / "checkpoint_000001"
    own.mkdir(parents=True)
    (own / RLLIB_CHECKPOINT_MARKER).write_text("{}")
    assert copy.elsewhere() is None and list_checkpoints(copy.path) == [own]


def test_not_a_run_and_damaged_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not a directory"):
        load_run(RunDir(tmp_path / "missing"))
    with pytest.raises(UserError, match="is not a mobrl run dir"):
        load_run(RunDir(tmp_path))
    run = RunDir(tmp_path)
    run.config_file.write_text("scenario: [unclosed\n")
    run.manifest_file.write_text("{}")
    with pytest.raises(UserError, match="cannot read the run's config or manifest"):
        load_run(run)
    run.manifest_file.write_text("{not json")
    with pytest.raises(UserError, match="manifest .* is not valid JSON"):
        find_manifest(tmp_path)


def test_a_checkpoint_cut_short_is_never_picked(tmp_path: Path) -> None:
    """A save cut short (a full disk, a kill) leaves a truncated pickle: `--pick last` takes
    the last complete checkpoint and says it skipped one; a lone cut one is a one-line error."""
    import pickle

    from mobrl.core.rundir import RLLIB_CHECKPOINT_MARKER, is_complete
    from mobrl.evaluation.targets import pick_checkpoint

    trial = tmp_path / "tune" / "PPO_x_00000"
    for i in (1, 2):
        ckpt = trial / f"checkpoint_00000{i}"
        (ckpt / "learner_group").mkdir(parents=True)
        (ckpt / RLLIB_CHECKPOINT_MARKER).write_text('{"type": "Algorithm"}')
        (ckpt / "learner_group" / "state.pkl").write_bytes(pickle.dumps({"weights": [1.0] * 50}))
    last = trial / "checkpoint_000002"
    state = last / "learner_group" / "state.pkl"
    state.write_bytes(state.read_bytes()[:-20])  # the disk filled up mid-write
    assert is_complete(trial / "checkpoint_000001") and not is_complete(last)
    picked, note = pick_checkpoint(tmp_path, "last")
    assert picked == trial / "checkpoint_000001" and "1 incomplete checkpoint skipped" in note
    with pytest.raises(UserError, match="is incomplete"):
        pick_checkpoint(last, "last")
    # a run that cannot be resumed points at the newest complete checkpoint, not the cut one
    from mobrl.core.rundir import last_complete_checkpoint, unresumable_hint

    assert last_complete_checkpoint(tmp_path) == trial / "checkpoint_000001"
    assert unresumable_hint(tmp_path).endswith(
        f"--checkpoint {trial / 'checkpoint_000001'}, or start the run again"
    )
    assert unresumable_hint(tmp_path / "empty") == "start the run again"


def test_a_checkout_names_its_commit() -> None:
    """Run from a git checkout, a run records the commit it was trained with."""
    import mobrl
    from mobrl.core.rundir import source_commit

    checkout = Path(mobrl.__file__).resolve().parents[1]
    if not (checkout / ".git").exists():
        pytest.skip("mobrl is installed, not run from a checkout")
    commit = source_commit()
    assert commit and len(commit.split("-")[0]) == 12
