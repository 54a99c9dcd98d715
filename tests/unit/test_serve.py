"""`mobrl serve` in process: the served policy acts as mobrl's own policies do, requests are
checked before anything runs, a policy with a network per group of agents names the ids it
takes, the guard limits bodies and counts answers, and the shipped OpenAPI schema is the one
the service generates."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("prometheus_client")

with warnings.catch_warnings():  # Starlette would rather its test client used httpx2
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient  # noqa: E402

from mobrl.core.errors import UserError  # noqa: E402
from mobrl.evaluation import zoo  # noqa: E402
from mobrl.serve.app import build_app  # noqa: E402
from mobrl.serve.guard import Guard  # noqa: E402
from mobrl.serve.metrics import ServeMetrics, endpoint_label  # noqa: E402
from mobrl.serve.policy import BadRequest, Network, ServedPolicy  # noqa: E402
from mobrl.serve.server import is_loopback, parse_size, resolve_token  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def zeros(n: int) -> str:
    return ", ".join(["0"] * n)


def client_of(policy: ServedPolicy, token: str | None = None, max_body: int = 1 << 20) -> Any:
    metrics = ServeMetrics(policy.ref, policy.scenario)
    app = Guard(build_app(policy, metrics), metrics, token, max_body, read_timeout=2.0)
    client = TestClient(app, raise_server_exceptions=False)
    client.metrics = metrics  # type: ignore[attr-defined]
    return client


def one_line_error(response: Any, status: int, *pieces: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"] and "\n" not in body["error"], body
    for piece in pieces:
        assert piece in body["error"], body["error"]
    return body["error"]


@pytest.mark.parametrize("name", zoo.names())
def test_served_zoo_policy_acts_as_the_zoo_policy(name: str) -> None:
    served = ServedPolicy.load(f"zoo:{name}", [])
    own = zoo.ZooPolicy.load(f"zoo:{name}")
    width = served.networks[0].obs_size
    rng = np.random.default_rng(0)
    meta = zoo.entry(name)
    cells = meta.get("env_mode") == "cells"
    network = meta["env_config"].get("cell_policy")  # a network agent above held cells
    agent = "network" if network else "cell" if cells else "ue"
    obs = {f"{agent}_{i}": rng.normal(size=width).astype(np.float32) for i in range(64)}
    given = {a: o.tolist() for a, o in obs.items()}
    assert served.act(served.observations(given)) == own.act(obs)
    info = served.describe()
    assert info["status"] == "ready" and info["policy"] == f"zoo:{name}"
    if network:  # the network agent's observation; the cells act by their own entry
        assert info["observation"] == {"name": "network", "cells": network, "size": width}
    elif cells:  # a cell's observation: its own state, its nearest stations' slots, the hour
        turns = {"decide": "in_turns"} if meta["env_config"].get("decide") == "in_turns" else {}
        assert info["observation"] == {"name": "cell", "neighbours": 6, **turns, "size": width}
    else:
        assert info["observation"] == {"name": meta["obs"], "topk": 3, "size": width}
    assert info["actions"] == (5 if network else 4) and info["scenario"] == meta["scenario"]


def test_act_and_predict_through_the_app() -> None:
    served = ServedPolicy.load("zoo:small", [])
    client = client_of(served)
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(30, 20)).astype(np.float32)
    obs = {f"ue_{i}": row.tolist() for i, row in enumerate(rows)}
    want = [int(a) for a in zoo.ZooPolicy.load("zoo:small").actions(rows)]
    acted = client.post("/v1/act", json={"observations": obs})
    assert acted.status_code == 200 and acted.json() == {
        "actions": {f"ue_{i}": a for i, a in enumerate(want)}
    }
    predicted = client.post("/v1/models/small:predict", json={"instances": rows.tolist()})
    assert predicted.json() == {"predictions": want}
    sampled = client.post("/v1/act", json={"observations": obs, "explore": True}).json()
    assert all(0 <= a < 4 for a in sampled["actions"].values())
    assert client.get("/v1/models/small").json() == {"name": "small", "ready": True}
    one_line_error(client.get("/v1/models/large"), 404, "'large'", "small:predict")
    one_line_error(client.post("/v1/models/x:predict", json={"instances": []}), 404, "'x'")
    one_line_error(client.post("/v1/models/small:predict", json={"instances": []}), 422, "no inst")
    text = client.get("/metrics").text
    assert 'mobrl_serve_requests_total{endpoint="/v1/act",status="200"} 2.0' in text
    assert 'mobrl_serve_request_duration_seconds_bucket{endpoint="/v1/act",le="0.005"}' in text
    assert "mobrl_serve_decisions_total 90.0" in text  # 30 + 30 agents, 30 instances


@pytest.mark.parametrize(
    ("body", "status", "pieces"),
    [
        ('{"observations": {"ue_0": [1, 2', 400, ["not valid JSON", "character"]),
        ("", 422, ["no body"]),
        ("[1, 2]", 422, ["body", "valid dictionary"]),
        ('{"observation": {}}', 422, ["'observations' is missing"]),
        ('{"observations": {}, "explor": true}', 422, ["unknown field 'explor'"]),
        ('{"observations": {}}', 422, ["no observations"]),
        ('{"observations": {"a": [1, 2]}}', 422, ["'a' has 2 values", "takes 20"]),
        ('{"observations": {"a": [' + zeros(19) + ", NaN]}}", 422, ["nan at index 19"]),
        ('{"observations": {"a": [-Infinity, ' + zeros(19) + "]}}", 422, ["-inf at index 0"]),
        ('{"observations": {"a": ["1"]}}', 422, ["observations.a.0", "valid number", "'1'"]),
        ('{"observations": {"a": [true]}}', 422, ["observations.a.0", "True"]),
        ('{"observations": {"a": [0]}, "explore": "yes"}', 422, ["explore", "boolean"]),
    ],
    ids=[
        "malformed", "empty", "not an object", "misspelt key", "unknown field", "no agents",
        "wrong size", "NaN", "-Infinity", "a string", "a bool", "explore not a bool",
    ],
)  # fmt: skip
def test_bad_bodies_are_one_line_errors(body: str, status: int, pieces: list[str]) -> None:
    client = client_of(ServedPolicy.load("zoo:small", []))
    sent = client.post("/v1/act", content=body.encode(), headers={"content-type": "text/plain"})
    one_line_error(sent, status, *pieces)
    good = client.post("/v1/act", json={"observations": {"a": [0.0] * 20}})
    assert good.status_code == 200


class TwoTeams:
    """A policy with a network per group of agents (like the arena's explorer and chaser)."""

    def act(self, observation: dict[str, Any], env: Any = None) -> dict[str, int]:
        return {agent: int(np.asarray(obs).sum() > 0) for agent, obs in observation.items()}


def two_teams() -> ServedPolicy:
    networks = [
        Network("chaser", ("chaser",), (3,), 2),
        Network("explorer", ("explorer_0", "explorer_1"), (5,), 2),
    ]
    env_config = {"scenario": "arena", "mode": "ma", "policies": {}}
    return ServedPolicy("run/ckpt", "policy", TwoTeams(), env_config, networks, "a checkpoint")


def test_a_policy_per_group_takes_its_agents_only() -> None:
    client = client_of(two_teams())
    info = client.get("/healthz").json()
    assert info["agents"] == "the layout's agents: chaser, explorer_0, explorer_1"
    assert [n["observation_size"] for n in info["networks"]] == [3, 5] and "actions" not in info
    one_line_error(
        client.post("/v1/act", json={"observations": {"explorer_2": [0] * 5}}),
        422,
        "unknown agent id 'explorer_2'",
        "explorer_0",
    )
    one_line_error(
        client.post("/v1/act", json={"observations": {"chaser": [0] * 5}}),
        422,
        "'chaser' has 5 values",
        "network 'chaser' takes 3",
    )
    one_line_error(
        client.post("/v1/models/policy:predict", json={"instances": [[0] * 3]}),
        400,
        "2 networks",
        "/v1/act",
    )
    both = {"chaser": [1, 1, 1], "explorer_1": [-1] * 5}
    assert client.post("/v1/act", json={"observations": both}).json() == {
        "actions": {"chaser": 1, "explorer_1": 0}
    }


def test_guard_checks_the_token_and_the_body_size() -> None:
    client = client_of(ServedPolicy.load("zoo:small", []), token="s3cret", max_body=2048)
    refused = client.get("/healthz")
    one_line_error(refused, 401, "Authorization: Bearer")
    assert refused.headers["www-authenticate"] == "Bearer"
    one_line_error(client.get("/healthz", headers={"Authorization": "Bearer nope"}), 401)
    one_line_error(client.get("/metrics"), 401)
    auth = {"Authorization": "Bearer s3cret"}
    assert client.get("/healthz", headers=auth).status_code == 200
    big = {"observations": {f"ue_{i}": [0.0] * 20 for i in range(30)}}
    one_line_error(client.post("/v1/act", json=big, headers=auth), 413, "2 KiB", "--max-body")
    small = {"observations": {"ue_0": [0.0] * 20}}
    assert client.post("/v1/act", json=small, headers=auth).status_code == 200
    counted = client.metrics  # type: ignore[attr-defined]
    assert counted.count(endpoint="/healthz", status="401") == 2
    assert counted.count(endpoint="/v1/act", status="413") == 1


def test_unknown_paths_share_one_metrics_label() -> None:
    assert endpoint_label("/v1/models/small:predict") == "/v1/models/{name}:predict"
    assert endpoint_label("/v1/act") == "/v1/act"
    assert endpoint_label("/v1/models/small") == "/v1/models/{name}"
    assert {endpoint_label(f"/x/{i}") for i in range(5)} == {"other"}
    client = client_of(ServedPolicy.load("zoo:small", []))
    one_line_error(client.get("/nothing"), 404, "no endpoint /nothing", "POST /v1/act")
    one_line_error(client.get("/v1/act"), 405, "GET is not allowed on /v1/act")


def test_options_and_token_rules() -> None:
    assert parse_size("1MiB") == parse_size("1m") == 1 << 20
    assert parse_size("64KiB") == parse_size("65536") == 65536
    for bad, piece in (("lots", "not a size"), ("12", "below 1 KiB"), ("1GB", "not a size")):
        with pytest.raises(UserError, match=piece):
            parse_size(bad)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert resolve_token("127.0.0.1", None) is None
    with pytest.raises(UserError, match="needs a bearer token"):
        resolve_token("0.0.0.0", None)
    assert resolve_token("0.0.0.0", "abc") == "abc"
    with pytest.raises(UserError, match="spaces"):
        resolve_token("127.0.0.1", "a b")


def test_bad_request_is_a_value_error_of_the_api() -> None:
    with pytest.raises(BadRequest, match="no observations"):
        two_teams().observations({})


def test_shipped_openapi_schema_is_the_generated_one() -> None:
    """docs/serve-openapi.json is `python scripts/serve_openapi.py`'s output."""
    spec = importlib.util.spec_from_file_location(
        "serve_openapi", REPO / "scripts/serve_openapi.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = (REPO / "docs" / "serve-openapi.json").read_text()
    assert shipped == module.render(), (
        "docs/serve-openapi.json is out of date: run python scripts/serve_openapi.py"
    )
    paths = json.loads(shipped)["paths"]
    assert set(paths) == {
        "/healthz", "/v1/act", "/v1/decide", "/v1/models/{name}", "/v1/models/{name}:predict",
        "/metrics",
    }  # fmt: skip


@pytest.mark.parametrize(
    "layout,obs,width", [("dense_urban", "topk_gain", 20), ("umi_dense", "topk_intent", 26)]
)
def test_measured_arrays_give_the_envs_own_observations(layout: str, obs: str, width: int) -> None:
    """A step's measurements put in `MeasuredNetwork` give the observation rows the env
    itself gives its UEs, to the bit: linear SNRs on mobile-env's model (dense_urban, UEs
    arriving and leaving), received powers in mW under a layout's radio model (umi_dense: UMi
    channels, shadowing, interference from the stations that serve, proportional fair; SINRs
    with who transmits, every round's gains of `topk_intent` under interference); links,
    rates in the model's unit and loads as the engine has them; and so the turns of UEs
    deciding in turns."""
    import mobrl
    from mobrl.envs.observations import handler_for, ue_columns
    from mobrl.envs.wrappers import find_core
    from mobrl.network.service import link_arrays
    from mobrl.serve.decide import MeasuredNetwork, Radio

    radio = Radio.of_layout(ServedPolicy.load(f"zoo:{layout}", []).env_config)
    assert radio.measured == ("snr_db" if layout == "dense_urban" else "rsrp_dbm")
    env = mobrl.parallel_env(layout, obs=obs)
    try:
        observed, _ = env.reset(seed=3)
        for _ in range(12):
            observed, *_ = env.step({a: (i % 4) for i, a in enumerate(env.agents)})
        core = find_core(env.env)
        arrays = link_arrays(core)
        column = ue_columns(core)
        ues = [core.users[int(a.removeprefix("ue_"))] for a in env.agents]
        cols = [column[ue.ue_id] for ue in ues]
        heard = arrays["snr"] if radio.model is None else core.radio_service().rx
        conn = arrays["conn"]
        bandwidth = np.array([core.stations[b].bw for b in sorted(core.stations)])
        rate = np.array([core.macro.get(ue, 0.0) for ue in ues])
        network = MeasuredNetwork(
            radio, heard[:, cols], conn[:, cols], bandwidth, rate, conn.sum(axis=1)
        )
        # the coupled arithmetic under interference
        assert (network.link_state().radio is None) == (radio.model is None)
        rows = handler_for(obs, "ma", 3).rows(network, np.arange(len(ues)))
        assert rows.shape == (len(ues), width)
        assert np.array_equal(rows, np.stack([observed[a] for a in env.agents]))
        # in turns (env.decide=in_turns): the same groups, and each turn's gains to the bit
        from mobrl.envs.turns import StepTurns

        # (with env.turn_rounds=2 every group's turn again, given all the others' moves; with
        # env.turn_obs=greedy_ahead also given greedy's moves of the UEs yet to decide)
        served = StepTurns(network, 3, np.arange(len(ues)), rounds=2, view="greedy_ahead")
        engine = StepTurns(core, 3, cols, rounds=2, view="greedy_ahead")
        assert np.array_equal(served.greedy, engine.greedy[cols])
        at = np.array(cols)
        assert [at[g].tolist() for g in served.groups] == [g.tolist() for g in engine.groups]
        for turn in range(len(served.groups) + 3):
            group = served.group
            assert np.array_equal(served.extra(group), engine.extra(at[group]))
            moves = (np.arange(len(group)) + turn) % 4
            served.decide(group, moves)
            engine.decide(at[group], moves)
            served.advance()
            engine.advance()
        assert served.round == engine.round == 1
    finally:
        env.close()


def test_decide_serves_a_policy_of_a_radio_layout_from_received_powers() -> None:
    client = client_of(ServedPolicy.load("zoo:umi_dense", []))
    body = {
        "stations": [{"id": "A"}, {"id": "B"}, {"id": "C"}],
        "ues": {
            "ue_0": {"rsrp_dbm": {"A": -70.0, "B": -75.0, "C": -95.0}, "links": ["A"],
                     "rate_bps": 3e7},
            "ue_1": {"rsrp_dbm": {"A": -80.0, "B": -72.0}, "links": ["A"], "rate_bps": 1e7},
            "ue_2": {"rsrp_dbm": {"C": -78.0}},
        },
    }  # fmt: skip
    answer = client.post("/v1/decide", json=body)
    assert answer.status_code == 200, answer.text
    decisions = answer.json()["decisions"]
    assert set(decisions) == {"ue_0", "ue_1", "ue_2"}
    assert all(d in (None, "A", "B", "C") for d in decisions.values())
    assert decisions["ue_2"] in (None, "C")  # it hears C alone
    # the UEs decide in turns; the turns do not depend on the order the request lists them
    shuffled = {**body, "ues": dict(reversed(list(body["ues"].items())))}
    again = client.post("/v1/decide", json=shuffled)
    assert again.status_code == 200 and again.json()["decisions"] == decisions
    # SNRs are refused where the policy's model works from received powers, and back
    one_line_error(client.post("/v1/decide", json=decide_body()), 422, "gives no rsrp_dbm")
    small = client_of(ServedPolicy.load("zoo:small", []))
    one_line_error(small.post("/v1/decide", json=body), 422, "gives no snr_db")


def _measured_step(field: str, core: Any, agents: list[str]) -> dict[str, Any]:
    """A step of `core`'s network as a controller reports it, each UE's `field` (rsrp_dbm:
    received powers; sinr_db: each link's SINR as the engine reads it, with who transmits
    under the links) in dB."""
    from mobrl.envs.observations import ue_columns
    from mobrl.network.service import link_arrays

    conn = link_arrays(core)["conn"]
    heard = core.radio_service().rx if field == "rsrp_dbm" else core._snr
    column = ue_columns(core)
    stations = sorted(core.stations)
    ues = {}
    for agent in agents:
        ue = core.users[int(agent.removeprefix("ue_"))]
        j = column[ue.ue_id]
        ues[agent] = {
            field: {f"bs_{b}": float(10 * np.log10(heard[i, j]))
                    for i, b in enumerate(stations) if heard[i, j] > 0},
            "links": [f"bs_{b}" for i, b in enumerate(stations) if conn[i, j]],
            "rate_bps": float(core.macro.get(ue, 0.0)) * 1e6,
        }  # fmt: skip
    return {
        "stations": [{"id": f"bs_{b}", "load": int(conn[i].sum())} for i, b in enumerate(stations)],
        "ues": ues,
    }


def test_decide_under_a_radio_model_takes_sinrs_as_well_as_received_powers() -> None:
    """A UE of a radio layout may report SINRs instead of received powers: the service inverts
    the layout's model (who transmits under the links, its noise) to the received powers, so
    a step of umi_dense reported either way gives the same arrays (to 1e-9) and the same
    decisions; SINRs that no received powers give, and both fields at once, are refused in
    one line."""
    import mobrl
    from mobrl.envs.wrappers import find_core
    from mobrl.serve.app import DecideRequest
    from mobrl.serve.decide import Decider

    policy = ServedPolicy.load("zoo:umi_dense", [])
    client = client_of(policy)
    env = mobrl.parallel_env("umi_dense", obs="topk_intent")
    try:
        env.reset(seed=5)
        for _ in range(8):
            env.step({a: (i % 3) for i, a in enumerate(env.agents)})
        core = find_core(env.env)
        bodies = {f: _measured_step(f, core, env.agents) for f in ("rsrp_dbm", "sinr_db")}
    finally:
        env.close()
    decider = Decider(policy)
    networks = {}
    for field, body in bodies.items():
        request = DecideRequest.model_validate(body)
        networks[field] = decider.network(request.stations, request.ues)
    by_rx, by_sinr = networks["rsrp_dbm"], networks["sinr_db"]
    np.testing.assert_allclose(by_sinr.snr, by_rx.snr, rtol=1e-9)
    np.testing.assert_array_equal(by_sinr.reach, by_rx.reach)
    np.testing.assert_allclose(by_sinr.util, by_rx.util, rtol=1e-9)
    answers = [client.post("/v1/decide", json=body) for body in bodies.values()]
    assert all(a.status_code == 200 for a in answers), answers[0].text
    assert answers[0].json()["decisions"] == answers[1].json()["decisions"]
    # two stations that transmit, each heard 3 dB above everything else: impossible
    body = {
        "stations": [{"id": "A"}, {"id": "B"}, {"id": "C"}],
        "ues": {
            "ue_0": {"sinr_db": {"A": 3.0, "B": 3.0}, "links": ["A"]},
            "ue_1": {"sinr_db": {"B": 1.0}, "links": ["B"]},
        },
    }
    one_line_error(client.post("/v1/decide", json=body), 422, "'ue_0'", "sinr_db", "rsrp_dbm")
    both = {"rsrp_dbm": {"A": -70.0}, "sinr_db": {"A": 3.0}}
    one_line_error(
        client.post("/v1/decide", json={"stations": [{"id": "A"}], "ues": {"ue_0": both}}),
        422,
        "both rsrp_dbm and sinr_db",
    )


def decide_body(**station: Any) -> dict[str, Any]:
    return {
        "stations": [{"id": "A", "load": 1, **station}, {"id": "B"}],
        "ues": {
            "ue_0": {"snr_db": {"A": 30.0, "B": 5.0}, "links": ["A"], "rate_bps": 2e6},
            "ue_1": {"snr_db": {"B": 20.0}},
        },
    }


def test_decide_takes_measurements_and_names_what_is_wrong() -> None:
    client = client_of(ServedPolicy.load("zoo:small", []))
    assert client.get("/healthz").json()["decide"] == "ready"
    answer = client.post("/v1/decide", json=decide_body())
    assert answer.status_code == 200, answer.text
    decisions = answer.json()["decisions"]
    assert set(decisions) == {"ue_0", "ue_1"}
    assert all(d in (None, "A", "B") for d in decisions.values())
    body = decide_body()
    body["ues"]["ue_1"]["links"] = ["C"]
    one_line_error(
        client.post("/v1/decide", json=body), 422, "station 'C' in links", "not in stations"
    )
    body = decide_body()
    body["stations"].append({"id": "A"})
    one_line_error(client.post("/v1/decide", json=body), 422, "'A' is listed twice")
    nan = json.dumps(decide_body()).replace("30.0", "NaN")
    one_line_error(client.post("/v1/decide", content=nan), 422, "nan for A")
    one_line_error(client.post("/v1/decide", json=decide_body(load=-1)), 422, "stations.0.load")
    one_line_error(client.post("/v1/decide", json={"stations": [], "ues": {}}), 422, "at least")
    assert client.post("/v1/act", json={"observations": {"a": [0.0] * 20}}).status_code == 200
    # a layout of stations with different bandwidths: each must be given
    urban = client_of(ServedPolicy.load("zoo:dense_urban", []))
    one_line_error(urban.post("/v1/decide", json=decide_body()), 422, "no bandwidth_hz")


def test_decide_says_which_policies_it_cannot_serve() -> None:
    client = client_of(two_teams())
    assert "this one plays arena" in client.get("/healthz").json()["decide"]
    one_line_error(client.post("/v1/decide", json=decide_body()), 400, "Use /v1/act")
    served = ServedPolicy.load("zoo:small", [])
    served.env_config = {**served.env_config, "obs": "mobile"}
    one_line_error(client_of(served).post("/v1/decide", json=decide_body()), 400, "env.obs=mobile")


def test_serving_a_zoo_policy_imports_neither_ray_nor_torch() -> None:
    """What `mobrl serve --checkpoint zoo:NAME` loads before it answers: no Ray, no torch,
    not even mobile-env (the first /v1/decide builds the layout)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mobrl.serve.policy import ServedPolicy\n"
        "from mobrl.serve.server import _server\n"
        "_server(ServedPolicy.load('zoo:small', []), None, 1 << 20, 5.0)\n"
        "print(sorted(m for m in ('ray', 'torch', 'mobile_env') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
