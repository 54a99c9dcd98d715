"""The CLI stays light: help and config printing never import Ray, torch or mobile-env."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

PROBE = """
import sys
from mobrl.cli import main
sys.argv = {argv!r}
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
heavy = sorted(m for m in ("ray", "torch", "mobile_env") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
print("CODE=" + str(code), file=sys.stderr)
"""


def _probe(argv: list[str], cwd) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=["mobrl", *argv])],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    return out.stdout, out.stderr


def test_help_does_not_import_heavy_modules(tmp_path) -> None:
    stdout, stderr = _probe(["--help"], tmp_path)
    assert "train" in stdout
    assert "HEAVY=\n" in stderr and "CODE=0" in stderr


def test_cfg_job_prints_resolved_config_without_ray(tmp_path) -> None:
    stdout, stderr = _probe(["train", "--cfg", "job", "scenario=medium", "env=central"], tmp_path)
    assert "HEAVY=\n" in stderr, stderr
    cfg = yaml.safe_load(stdout)
    assert cfg["scenario"]["id"] == "medium"
    assert cfg["scenario"]["path"].endswith("medium.yaml")
    assert cfg["env"]["mode"] == "central"
    assert not (tmp_path / "outputs").exists()


def test_cfg_job_reaches_no_simulator(mobrl_cli, tmp_path) -> None:
    """`--cfg job` runs nothing, so it connects to nothing: the config of a simulator not
    started yet prints (its settings still checked), and no run dir is made."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed again: nobody listens there
    address = f"scenario.address=127.0.0.1:{port}"
    result = mobrl_cli("train", "scenario=external", address, "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"address: 127.0.0.1:{port}\n" in result.stdout
    assert not (tmp_path / "outputs").exists()
    bad = mobrl_cli("train", "scenario=external", "scenario.address=nowhere", "--cfg", "job")
    assert bad.returncode == 2 and bad.stderr.startswith("error: scenario.address 'nowhere'")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_config_error_does_not_import_heavy_modules(tmp_path) -> None:
    _, stderr = _probe(["train", "scenario=nope"], tmp_path)
    assert "HEAVY=\n" in stderr and "CODE=2" in stderr


def test_train_help_lists_groups_and_options(mobrl_cli, tmp_path) -> None:
    result = mobrl_cli("train", "--help", cwd=tmp_path)
    assert result.returncode == 0
    for line in (
        "algo: appo, dqn, impala, mappo, ppo, sac",
        "env: cells, central, hierarchical, ma",
        "scenario: acrobot, arena, cartpole, city, city_energy, city_interference, custom, "
        "dense_urban, external, frozenlake, gym, highway, large, medium, metro, small, uma19, "
        "uma19_energy, umi_dense, umi_dense_energy",
    ):
        assert line in result.stdout
    assert "mobrl train -m" in result.stdout
    assert "  name: small\n" in result.stdout  # values, not `${...}` interpolations
    assert "${" not in result.stdout


def test_version(mobrl_cli) -> None:
    from mobrl import __version__

    result = mobrl_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"mobrl {__version__}"


def test_scenarios_list_stays_light(tmp_path) -> None:
    stdout, stderr = _probe(["scenarios", "list"], tmp_path)
    assert "HEAVY=\n" in stderr and "CODE=0" in stderr, stderr
    assert "dense_urban" in stdout and "arena" in stdout


@pytest.mark.parametrize(
    "overrides",
    [
        ["env.sampler=slots"],
        ["scenario=dense_urban", "env.sampler=ue_slots"],
        ["env.policies=bogus"],
    ],
)
def test_env_errors_exit_2_before_any_run_dir_is_made(mobrl_cli, tmp_path, overrides) -> None:
    result = mobrl_cli("train", *overrides, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "env.sampler" in result.stderr or "env.policies" in result.stderr
    assert not (tmp_path / "outputs").exists()


def test_error_found_after_hydra_started_leaves_no_job_dir(mobrl_cli, tmp_path) -> None:
    """`algo.training.lr=abc` passes the schema (lr may be a schedule) and fails when RLlib's
    config is built, after Hydra made the job dir: that dir goes again."""
    result = mobrl_cli("train", "run=smoke", "algo.training.lr=abc", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and "lr" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "outputs").exists()


def test_unreachable_ray_address_fails_within_seconds() -> None:
    import socket
    import time

    from mobrl.core.errors import UserError
    from mobrl.training.raysession import probe_ray_address

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        probe_ray_address(f"127.0.0.1:{port}")  # something answers: left to Ray
        probe_ray_address(f"ray://127.0.0.1:{port}")
    start = time.monotonic()
    with pytest.raises(
        UserError, match=f"cannot reach a Ray cluster at ray.address=127.0.0.1:{port}"
    ):
        probe_ray_address(f"127.0.0.1:{port}", timeout=2.0)  # closed now
    assert time.monotonic() - start < 5
    with pytest.raises(UserError, match="is not host:port"):
        probe_ray_address("my-cluster")
    probe_ray_address(None)
    probe_ray_address("auto")
