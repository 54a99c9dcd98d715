"""mobrl.external: envs served by a second process (`python -m mobrl.external`, a script, a C
program) step as they do in process, bit for bit, in JSON and msgpack; mobrl's own `small`
through the protocol is `UEAgentsEnv` with its measures; every failure is one line naming the
address; neither side imports Ray or torch. Servers bind 127.0.0.1 port 0, every wait is
bounded, and every process started here is killed in teardown."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import msgpack
import numpy as np
import pytest

from mobrl.envs.netstats import step_arrays
from mobrl.envs.wrappers import find_core
from mobrl.external import (
    ExternalConnectError,
    ExternalEnvError,
    ExternalServer,
    ExternalStepError,
    connect,
)
from mobrl.external import spaces as ws

REPO = Path(__file__).resolve().parents[2]
ENCODINGS = ("msgpack", "json")


@pytest.fixture(scope="module")
def started():
    processes: list[subprocess.Popen] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream:
                stream.close()


def start(started: list, argv: list[str], cwd: Path | None = None, pythonpath: Path | None = None):
    """A server process; its address from its `... on HOST:PORT` line (within 60 s)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), str(REPO)])
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=cwd or REPO, env=env)  # fmt: skip
    started.append(process)
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    assert " on " in line, f"no address from {argv}: {line!r} {process.poll()}"
    return process, line.rsplit(" on ", 1)[1].strip()


def serve(started: list, entry: str, kwargs: dict | None = None, *more: str, **where: Any):
    argv = [sys.executable, "-m", "mobrl.external", entry, "--address", "127.0.0.1:0", *more]
    return start(started, argv + ["--kwargs", json.dumps(kwargs or {})], **where)


@pytest.fixture(scope="module")
def small(started):
    return serve(started, "mobrl.external:mobile", {"scenario": "small", "mode": "ma"})[1]


