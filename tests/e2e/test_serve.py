"""`mobrl serve` of `mobrl train`'s run dirs: the checkpoint `mobrl evaluate` would pick,
restored the same way, acting as it does (closed-loop episodes equal evaluate's), and a
checkpoint with a policy per agent naming the ids it takes. `mobrl serve --replicas 2` on a
local Ray Serve answers as the single-process service does, and leaves no process behind."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli.test_serve import (
    BAD,
    Server,
    _read_lines,
    evaluated,
    observations,
    one_line_error,
    play,
    serving,
)
from tests.conftest import ray_process_count
from tests.e2e.conftest import train_smoke

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def arena_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("arena") / "run"
    train_smoke(run_dir, "scenario=arena")
    return run_dir


def test_a_run_dir_is_served_as_evaluate_plays_it(small_ma_run: Path, tmp_path: Path) -> None:
    from mobrl.evaluation.policies import TrainedPolicy
    from mobrl.evaluation.targets import pick_checkpoint

    checkpoint, _ = pick_checkpoint(small_ma_run, "best")
    with serving("--checkpoint", str(small_ma_run)) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            health = client.get("/healthz").json()
            assert health["policy"] == str(checkpoint) and health["model"] == "policy"
            assert health["observation"] == {"name": "mobile", "size": 13}
            assert health["decide"].endswith("Use /v1/act.")
            rng = np.random.default_rng(0)
            obs = {f"ue_{i}": rng.normal(size=13).astype(np.float32) for i in range(5)}
            sent = {a: o.tolist() for a, o in obs.items()}
            acted = client.post("/v1/act", json={"observations": sent}).json()["actions"]
            own = TrainedPolicy.from_checkpoint(checkpoint).act(obs)
            assert acted == {a: int(v) for a, v in own.items()}
            sampled = client.post("/v1/act", json={"observations": sent, "explore": True})
            assert all(0 <= a < 4 for a in sampled.json()["actions"].values())
            rows = [sent[f"ue_{i}"] for i in range(5)]
            predicted = client.post("/v1/models/policy:predict", json={"instances": rows})
            assert predicted.json()["predictions"] == [acted[f"ue_{i}"] for i in range(5)]

            def ask(env: Any, observed: dict) -> dict:
                sent = {a: observed[a].tolist() for a in env.agents}
                return client.post("/v1/act", json={"observations": sent}).json()["actions"]

            served = [play("small", "mobile", seed, ask) for seed in (0, 1)]
    assert served == evaluated(str(small_ma_run), [0, 1], tmp_path / "evaluation")


def test_a_policy_per_agent_takes_its_agents_ids(arena_run: Path) -> None:
    with serving("--checkpoint", str(arena_run)) as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            health = client.get("/healthz").json()
            sizes = {n["policy_id"]: n["observation_size"] for n in health["networks"]}
            assert set(sizes) == {"chaser", "explorer"}
            size = sizes["chaser"]
            one_line_error(
                client.post("/v1/act", json={"observations": {"chaserr": [0.0] * size}}),
                422,
                "unknown agent id 'chaserr'",
                "chaser, explorer",
            )
            both = {"chaser": [0.0] * size, "explorer": [0.0] * sizes["explorer"]}
            acted = client.post("/v1/act", json={"observations": both})
            assert acted.status_code == 200 and set(acted.json()["actions"]) == set(both)


#: how long `mobrl serve --replicas` may take to start Ray, Serve and its replicas
RAY_START_S = 240.0


def session_processes(session: int) -> list[int]:
    """The live processes of a session (a process started with start_new_session and all
    it started: its Ray's GCS, raylet, workers and replicas), zombies left out."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == session:
            found.append(int(stat.parent.name))
    return found


@contextmanager
def serving_on_ray(*args: str) -> Iterator[Server]:
    """`mobrl serve --port 0 ARGS` (with --replicas) in a session of its own; every process of
    that session is killed when the block ends, whatever happened (no `ray stop`, which
    would stop every Ray of the machine)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    out: list[str] = []
    try:
        deadline = time.monotonic() + RAY_START_S
        while not any(line.startswith("API:") for line in out):
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            assert line is not None, f"mobrl serve ended: {''.join(out)}{proc.stderr.read()}"
            out.append(line)
        found = re.search(r"serving at (http://127\.0\.0\.1:\d+)", "".join(out))
        assert found, "".join(out)
        server = Server(proc, found.group(1), out)
        threading.Thread(
            target=lambda: [out.append(x) for x in iter(lines.get, None)], daemon=True
        ).start()
        yield server
    finally:
        for pid in session_processes(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=30)


def test_replicas_on_ray_serve_answer_as_one_process_does(tmp_path: Path) -> None:
    """`mobrl serve --replicas 2` on a local Ray of 2 CPUs: two replicas, the same /healthz,
    the same actions and the same one-line errors as the single-process service; closed-loop
    episodes through it are `mobrl evaluate`'s; SIGTERM stops it and its whole Ray."""
    pytest.importorskip("ray.serve", reason="the serve-ray extra is not installed")
    ray_before = ray_process_count()
    limits = ("--max-body", "64KiB", "--read-timeout", "1")
    with serving_on_ray(
        "--checkpoint", "zoo:small", "--replicas", "2", "ray.num_cpus=2", *limits
    ) as replicated:
        banner = "".join(replicated.out)
        assert "by 2 replicas on Ray Serve (a local Ray)" in banner, banner
        replicas = [
            pid
            for pid in session_processes(replicated.proc.pid)
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::ServeReplica")
        ]
        assert len(replicas) == 2
        with serving("--checkpoint", "zoo:small", *limits) as single:
            with (
                httpx.Client(base_url=replicated.url, timeout=30) as many,
                httpx.Client(base_url=single.url, timeout=30) as one,
            ):
                assert many.get("/healthz").json() == one.get("/healthz").json()
                for seed in range(20):  # answered by either replica
                    body = {"observations": observations(30, seed)}
                    acted = many.post("/v1/act", json=body)
                    assert acted.status_code == 200
                    assert acted.json() == one.post("/v1/act", json=body).json()
                rows = {"instances": list(observations(30).values())}
                predicted = many.post("/v1/models/small:predict", json=rows).json()
                assert predicted == one.post("/v1/models/small:predict", json=rows).json()
                for _, (method, path, content), status, pieces in BAD:
                    answer = many.request(method, path, content=content)
                    one_line_error(answer, status, *pieces)
                    assert answer.json() == one.request(method, path, content=content).json()

                def ask(env: Any, observed: dict) -> dict:
                    sent = {a: observed[a].tolist() for a in env.agents}
                    answer = many.post("/v1/act", json={"observations": sent})
                    return answer.json()["actions"]

                served = [play("small", "topk_gain", seed, ask) for seed in (0, 1)]
        assert served == evaluated("zoo:small", [0, 1], tmp_path / "evaluation")

        told = time.monotonic()
        replicated.proc.send_signal(signal.SIGTERM)
        replicated.proc.wait(timeout=60)
        took = time.monotonic() - told
        assert replicated.proc.returncode == 0, replicated.proc.stderr.read()
        assert replicated.proc.stderr.read() == ""
        deadline = time.monotonic() + 10
        while session_processes(replicated.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session_processes(replicated.proc.pid) == []
    time.sleep(0.2)  # the reader thread has the last line
    assert "mobrl serve: stopped (SIGTERM); its replicas are shut down." in "".join(replicated.out)
    assert ray_process_count() <= ray_before
    print(f"--replicas 2: stopped {took:.1f} s after SIGTERM")


def test_a_checkpoints_policy_sent_to_a_replica_acts_as_before(small_ma_run: Path) -> None:
    """What Ray does to the policy of a run dir on its way to a replica (a pickle round
    trip) leaves its actions and its numpy fast path as they were."""
    import pickle

    from mobrl.serve.policy import ServedPolicy

    served = ServedPolicy.load(str(small_ma_run), [])
    sent = pickle.loads(pickle.dumps(served))
    modules = sent.policy.modules.values()
    assert set(sent.policy._numpy) == {id(m) for m in modules}
    assert all(actor is not None for actor in sent.policy._numpy.values())
    obs = {a: np.asarray(o) for a, o in observations(40, width=13).items()}
    assert sent.act(obs) == served.act(obs)
