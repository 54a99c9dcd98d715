"""`mobrl serve` as a user runs it: a real server process on 127.0.0.1 and a real HTTP client.
Every bad request gets a one-line 4xx and the next good request is answered; a token guards
a service exposed beyond localhost; SIGTERM lets the request in flight finish; and episodes
played with actions fetched over HTTP are `mobrl evaluate`'s episodes, number for number.

Every server is started with a deadline and killed in a `finally`."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tests.conftest import run_mobrl

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

#: how long a server may take to print its address and answer /healthz
START_S = 60.0
#: --read-timeout of the servers under test (a stalled body is answered after it)
READ_TIMEOUT_S = 1.0


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    out: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def _read_lines(stream: Any, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@contextmanager
def serving(*args: str, token: str | None = None) -> Iterator[Server]:
    """`mobrl serve --port 0 ARGS` until the block ends (killed then, whatever happened)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("MOBRL_SERVE_TOKEN", None)
    if token is not None:
        env["MOBRL_SERVE_TOKEN"] = token
    proc = subprocess.Popen(
        [sys.executable, "-m", "mobrl", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        deadline = time.monotonic() + START_S
        out: list[str] = []
        url = None
        while url is None:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            assert line is not None, f"mobrl serve ended: {''.join(out)}{proc.stderr.read()}"
            out.append(line)
            found = re.search(r"serving at (http://127\.0\.0\.1:\d+)", line)
            url = found.group(1) if found else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        while True:
            try:
                if httpx.get(f"{url}/healthz", headers=headers, timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "mobrl serve did not answer /healthz"
            time.sleep(0.05)
        server = Server(proc, url, out)
        threading.Thread(target=_drain, args=(lines, out), daemon=True).start()
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _drain(lines: queue.Queue, out: list[str]) -> None:
    while (line := lines.get()) is not None:
        out.append(line)


def raw_request(port: int, data: bytes, then: bytes = b"", pause: float = 0.0) -> bytes:
    """Send `data` on a new connection, wait `pause`, send `then`; the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        if pause:
            time.sleep(pause)
        if then:
            sock.sendall(then)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks):
                head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
                length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
                if length and len(body) >= int(length.group(1)):
                    break
        return b"".join(chunks)


def one_line_error(response: Any, status: int, *pieces: str) -> None:
    assert response.status_code == status, response.text
    assert response.text.count("\n") == 0 and list(response.json()) == ["error"], response.text
    for piece in pieces:
        assert piece in response.json()["error"], response.text


def observations(n: int, seed: int = 0, width: int = 20) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {f"ue_{i}": rng.normal(size=width).astype(np.float32).tolist() for i in range(n)}


@pytest.fixture(scope="module")
def small() -> Iterator[Server]:
    """One zoo:small service for the module's requests (64 KiB bodies, 1 s to send one)."""
    with serving(
        "--checkpoint", "zoo:small", "--max-body", "64KiB", "--read-timeout", str(READ_TIMEOUT_S)
    ) as server:
        yield server


def test_a_zoo_policy_answers_every_endpoint(small: Server) -> None:
    from mobrl.evaluation.zoo import ZooPolicy

    banner = "".join(small.out)
    assert "zoo policy small on small (env.obs=topk_gain env.topk=3" in banner
    with httpx.Client(base_url=small.url, timeout=10) as client:
        health = client.get("/healthz").json()
        assert health["status"] == "ready" and health["policy"] == "zoo:small"
        assert health["observation"] == {"name": "topk_gain", "topk": 3, "size": 20}
        assert health["actions"] == 4 and health["scenario"] == "small"
        obs = observations(30)
        acted = client.post("/v1/act", json={"observations": obs})
        want = ZooPolicy.load("zoo:small").act({a: np.array(o) for a, o in obs.items()})
        assert acted.status_code == 200 and acted.json() == {"actions": want}
        # any number of agents, any ids: one shared policy acts for each
        odd = {"cell-7/ue 12": obs["ue_0"]}
        assert client.post("/v1/act", json={"observations": odd}).json() == {
            "actions": {"cell-7/ue 12": want["ue_0"]}
        }
        rows = [obs[f"ue_{i}"] for i in range(30)]
        predicted = client.post("/v1/models/small:predict", json={"instances": rows})
        assert predicted.json() == {"predictions": [want[f"ue_{i}"] for i in range(30)]}
        sampled = client.post("/v1/act", json={"observations": obs, "explore": True}).json()
        assert set(sampled["actions"]) == set(obs)
        # the request the banner suggests works as printed
        example = re.search(r"-d '(.*?)' (http://\S+)", banner)
        assert example is not None
        tried = client.post(example.group(2), content=example.group(1))
        assert tried.status_code == 200 and set(tried.json()["actions"]) == {"ue_0", "ue_1"}
        metrics = client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        assert re.search(
            r'mobrl_serve_requests_total\{endpoint="/v1/act",status="200"\} \d', metrics.text
        )
        assert 'mobrl_serve_request_duration_seconds_count{endpoint="/v1/act"}' in metrics.text
        assert client.get("/openapi.json").json()["info"]["title"] == "mobrl serve"


#: (case, request as raw bytes or (method, path, body), status, pieces of the error)
BAD = [
    ("malformed JSON", ("POST", "/v1/act", b'{"observations": {"ue_0": [1,'), 400, ["not valid JSON"]),
    ("wrong size", ("POST", "/v1/act", b'{"observations": {"ue_0": [1, 2, 3]}}'), 422, ["has 3 values", "takes 20"]),
    ("NaN", ("POST", "/v1/act", b'{"observations": {"ue_0": [NaN' + b", 0" * 19 + b"]}}"), 422, ["nan at index 0"]),
    ("Infinity", ("POST", "/v1/act", b'{"observations": {"ue_0": [0' + b", 0" * 18 + b", Infinity]}}"), 422, ["inf at index 19"]),
    ("a string", ("POST", "/v1/act", b'{"observations": {"ue_0": ["__import__(\'os\')"]}}'), 422, ["valid number"]),
    ("no agents", ("POST", "/v1/act", b'{"observations": {}}'), 422, ["no observations"]),
    ("unknown field", ("POST", "/v1/act", b'{"obs": {}}'), 422, ["'observations' is missing"]),
    ("unknown model", ("POST", "/v1/models/large:predict", b'{"instances": [[0]]}'), 404, ["unknown model 'large'"]),
    ("predict wrong size", ("POST", "/v1/models/small:predict", b'{"instances": [[0]]}'), 422, ["instance 0 has 1 values"]),
    ("unknown path", ("GET", "/v2/act", b""), 404, ["no endpoint /v2/act"]),
    ("wrong method", ("GET", "/v1/act", b""), 405, ["GET is not allowed"]),
    ("a pickle", ("POST", "/v1/act", b"\x80\x04\x95\x15\x00cos\nsystem\n."), 400, ["not valid JSON"]),
    ("declared too large", ("POST", "/v1/act", b"x" * 70_000), 413, ["64 KiB", "--max-body"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "request_", "status", "pieces"), BAD, ids=[c[0] for c in BAD])
def test_bad_requests_get_one_line_4xx_and_the_next_good_one_an_answer(
    small: Server, case: str, request_: tuple[str, str, bytes], status: int, pieces: list[str]
) -> None:
    method, path, body = request_
    with httpx.Client(base_url=small.url, timeout=10) as client:
        one_line_error(client.request(method, path, content=body), status, *pieces)
        good = client.post("/v1/act", json={"observations": observations(3)})
        assert good.status_code == 200 and len(good.json()["actions"]) == 3


def _good(small: Server) -> None:
    good = httpx.post(f"{small.url}/v1/act", json={"observations": observations(2)}, timeout=10)
    assert good.status_code == 200


def _answer(raw: bytes) -> tuple[int, str]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def test_a_chunked_body_over_the_limit_is_cut_at_the_limit(small: Server) -> None:
    head = b"POST /v1/act HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (40_000, b" " * 40_000)
    status, body = _answer(raw_request(small.port, head + chunk + chunk + b"0\r\n\r\n"))
    assert status == 413 and "--max-body" in body and "\n" not in body
    _good(small)


def test_a_client_that_stalls_gets_408_and_others_are_served_meanwhile(small: Server) -> None:
    head = b"POST /v1/act HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    answered: list[bytes] = []
    stalled = threading.Thread(
        target=lambda: answered.append(raw_request(small.port, head + b'{"observations"'))
    )
    stalled.start()
    try:
        _good(small)  # the stalled client holds no one up
    finally:
        stalled.join(timeout=READ_TIMEOUT_S + 10)
    status, body = _answer(answered[0])
    assert status == 408 and "--read-timeout" in body and "15 bytes came" in body
    _good(small)


def test_a_token_guards_the_service() -> None:
    exposed = run_mobrl("serve", "--checkpoint", "zoo:small", "--host", "0.0.0.0", timeout=60)
    assert exposed.returncode == 2 and exposed.stdout == ""
    assert exposed.stderr.count("\n") == 1 and "--token" in exposed.stderr
    assert "MOBRL_SERVE_TOKEN" in exposed.stderr and "Traceback" not in exposed.stderr
    with serving("--checkpoint", "zoo:small", token="t0ken-for-tests") as server:
        assert "Authorization: Bearer" in "".join(server.out)
        with httpx.Client(base_url=server.url, timeout=10) as client:
            body = {"observations": observations(2)}
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "t0ken"}):
                one_line_error(client.post("/v1/act", json=body, headers=headers), 401, "Bearer")
            one_line_error(client.get("/metrics"), 401)
            auth = {"Authorization": "Bearer t0ken-for-tests"}
            assert client.post("/v1/act", json=body, headers=auth).status_code == 200


def test_sigterm_lets_the_request_in_flight_finish_and_exits_within_2_s() -> None:
    with serving("--checkpoint", "zoo:small") as server:
        body = json.dumps({"observations": observations(5)}).encode()
        head = b"POST /v1/act HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        answered: list[bytes] = []
        in_flight = threading.Thread(
            target=lambda: answered.append(
                raw_request(server.port, head + body[:10], body[10:], 0.5)
            )
        )
        in_flight.start()
        time.sleep(0.2)  # its headers are read: the request is in flight
        told = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=10)
        took = time.monotonic() - told
        in_flight.join(timeout=10)
        assert _answer(answered[0])[0] == 200
        assert server.proc.returncode == 0 and took < 2.0, took
        assert server.proc.stderr.read() == ""
    time.sleep(0.2)  # the reader thread has the last line
    assert "mobrl serve: stopped (SIGTERM) after" in "".join(server.out)


def test_ctrl_c_stops_it_in_one_line_with_exit_130() -> None:
    with serving("--checkpoint", "zoo:small") as server:
        server.proc.send_signal(signal.SIGINT)
        server.proc.wait(timeout=10)
        err = server.proc.stderr.read()
        assert server.proc.returncode == 130
        assert err.startswith("interrupted: mobrl serve stopped after") and err.count("\n") == 1


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_mobrl("serve", "--checkpoint", "zoo:small", "--port", str(port), timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr and "--port 0" in done.stderr


def play(layout: str, obs: str, seed: int, actions_for: Any) -> float:
    """One episode of `mobrl.parallel_env(layout, obs=obs)` on `seed`, each step's actions
    from `actions_for(env, observations)`: its mean UE utility, recorded as evaluate does."""
    import mobrl
    from mobrl.core.metrics import UTILITY_MEAN
    from mobrl.envs.netstats import EpisodeRecorder

    env = mobrl.parallel_env(layout, obs=obs)
    try:
        observed, _ = env.reset(seed=seed)
        recorder = EpisodeRecorder(env.env)  # what evaluate records, step by step
        while env.agents:
            observed, *_ = env.step(actions_for(env, observed))
            recorder.step()
        return recorder.summary(per_ue=False)[UTILITY_MEAN]
    finally:
        env.close()


def evaluated(zoo: str, seeds: list[int], output: Any) -> list[float]:
    """`mobrl.evaluate`'s mean UE utility per episode of `zoo` on `seeds`."""
    import mobrl
    from mobrl.core.metrics import UTILITY_MEAN

    episodes = mobrl.evaluate(
        zoo, episodes=len(seeds), seed=seeds[0], baselines=[], workers=1, output=output
    ).episodes
    assert episodes["seed"].tolist() == seeds
    return episodes[UTILITY_MEAN].tolist()


def test_episodes_through_act_are_evaluates_episodes(small: Server, tmp_path: Any) -> None:
    """Closed loop: `mobrl.parallel_env` stepped with actions fetched from the running service
    gives, episode by episode, the mean UE utility `mobrl.evaluate` reports for zoo:small on
    the same seeds (0 and 1)."""
    seeds = [0, 1]
    with httpx.Client(base_url=small.url, timeout=10) as client:

        def ask(env: Any, observed: dict) -> dict:
            sent = {a: observed[a].tolist() for a in env.agents}
            return client.post("/v1/act", json={"observations": sent}).json()["actions"]

        served = [play("small", "topk_gain", seed, ask) for seed in seeds]
    assert served == evaluated("zoo:small", seeds, tmp_path / "evaluation")


def measurements(env: Any, radio: bool = False) -> dict[str, Any]:
    """What a controller measures of the env's network now: per UE the SNR (dB) of every
    station (`radio`: the received power in dBm), its links and its last rate; per station its
    load and bandwidth."""
    from mobrl.envs.observations import ue_columns
    from mobrl.envs.wrappers import find_core
    from mobrl.network.service import link_arrays

    core = find_core(env.env)
    arrays = link_arrays(core)
    conn = arrays["conn"]
    # mW under a radio model (rates in Mbit/s there), else mobile-env's linear SNR
    heard = core.radio_service().rx if radio else arrays["snr"]
    field, unit = ("rsrp_dbm", 1e6) if radio else ("snr_db", 1.0)
    column = ue_columns(core)
    stations = sorted(core.stations)
    ues = {}
    for agent in env.agents:
        ue = core.users[int(agent.removeprefix("ue_"))]
        j = column[ue.ue_id]
        ues[agent] = {
            field: {
                f"bs_{b}": float(10 * np.log10(heard[i, j]))
                for i, b in enumerate(stations)
                if heard[i, j] > 0
            },
            "links": [f"bs_{b}" for i, b in enumerate(stations) if conn[i, j]],
            "rate_bps": float(core.macro.get(ue, 0.0)) * unit,
        }
    return {
        "stations": [
            {"id": f"bs_{b}", "load": int(conn[i].sum()), "bandwidth_hz": core.stations[b].bw}
            for i, b in enumerate(stations)
        ],
        "ues": ues,
    }


def test_episodes_through_decide_are_evaluates_episodes(small: Server, tmp_path: Any) -> None:
    """Closed loop through `/v1/decide`: measurements read from the env (no observation of
    mobrl's), decisions played as mobile-env's own station actions (`env.obs=mobile`), and
    the episodes are zoo:small's in `mobrl.evaluate`, number for number."""
    seeds = [0, 1]
    with httpx.Client(base_url=small.url, timeout=30) as client:

        def ask(env: Any, observed: dict) -> dict:
            answer = client.post("/v1/decide", json=measurements(env))
            assert answer.status_code == 200, answer.text
            toggles = answer.json()["decisions"]
            return {
                a: 0 if bs is None else int(bs.removeprefix("bs_")) + 1 for a, bs in toggles.items()
            }

        served = [play("small", "mobile", seed, ask) for seed in seeds]
    assert served == evaluated("zoo:small", seeds, tmp_path / "evaluation")


def test_episodes_through_decide_under_interference_are_evaluates_episodes(tmp_path: Any) -> None:
    """The same closed loop for zoo:umi_dense (a radio model: UMi channels, interference,
    proportional fair; env.obs=topk_intent; UEs deciding in turns, which the service plays
    within each request): each UE reports the received power in dBm of every station it
    hears, and the episode is the one `mobrl.evaluate` plays."""
    with serving("--checkpoint", "zoo:umi_dense") as server:
        with httpx.Client(base_url=server.url, timeout=30) as client:

            def ask(env: Any, observed: dict) -> dict:
                answer = client.post("/v1/decide", json=measurements(env, radio=True))
                assert answer.status_code == 200, answer.text
                return {
                    a: 0 if bs is None else int(bs.removeprefix("bs_")) + 1
                    for a, bs in answer.json()["decisions"].items()
                }

            served = [play("umi_dense", "mobile", 0, ask)]
    assert served == evaluated("zoo:umi_dense", [0], tmp_path / "evaluation")