def same(a: Any, b: Any) -> bool:
    """Equal values, arrays equal bit for bit and of the same dtype."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b and type(a) in (type(b), float, int, np.float64, np.int64)


def one_line(err: pytest.ExceptionInfo, address: str, *pieces: str) -> str:
    text = str(err.value)
    assert "\n" not in text and address in text, text
    for piece in pieces:
        assert piece in text, text
    return text


# -- spaces and values ----------------------------------------------------------------------

SPACES = [
    gym.spaces.Box(-1.0, 1.0, (3, 2), np.float32),
    gym.spaces.Box(np.array([-np.inf, 0.0]), np.array([np.inf, 5.0]), dtype=np.float64),
    gym.spaces.Box(0, 255, (2, 2, 3), np.uint8),
    gym.spaces.Discrete(5, start=-2),
    gym.spaces.MultiDiscrete([3, 4], start=[1, 0]),
    gym.spaces.MultiBinary([2, 3]),
    gym.spaces.Dict({"pos": gym.spaces.Box(0, 1, (2,), np.float32), "n": gym.spaces.Discrete(3)}),
    gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Tuple((gym.spaces.MultiBinary(4),)))),
]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_spaces_and_values_round_trip_exactly(encoding: str) -> None:
    binary = encoding == "msgpack"
    dumps = (lambda o: msgpack.packb(o, use_bin_type=True)) if binary else json.dumps
    loads = (lambda b: msgpack.unpackb(b, raw=False)) if binary else json.loads
    for space in SPACES:
        back = ws.space_from_wire(loads(dumps(ws.space_to_wire(space))))
        assert back == space and type(back) is type(space)
        space.seed(0)
        for _ in range(5):
            value = space.sample()
            wire = loads(dumps(ws.encoder(space, binary)(value)))
            assert same(ws.decoder(space)(wire), value), space
    # float32 through JSON's decimal floats: exact, extremes and -0.0 included
    box = gym.spaces.Box(-np.inf, np.inf, (6,), np.float32)
    x = np.array([1 / 3, -0.0, 1e-45, 3.4028235e38, -1.1754944e-38, 0.1], np.float32)
    assert same(ws.decoder(box)(json.loads(json.dumps(ws.encoder(box, False)(x)))), x)
    measures = (x.astype(float), np.array([np.nan, 2.0]), (np.arange(3), np.array([True])))
    for binary in (False, True):
        wire = ws.arrays_to_wire(measures, binary)
        if not binary:
            wire = json.loads(json.dumps(wire))
        assert same(ws.arrays_from_wire(wire), measures)


# -- envs through the protocol equal to in process ------------------------------------------


def play(local: Any, remote: Any, seeds: list[int], steps: int, multi: bool) -> int:
    """Step both envs with the same random actions; assert every result equal."""
    rng, compared = np.random.default_rng(1), 0
    spaces = local.action_spaces if multi else None
    for seed in seeds:
        (o1, i1), (o2, i2) = local.reset(seed=seed), remote.reset(seed=seed)
        assert same(o1, o2) and same(i1, i2)
        for _ in range(steps):
            if multi:
                actions = {}
                for a in remote.agents:
                    spaces[a].seed(int(rng.integers(1 << 30)))
                    actions[a] = spaces[a].sample()
            else:
                actions = int(rng.integers(local.action_space.n))
            r1, r2 = local.step(actions), remote.step(actions)
            assert same(r1[0], r2[0]) and same(r1[1], r2[1]) and same(r1[4], r2[4])
            compared += 1
            if not multi:
                assert r1[2:4] == r2[2:4]
                if r1[2] or r1[3]:
                    break
                continue
            done = {k for k in r2[2] if k != "__all__"}
            assert same({k: r1[2][k] for k in done}, {k: r2[2][k] for k in done})
            assert same({k: r1[3][k] for k in done}, {k: r2[3][k] for k in done})
            assert list(getattr(local, "agents", remote.agents)) == remote.agents
            if r2[2]["__all__"] or r2[3]["__all__"] or not remote.agents:
                break
    return compared


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_gymnasium_env_steps_as_in_process(started, encoding: str) -> None:
    script = REPO / "examples" / "external" / "serve_cartpole.py"
    _, address = start(started, [sys.executable, str(script), "127.0.0.1:0"])
    remote = connect(address, encoding=encoding, timeout=10)
    local = gym.make("CartPole-v1")
    assert remote.observation_space == local.observation_space and remote.max_episode_steps == 500
    assert play(local, remote, [0, 1, 2], 600, multi=False) > 30
    remote.close()


TOY = '''
import numpy as np
from gymnasium import spaces


class Toy:
    """A PettingZoo-style ParallelEnv (duck-typed): agents drift; one leaves the box, done."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, n_agents=3):
        self.possible_agents = [f"p{i}" for i in range(n_agents)]
        self.agents = []

    def observation_space(self, agent):
        return spaces.Dict({"pos": spaces.Box(-2, 2, (2,), np.float32),
                            "flags": spaces.MultiBinary(3),
                            "rest": spaces.Tuple((spaces.Discrete(4, start=1),))})

    def action_space(self, agent):
        return spaces.Box(-1, 1, (2,), np.float32)

    def _obs(self, a):
        return {"pos": self.pos[a].copy(), "flags": (self.pos[a][[0, 1, 0]] > 0).astype(np.int8),
                "rest": (int(self.t % 4) + 1,)}

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.agents, self.t = list(self.possible_agents), 0
        self.pos = {a: self.rng.uniform(-1, 1, 2).astype(np.float32) for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, {a: {"start": self.pos[a]} for a in self.agents}

    def step(self, actions):
        self.t += 1
        obs, rew, term, trunc, info = {}, {}, {}, {}, {}
        for a in self.agents:
            self.pos[a] = (self.pos[a] + 0.7 * actions[a]).astype(np.float32)
            out = bool(np.abs(self.pos[a]).max() > 1.5)
            self.pos[a] = np.clip(self.pos[a], -2, 2)
            obs[a], rew[a] = self._obs(a), float(-np.abs(self.pos[a]).sum())
            term[a], trunc[a] = out, self.t >= 8 and not out
            info[a] = {"dist": np.float64(np.hypot(*self.pos[a])), "seen": np.arange(self.t)}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        return obs, rew, term, trunc, info

    def render(self):
        return np.full((4, 6, 3), 7 * self.t, np.uint8)

    def close(self):
        pass


def make(n_agents=3):
    return Toy(n_agents)
'''


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_pettingzoo_env_steps_as_in_process(started, tmp_path: Path, encoding: str) -> None:
    (tmp_path / "toy_pz.py").write_text(TOY)
    _, address = serve(started, "toy_pz:make", {"n_agents": 3}, pythonpath=tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import toy_pz
    finally:
        sys.path.remove(str(tmp_path))
    local, remote = toy_pz.make(3), connect(address, encoding=encoding, timeout=10)
    assert remote.possible_agents == ["p0", "p1", "p2"]
    assert remote.observation_spaces["p1"] == local.observation_space("p1")
    local.action_spaces = {a: local.action_space(a) for a in local.possible_agents}
    assert play(local, remote, [3, 4, 5], 20, multi=True) > 10
    assert same(remote.render(), local.render())
    remote.close()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_small_served_is_ue_agents_env_with_its_measures(small: str, encoding: str) -> None:
    """`mobrl.external:mobile` on `small` (env=ma) reproduces the in-process env of mobrl's
    multi-agent runner: observations, rewards, dones with `__all__`, `__common__` infos, and
    `env.core.metric_arrays()` equal to `step_arrays` of the local core, bit for bit."""
    from mobrl.config import compose
    from mobrl.envs.factory import env_config_from, make_env
    from mobrl.envs.wrappers import UEAgentsEnv

    trained = env_config_from(compose(["scenario=small", "env=ma", "env.sampler=multi_agent"]))
    local = make_env(trained, rllib=False)  # what RLlib's multi-agent runner steps, less Ray
    remote = connect(small, encoding=encoding, timeout=30)
    assert isinstance(local, UEAgentsEnv) and remote.possible_agents == local.possible_agents
    assert remote.observation_spaces == local.observation_spaces
    assert remote.action_spaces == local.action_spaces and remote.max_episode_steps == 100
    core, rng = find_core(local), np.random.default_rng(7)
    for seed in (0, 1):
        (o1, _), (o2, _) = local.reset(seed=seed), remote.reset(seed=seed)
        assert same(o1, o2) and remote.core.NUM_STATIONS == core.NUM_STATIONS == 3
        assert list(remote.core.users) == sorted(core.users)
        for t in range(200):
            actions = {a: int(rng.integers(4)) for a in o1}
            r1, r2 = local.step(actions), remote.step(actions)
            assert all(same(x, y) for x, y in zip(r1, r2)), t
            assert same(remote.core.metric_arrays(), step_arrays(core, sorted(core.users)))
            o1 = r1[0]
            if r1[3]["__all__"]:
                assert t == 99 and r2[3]["__all__"] and remote.agents == []
                break
    remote.close()


SPARSE = """
from mobrl.network import neighbours
from mobrl.external import mobile


def make(**kwargs):
    saved, neighbours.GRID_MIN_PAIRS = neighbours.GRID_MIN_PAIRS, 0
    try:
        return mobile("small", "ma", **kwargs)
    finally:
        neighbours.GRID_MIN_PAIRS = saved
"""


def test_the_sparse_paths_measures_travel_as_it_returns_them(started, tmp_path: Path) -> None:
    (tmp_path / "sparse_small.py").write_text(SPARSE)
    _, address = serve(started, "sparse_small:make", pythonpath=tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import sparse_small
    finally:
        sys.path.remove(str(tmp_path))
    local, remote = sparse_small.make(), connect(address, timeout=30)
    core = find_core(local)
    assert core._grid is not None  # the sparse path: links as (station, UE) index arrays
    o1, _ = local.reset(seed=3)
    remote.reset(seed=3)
    for _ in range(5):
        actions = {a: 1 for a in o1}
        o1 = local.step(actions)[0]
        remote.step(actions)
        mine, theirs = step_arrays(core, sorted(core.users)), remote.core.metric_arrays()
        assert isinstance(theirs[2], tuple) and same(theirs, mine)
    remote.close()


def corridor_model(seed: int, moves: list[int]) -> list[tuple]:
    """corridor.c in Python: each step's observations and rewards, for walkers moving alike."""
    state = seed
    cells = []
    for _ in range(2):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        cells.append((state >> 33) % 5)
    active, out = [True, True], []
    for t, move in enumerate(moves, 1):
        obs, rew = {}, {}
        for i in range(2):
            if not active[i]:
                continue
            cells[i] = min(max(cells[i] + move, 0), 9)
            left = np.float32(30 - t) / np.float32(30)
            obs[f"walker_{i}"] = np.array([np.float32(cells[i]) / np.float32(9), left])
            rew[f"walker_{i}"] = -0.1 + (1.0 if cells[i] == 9 else 0.0)
            active[i] = cells[i] != 9 and t < 30
        out.append((obs, rew))
    return out


def test_the_c_example_steps_from_python(started, tmp_path: Path) -> None:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc)")
    binary = tmp_path / "corridor"
    subprocess.run([cc, "-O2", "-Wall", "-o", str(binary),
                    str(REPO / "examples" / "external" / "corridor.c")], check=True, timeout=60)  # fmt: skip
    _, address = start(started, [str(binary)])
    env = connect(address, timeout=10)  # asks for msgpack: the simulator answers in JSON
    assert env._connection.encoding == "json" and env.possible_agents == ["walker_0", "walker_1"]
    moves = [0, 0, -1] + [1] * 12
    obs, _ = env.reset(seed=11)
    for move, (want_obs, want_rewards) in zip(moves, corridor_model(11, moves)):
        obs, rewards, terms, truncs, _ = env.step({a: move + 1 for a in env.agents})
        assert obs.keys() == want_obs.keys() and rewards == want_rewards
        assert all(same(obs[a], want_obs[a].astype(np.float32)) for a in obs)
        if terms["__all__"]:
            break
    assert terms["__all__"] and env.agents == [] and not truncs["__all__"]
    with pytest.raises(ExternalStepError):  # env.reset, then a step without actions
        env.reset(seed=1)
        env.step({})
    env.close()


# -- failures: one line naming the address --------------------------------------------------


def free_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


class Fake:
    """A scripted peer in a thread: `script(conn)` answers the client's connection."""

    def __init__(self, script: Any, delay: float = 0.0) -> None:
        self.address = free_address()
        host, port = self.address.split(":")
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.thread = threading.Thread(target=self._run, args=(host, int(port), script, delay),
                                       daemon=True)  # fmt: skip
        self.thread.start()

    def _run(self, host: str, port: int, script: Any, delay: float) -> None:
        time.sleep(delay)
        self.listener.bind((host, port))
        self.listener.listen(1)
        conn, _ = self.listener.accept()
        with conn:
            conn.settimeout(10)
            try:
                script(conn)
            except OSError:
                pass
        self.listener.close()


def recv_frame(conn: socket.socket) -> Any:
    size = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))[0]
    return json.loads(conn.recv(size, socket.MSG_WAITALL))


def send(conn: socket.socket, obj: Any) -> None:
    payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    conn.sendall(struct.pack(">I", len(payload)) + payload)


ANNOUNCE = {"version": 1, "encoding": "json", "multi_agent": False,
            "observation_space": ws.space_to_wire(gym.spaces.Box(-1, 1, (2,), np.float32)),
            "action_space": {"type": "Discrete", "n": 2}}  # fmt: skip


def scripted(*replies: Any, hold: float = 0.0, encoding: str = "json"):
    """Answer the hello with ANNOUNCE (in `encoding`), then each request with the next reply
    (bytes as they are, others in `encoding`)."""

    def script(conn: socket.socket) -> None:
        recv_frame(conn)
        send(conn, {**ANNOUNCE, "encoding": encoding})
        for reply in replies:
            size = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))[0]
            conn.recv(size, socket.MSG_WAITALL)
            if not isinstance(reply, bytes):
                reply = (
                    msgpack.packb(reply) if encoding == "msgpack" else json.dumps(reply).encode()
                )
            send(conn, reply)
        time.sleep(hold)

    return script


def test_nothing_listening_is_one_line_within_the_timeout() -> None:
    address, begun = free_address(), time.monotonic()
    with pytest.raises(ExternalConnectError) as err:
        connect(address, timeout=0.6)
    assert time.monotonic() - begun < 3
    one_line(err, address, "no simulator answered within 0.6 s")


def test_a_simulator_that_starts_slowly_is_waited_for() -> None:
    fake = Fake(scripted({"observation": [0.5, -0.5], "info": {}}), delay=0.8)
    env = connect(fake.address, timeout=10)
    assert same(env.reset()[0], np.array([0.5, -0.5], np.float32))


@pytest.mark.parametrize(
    ("hello", "words"),
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not mobrl's framing"),
        (b"\x00\x00\x00\x05{oops", "not valid JSON"),
        ({"version": 2, "multi_agent": False}, "speaks protocol version 2"),
        ({k: v for k, v in ANNOUNCE.items() if k != "action_space"}, "lacks action_space"),
        ({"error": "license expired\nsecond line"}, "the simulator refused: license expired"),
    ],
)
def test_a_bad_hello_reply_is_one_line(hello: Any, words: str) -> None:
    def script(conn: socket.socket) -> None:
        recv_frame(conn)
        if isinstance(hello, bytes):
            conn.sendall(hello)
            time.sleep(1)
        else:
            send(conn, hello)

    fake = Fake(script)
    with pytest.raises(ExternalConnectError) as err:
        connect(fake.address, timeout=5)
    one_line(err, fake.address, words)


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"\xc1\xc1 not json", "not valid JSON"),
        (b"\xc1\xc1 not msgpack", "not valid msgpack"),
        ({"observation": [0, 0], "info": {}, "reward": 1.0}, "lacks 'terminated'"),
        (
            {"observation": [0.5, 3.0], "reward": 0, "terminated": 0, "truncated": 0},
            "outside its announced space Box(-1.0, 1.0, (2,), float32): value 3.0 at index 1",
        ),
        ({"observation": [0.5], "reward": 0, "terminated": 0, "truncated": 0}, "shape (1,)"),
        ({"error": "ValueError: bad action"}, "the simulator failed to step: ValueError: bad"),
    ],
)
def test_a_bad_step_reply_is_a_one_line_runtime_error(reply: Any, words: str) -> None:
    encoding = "msgpack" if "msgpack" in words else "json"
    fake = Fake(scripted({"observation": [0, 0], "info": {}}, reply, hold=1, encoding=encoding))
    env = connect(fake.address, encoding=encoding, timeout=5)
    env.reset()
    with pytest.raises(ExternalStepError) as err:
        env.step(1)
    assert isinstance(err.value, RuntimeError) and isinstance(err.value, ExternalEnvError)
    one_line(err, fake.address, words)


def test_no_reply_within_the_step_timeout() -> None:
    fake = Fake(scripted({"observation": [0, 0], "info": {}}, hold=3))
    env = connect(fake.address, timeout=5, step_timeout=0.3)
    env.reset()
    begun = time.monotonic()
    with pytest.raises(ExternalStepError) as err:
        env.step(0)
    assert time.monotonic() - begun < 2
    one_line(err, fake.address, "no reply to step within 0.3 s")


def test_a_simulator_that_dies_mid_episode(started) -> None:
    process, address = serve(started, "gymnasium:make", {"id": "CartPole-v1"})
    env = connect(address, encoding="json", timeout=10)
    env.reset(seed=0)
    env.step(0)
    process.kill()
    process.wait(10)
    with pytest.raises(ExternalStepError) as err:
        env.step(1)
    one_line(err, address, "the simulator closed the connection (step)")
    with pytest.raises(ExternalStepError):  # and stays closed
        env.reset()


def test_the_server_refuses_another_version_and_a_busy_env() -> None:
    with ExternalServer(gym.make("CartPole-v1")) as server:
        host, port = server.address.split(":")
        with socket.create_connection((host, int(port))) as conn:
            send(conn, {"type": "hello", "version": 7, "encoding": "json"})
            assert "protocol version 7" in recv_frame(conn)["error"]
        first = connect(server.address, timeout=5)
        with pytest.raises(ExternalConnectError) as err:
            connect(server.address, timeout=5)
        one_line(err, server.address, "another client is using it")
        first.close()


def test_an_env_failing_in_the_server_is_its_one_line_error() -> None:
    class Broken(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            raise ZeroDivisionError("division by zero\n  in a long traceback")

    with ExternalServer(Broken) as server:
        env = connect(server.address, timeout=5)
        env.reset()
        with pytest.raises(ExternalStepError) as err:
            env.step(0)
        one_line(err, server.address, "failed to step: ZeroDivisionError: division by zero")
        assert same(env.reset()[0], np.zeros(2, np.float32))  # the connection still serves
        env.close()


# -- the command and the light imports ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["no_such_module:make"], "no module named 'no_such_module'"),
        (["mobrl.external:mobile", "--kwargs", "{bad"], "--kwargs '{bad' is not JSON"),
        (["mobrl.external:mobile", "--kwargs", '{"scenario": "smal"}'], "Did you mean 'small'"),
        (["mobrl.external:mobile", "--kwargs", '{"colour": 1}'], "does not take --kwargs"),
        (["mobrl.external:mobile", "--address", "nowhere"], "is not HOST:PORT"),
        ([], "the following arguments are required: entry"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], words: str) -> None:
    done = subprocess.run([sys.executable, "-m", "mobrl.external", *argv], capture_output=True,
                          text=True, timeout=60, cwd=REPO)  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr


def test_sigterm_and_max_clients_stop_the_server_cleanly(started) -> None:
    process, address = serve(started, "gymnasium:make", {"id": "CartPole-v1"})
    process.send_signal(signal.SIGTERM)
    assert process.wait(10) == 0
    process, address = serve(started, "gymnasium:make", {"id": "CartPole-v1"}, "--max-clients", "1")
    env = connect(address, timeout=10)
    env.reset(seed=0)
    env.close()
    assert process.wait(10) == 0


def test_neither_side_imports_ray_or_torch() -> None:
    code = textwrap.dedent("""
        import sys
        import mobrl.external as ext
        with ext.ExternalServer(lambda: ext.mobile("small", "ma")) as server:
            env = ext.connect(server.address, timeout=10)
            obs, _ = env.reset(seed=0)
            env.step({a: 1 for a in obs})
            assert env.core.metric_arrays()[0].shape == (5,)
            env.close()
        print(sorted(m for m in ("ray", "torch") if m in sys.modules))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_factory_serves_clients_at_once_and_drops_idle_ones() -> None:
    with ExternalServer(lambda: gym.make("CartPole-v1"), idle_timeout=0.5) as server:
        remotes = [connect(server.address, timeout=5) for _ in range(2)]
        locals_ = [gym.make("CartPole-v1") for _ in range(2)]
        for seed, (local, remote) in enumerate(zip(locals_, remotes)):
            assert same(local.reset(seed=seed), remote.reset(seed=seed))
        for t in range(8):  # interleaved: each client has its own env
            for local, remote in zip(locals_, remotes):
                assert same(local.step(t % 2)[:4], remote.step(t % 2)[:4])
        time.sleep(1.0)
        with pytest.raises(ExternalStepError) as err:
            remotes[0].step(0)
        one_line(err, server.address, "closed the connection")
