"""algo=mappo through real RLlib: on dense_urban, where UEs arrive and leave (RLlib's
multi-agent runner), and on small, sampled as UE slots, the learner's critic pools teams of
the UEs present at each step, training updates the team encoder, and the checkpoint plays in
a fresh process (its actor alone)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import assert_plays_beside_greedy, run_mobrl

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("scenario", "module", "team"),
    [
        ("dense_urban", "shared", None),  # RLlib's multi-agent runner: UEs come and go
        ("small", "default_policy", 5.0),  # UE slots: every UE of the copy, every step
    ],
)
def test_mappo_trains_with_the_team_and_its_checkpoint_plays(
    tmp_path: Path, scenario: str, module: str, team: float | None
) -> None:
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModule

    run_dir = tmp_path / "run"
    result = run_mobrl(
        "train", f"scenario={scenario}", "algo=mappo", "run=smoke", "run.stop.iterations=2",
        "run.resources.num_env_runners=0", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (trial,) = [p for p in (run_dir / "tune").iterdir() if p.is_dir()]
    progress = pd.read_csv(trial / "progress.csv")
    assert len(progress) == 2
    # teams of more than one UE reached the learner, and the value loss is reported
    sizes = progress["learners/__all_modules__/team_size_mean"]
    assert (sizes > 1.5).all() if team is None else (sizes == team).all(), sizes.tolist()
    assert progress[f"learners/{module}/vf_loss"].notna().all()
    # the team encoder is the learner's and training moved it
    first, last = sorted(trial.glob("checkpoint_*"))[:1] + sorted(trial.glob("checkpoint_*"))[-1:]
    weights = [
        RLModule.from_checkpoint(str(c / f"learner_group/learner/rl_module/{module}")).state_dict()
        for c in (first, last)
    ]
    team = [key for key in weights[0] if key.startswith("team.")]
    assert team and any(not torch.equal(weights[0][k], weights[1][k]) for k in team)
    assert_plays_beside_greedy(run_dir, tmp_path / "eval")
