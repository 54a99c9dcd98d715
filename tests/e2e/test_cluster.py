"""`mobrl train ray.address=...` on a real two-node Ray cluster (two raylets on this machine)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_mobrl

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray(*args: str, temp_dir: str) -> None:
    subprocess.run(
        [
            "ray",
            "start",
            *args,
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
        ],
        check=True,
        capture_output=True,
        timeout=120,
        # `ray start --head` turns on token authentication; a joining node must use it too
        env={**os.environ, "RAY_AUTH_MODE": "token"},
    )


def _cluster_pids(temp_dir: str) -> list[int]:
    """This cluster's processes: by their command line, or by a file they hold open under
    `temp_dir` (Ray's agents rename themselves, e.g. `ray::DashboardAgent`)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int(proc.name) == os.getpid():
                continue
            if temp_dir.encode() in (proc / "cmdline").read_bytes() or _holds_file_under(
                proc, temp_dir
            ):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _holds_file_under(proc: Path, folder: str) -> bool:
    for fd in (proc / "fd").iterdir():
        try:
            if os.readlink(fd).startswith(folder + "/"):
                return True
        except OSError:
            continue
    return False


def _stop(temp_dir: str) -> None:
    """Stop this cluster's processes only (`ray stop` would stop every Ray on the machine)."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _cluster_pids(temp_dir):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 15
        while _cluster_pids(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head node with 2 CPUs and a second node with 1 CPU; yields the head's address."""
    temp_dir = tempfile.mkdtemp(prefix="mobrl-ray-", dir="/tmp")  # short: Ray's socket paths
    port = _free_port()
    try:
        _ray(
            "--head",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            temp_dir=temp_dir,
        )
        _ray(f"--address=127.0.0.1:{port}", "--num-cpus=1", temp_dir=temp_dir)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


_CLUSTER_STATE = """
import json, sys
import ray
import ray._private.state as state

ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
actors = {}
for actor in state.actors().values():
    actors.setdefault(actor["ActorClassName"], []).append(actor["Address"]["NodeID"])
alive = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
print(json.dumps({"actors": actors, "alive": alive}))
"""


def _cluster_state(address: str) -> dict:
    """Which nodes each actor class ran on, and the nodes alive, from the cluster's GCS (in a
    process of its own, with the cluster's token authentication)."""
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _CLUSTER_STATE, address],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_AUTH_MODE": "token"},
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_training_spreads_over_both_nodes_survives_a_crash_and_evaluates(
    cluster: str, tmp_path: Path
) -> None:
    run_dir, storage = tmp_path / "run", tmp_path / "storage"
    result = run_mobrl(
        "train",
        "run=smoke",
        f"hydra.run.dir={run_dir}",
        f"ray.address={cluster}",
        f"run.storage_path={storage}",
        "run.resources.num_env_runners=2",  # 1 + 2 CPUs: the trial needs both nodes
        "run.stop.iterations=3",
        "run.fault.inject.what=trial_exit",  # and its retry restores from run.storage_path
        "run.fault.inject.at=2",
        "run.fault.max_failures=1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"joining the Ray cluster at {cluster}" in result.stdout
    assert "retrying it from its latest checkpoint" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert not summary["failed"]
    best = Path(summary["best_checkpoint"])
    assert best.is_relative_to(storage) and best.is_dir()
    assert (storage / run_dir.name / "tuner.pkl").is_file()  # Tune's state next to them

    state = _cluster_state(cluster)
    actors = state["actors"]
    env_runners = {n for name, ids in actors.items() if "EnvRunner" in name for n in ids}
    assert len(env_runners) == 2, actors  # env runners placed on both nodes
    assert len(state["alive"]) == 2  # mobrl left the cluster it joined running

    # the checkpoint in storage restores in a fresh process, with no cluster needed
    evaluated = run_mobrl(
        "evaluate",
        "--checkpoint",
        str(best),
        "--episodes",
        "3",
        "--output",
        str(tmp_path / "eval"),
    )
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    # the run dir it printed leads there too: evaluate and report find the trials in storage
    from_run = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "2", "--output",
        str(tmp_path / "eval_run"),
    )  # fmt: skip
    assert from_run.returncode == 0, from_run.stdout + from_run.stderr
    assert "best checkpoint" in from_run.stdout
    reported = run_mobrl("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert f"tensorboard --logdir {storage / run_dir.name}" in result.stdout
    # and `--resume` finds the experiment in run.storage_path: nothing left to run
    resumed = run_mobrl("train", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((run_dir / "summary.json").read_text())["best_checkpoint"] == str(best)


def test_a_cluster_too_small_for_one_trial_is_refused_before_the_run_starts(
    cluster: str, tmp_path: Path
) -> None:
    """Refused, not left waiting for CPUs that never come (that would end in run_mobrl's
    timeout); how long the refusal takes is not asserted: it depends on the machine's load."""
    run_dir = tmp_path / "run"
    result = run_mobrl(
        "train",
        "run=smoke",
        f"hydra.run.dir={run_dir}",
        f"ray.address={cluster}",
        "run.resources.num_env_runners=4",
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "has 3 CPUs but one trial needs 5" in result.stderr
    assert "Traceback" not in result.stderr
    assert not run_dir.exists()


_LOCAL_RAY = """
import sys
from mobrl.config import compose
from mobrl.training.raysession import configure_ray, init_ray, ray_address

configure_ray()
init_ray(compose(["run=smoke"]))
print(ray_address(), flush=True)
sys.stdin.readline()  # hold the local Ray until the test has looked at it
"""


def _listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_a_local_ray_has_no_dashboard_and_refuses_other_tokens(tmp_path: Path) -> None:
    """What keeps mobrl's local Ray to itself: no dashboard, token authentication on (its
    GCS listens on every interface; Ray cannot bind it to loopback)."""
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCAL_RAY],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
    )
    try:
        address = holder.stdout.readline().strip()
        assert address.rsplit(":", 1)[1].isdigit(), address
        assert 8265 not in _listening_ports()  # Ray's dashboard port
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
        intruder = subprocess.run(
            [sys.executable, "-c", f"import ray; ray.init(address={address!r})"],
            env={**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "not-the-token" * 3},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert intruder.returncode != 0
        assert "InvalidAuthToken" in intruder.stderr or "Authentication" in intruder.stderr
    finally:
        holder.communicate("\n", timeout=60)
