"""`mobrl zoo export --format onnx` of `mobrl train`'s run dirs: the model of a smoke-trained
checkpoint, run with onnxruntime on observations recorded from its env, gives the actions
mobrl plays with that checkpoint and RLlib's own logits (its RLModule's forward pass), for
Discrete (env=ma) and MultiDiscrete (env=central) actions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_onnx_export import metadata, recorded, run_onnx
from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("run", ["small_ma_run", "small_central_run"])
def test_a_trained_run_exports_as_mobrl_plays_it(
    run: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    import torch

    from mobrl.core.checkpoints import load_rl_modules
    from mobrl.evaluation.policies import TrainedPolicy
    from mobrl.evaluation.targets import pick_checkpoint

    run_dir: Path = request.getfixturevalue(run)
    path = tmp_path / "policy.onnx"
    done = run_mobrl(
        "zoo", "export", "--checkpoint", str(run_dir), "--format", "onnx",
        "--output", str(path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    checkpoint, _ = pick_checkpoint(run_dir, "best")
    meta = metadata(path)
    assert meta["source"] == str(checkpoint) and meta["scenario"] == "small"

    policy = TrainedPolicy.from_checkpoint(checkpoint)
    played = recorded(policy, policy.env_config)
    observations = np.stack(played.observations)
    logits, actions = run_onnx(path, observations)
    np.testing.assert_array_equal(actions, np.asarray(played.actions))

    (module,) = load_rl_modules(checkpoint).values()
    with torch.no_grad():
        out = module.forward_inference({"obs": torch.as_tensor(observations)})
    own = out["action_dist_inputs"].numpy()
    np.testing.assert_allclose(logits, own, rtol=0, atol=1e-5)
    if run == "small_central_run":
        assert actions.shape == (len(observations), len(module.action_space.nvec))
