"""The HTTP API of `mobrl serve` (FastAPI): `/healthz`, `/v1/act`, `/v1/decide`, the KServe v1
predict endpoint, `/metrics`; every error a one-line JSON `{"error": "..."}` naming the value at fault
and the fix. Bodies are JSON parsed into plain numbers: nothing a client sends is unpickled or
executed."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from mobrl import __version__
from mobrl.core.errors import first_line
from mobrl.serve.decide import Decider
from mobrl.serve.metrics import CONTENT_TYPE, ServeMetrics
from mobrl.serve.policy import BadRequest, ServedPolicy

#: how much of a bad value an error repeats
_SHOWN = 60

ACT_EXAMPLE = '{"observations": {"<agent id>": [numbers]}}'
DECIDE_EXAMPLE = (
    '{"stations": [{"id": "A", "load": 1}], "ues": {"ue_0": {"snr_db": {"A": 12.5}, '
    '"links": ["A"], "rate_bps": 1e6}}}'
)
PREDICT_EXAMPLE = '{"instances": [[numbers], ...]}'


class ActRequest(BaseModel):
    """Observations of any number of agents, acted on in one batch."""

    model_config = ConfigDict(extra="forbid", strict=True)

    observations: dict[str, list[float]] = Field(
        description="Each agent's observation, as many numbers as GET /healthz says.",
        examples=[{"ue_0": [0.0] * 4, "ue_1": [0.0] * 4}],
    )
    explore: bool = Field(
        False, description="Sample each action from the policy's distribution (default: argmax)."
    )


class ActResponse(BaseModel):
    actions: dict[str, int | list[int]] = Field(
        description="Each agent's action: an int (a list of ints for a MultiDiscrete policy)."
    )


class PredictRequest(BaseModel):
    """The KServe v1 (TF-Serving) predict request: one observation per instance."""

    model_config = ConfigDict(strict=True)

    instances: list[list[float]] = Field(
        description="Observations of one shared policy, one per row.",
        examples=[[[0.0] * 4, [0.0] * 4]],
    )


class PredictResponse(BaseModel):
    predictions: list[int | list[int]] = Field(description="One action per instance, in order.")


class StationMeasurement(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(
        description="The station's id, as the UEs' snr_db (rsrp_dbm, sinr_db) and links name it."
    )
    load: int | None = Field(
        None, ge=0, description="UEs it serves (default: the request's UEs linked to it)."
    )
    bandwidth_hz: float | None = Field(
        None, gt=0, description="Its bandwidth (default: the policy's layout's)."
    )


class UEMeasurement(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    snr_db: dict[str, float] | None = Field(
        None,
        description="For a policy of mobile-env's model: the SNR (dB) of every station the UE "
        "hears, by station id; a station left out is not heard.",
    )
    rsrp_dbm: dict[str, float] | None = Field(
        None,
        description="For a policy of a layout with a radio model (interference): the received "
        "power (dBm) of every station the UE hears, by station id; a station left out is not "
        "heard and does not interfere.",
    )
    sinr_db: dict[str, float] | None = Field(
        None,
        description="Instead of rsrp_dbm: the SINR (dB) of every station the UE hears, with "
        "the stations that transmit under the request's links interfering as the layout's "
        "model has them; the service recovers the received powers from them.",
    )
    links: list[str] = Field([], description="The stations it is linked to now.")
    rate_bps: float = Field(
        0.0, ge=0, description="Its summed rate over the last period (bit/s; 0: unserved)."
    )


class DecideRequest(BaseModel):
    """A step of the network as a controller measures it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    stations: list[StationMeasurement]
    ues: dict[str, UEMeasurement]
    explore: bool = False


class DecideResponse(BaseModel):
    decisions: dict[str, str | None] = Field(
        description="Per UE, the station to link to or unlink from; null: keep its links."
    )


class ModelStatus(BaseModel):
    name: str
    ready: bool


class Network(BaseModel):
    policy_id: str
    agents: str | list[str] = Field(description='"any", or the agent ids it acts for.')
    observation_size: int
    actions: int | list[int]


class Health(BaseModel):
    status: str = Field(description='"ready" once the service answers.')
    policy: str = Field(description="zoo:NAME or the checkpoint served.")
    model: str = Field(description="NAME of /v1/models/NAME:predict.")
    scenario: str
    env_mode: str | None
    observation: dict[str, Any] = Field(description="env.obs, env.topk and the input size.")
    actions: int | list[int] | None = None
    agents: str = Field(description="Which agent ids /v1/act takes, in words.")
    networks: list[Network]
    explore_default: bool
    decide: str = Field(description='"ready", or why /v1/decide cannot serve this policy.')


class Error(BaseModel):
    error: str = Field(description="One line: the value at fault and the fix.")


_ERROR_TEXT = {
    400: "Malformed JSON, or a request the policy cannot take.",
    401: "Missing or wrong bearer token (a service started with a token).",
    404: "Unknown model name.",
    408: "The client sent its body too slowly (--read-timeout).",
    413: "The body is larger than --max-body.",
    422: "A value of the wrong type or size, NaN or Infinity, an unknown agent id or field.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error answers of an endpoint, for the OpenAPI schema."""
    return {code: {"model": Error, "description": _ERROR_TEXT[code]} for code in codes}


#: what can go wrong with a request that carries a body
BODY_ERRORS = errors(400, 401, 408, 413, 422)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _example(request: Request) -> str:
    path = request.url.path
    if path.endswith(":predict"):
        return PREDICT_EXAMPLE
    return DECIDE_EXAMPLE if path == "/v1/decide" else ACT_EXAMPLE


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """A body that is not JSON (400), or JSON of the wrong shape (422): the first fault,
    located, with what to send instead."""
    assert isinstance(exc, RequestValidationError)
    found = exc.errors()
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    example = _example(request)
    if first.get("type") == "json_invalid":
        why = (first.get("ctx") or {}).get("error", "not JSON")
        at = first["loc"][-1] if len(first.get("loc", ())) > 1 else "?"
        return error(400, f"the body is not valid JSON ({why} at character {at}). Send {example}.")
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    if first.get("type") == "missing" and not where:
        return error(422, f"the request has no body. Send {example}.")
    if first.get("type") == "missing":
        return error(422, f"'{where}' is missing{more}. Send {example}.")
    if first.get("type") == "extra_forbidden":
        return error(422, f"unknown field '{where}'{more}. Send {example}.")
    msg = first_line(str(first.get("msg", "invalid"))).rstrip(".")
    got = _shown(first.get("input"))
    return error(422, f"{where or 'body'}: {msg}, got {got}{more}. Send {example}.")


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BadRequest)
    return error(exc.status, str(exc))


def _routes_text() -> str:
    return (
        "GET /healthz, POST /v1/act, POST /v1/decide, POST /v1/models/NAME:predict, "
        "GET /v1/models/NAME, "
        "GET /metrics, GET /openapi.json"
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (no such path, a wrong method) as one line."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no endpoint {request.url.path}. mobrl serve answers {_routes_text()}."
    elif exc.status_code == 405:
        message = (
            f"{request.method} is not allowed on {request.url.path}. mobrl serve answers "
            f"{_routes_text()}."
        )
    elif exc.status_code == 400:  # FastAPI could not read the body (not UTF-8 text)
        detail = first_line(str(exc.detail)).rstrip(".")
        message = f"the body is not valid JSON ({detail}). Send {_example(request)}."
    else:
        message = first_line(str(exc.detail))
    return error(exc.status_code, message)


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    return error(500, f"the policy failed on this request ({first_line(exc)}).")


def build_app(policy: ServedPolicy, metrics: ServeMetrics) -> FastAPI:
    """The service's routes over `policy`, counting decisions in `metrics`."""
    app = FastAPI(
        title="mobrl serve",
        version=__version__,
        description="A trained mobrl policy answering a network controller: observations "
        'in, actions out. Every error is one line of JSON: {"error": "..."}.',
        redoc_url=None,
    )
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(BadRequest, _bad_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _internal)
    _add_decision_routes(app, policy, metrics)
    _add_kserve_routes(app, policy, metrics)

    @app.get("/metrics", response_class=Response, responses=errors(401))
    async def prometheus() -> Response:
        """Prometheus text: requests by endpoint and status, latency histograms."""
        return Response(metrics.text(), media_type=CONTENT_TYPE)

    return app


def _add_decision_routes(app: FastAPI, policy: ServedPolicy, metrics: ServeMetrics) -> None:
    """/healthz, and the policy's decisions: /v1/act (observations in) and /v1/decide
    (measurements in)."""
    decider = Decider(policy) if policy is not None else None

    @app.get("/healthz", response_model=Health, responses=errors(401))
    async def healthz() -> JSONResponse:
        """Ready, which policy, which scenario and what it observes."""
        return JSONResponse({**policy.describe(), "decide": decider.refusal or "ready"})

    @app.post("/v1/act", response_model=ActResponse, responses=BODY_ERRORS)
    async def act(body: ActRequest) -> JSONResponse:
        """Each agent's action for its observation (deterministic unless `explore`)."""
        observations = policy.observations(body.observations)
        actions = policy.act(observations, body.explore)
        metrics.decisions.inc(len(actions))
        return JSONResponse({"actions": actions})

    @app.post("/v1/decide", response_model=DecideResponse, responses=BODY_ERRORS)
    async def decide(body: DecideRequest) -> JSONResponse:
        """Measurements in, link decisions out: the policy's observations built from them with
        the engine's own code (policies of UE agents with slot observations)."""
        if not decider.ready:  # the layout is built once, off the event loop
            await asyncio.to_thread(decider.radio)
        decisions = decider.decide(body.stations, body.ues, body.explore)
        metrics.decisions.inc(len(decisions))
        return JSONResponse({"decisions": decisions})


def _add_kserve_routes(app: FastAPI, policy: ServedPolicy, metrics: ServeMetrics) -> None:
    """KServe v1's model status and predict routes."""

    @app.get("/v1/models/{name}", response_model=ModelStatus, responses=errors(401, 404))
    async def model_status(name: str) -> JSONResponse:
        """KServe v1: whether model NAME is ready."""
        _check_model(policy, name)
        return JSONResponse({"name": policy.model, "ready": True})

    @app.post(
        "/v1/models/{name}:predict",
        response_model=PredictResponse,
        responses={**BODY_ERRORS, **errors(404)},
    )
    async def predict(name: str, body: PredictRequest) -> JSONResponse:
        """KServe v1 predict: one action per instance (observation), deterministic."""
        _check_model(policy, name)
        if len(policy.networks) > 1:
            raise BadRequest(
                f"this policy has {len(policy.networks)} networks, one per group of agents; "
                "predict cannot tell which an instance is for. POST /v1/act with agent ids.",
                400,
            )
        if not body.instances:
            raise BadRequest(f"no instances. Send {PREDICT_EXAMPLE} with at least one row.")
        given = {f"instance {i}": row for i, row in enumerate(body.instances)}
        observations = policy.observations(given, label="")
        actions = policy.act(observations)
        metrics.decisions.inc(len(actions))
        return JSONResponse({"predictions": list(actions.values())})


def guarded_app(policy: ServedPolicy, token: str | None, max_body: int, read_timeout: float) -> Any:
    """The ASGI app a server runs (uvicorn here, a Ray Serve replica): the API behind the
    guard (token, body limits, metrics), counting in metrics of its own (`app.metrics`)."""
    from mobrl.serve.guard import Guard

    metrics = ServeMetrics(policy.ref, policy.scenario)
    return Guard(build_app(policy, metrics), metrics, token, max_body, read_timeout)


def _check_model(policy: ServedPolicy, name: str) -> None:
    if name != policy.model:
        raise BadRequest(
            f"unknown model '{name}': this service serves '{policy.model}'. "
            f"Use /v1/models/{policy.model}:predict.",
            404,
        )


def openapi_schema() -> dict[str, Any]:
    """The service's OpenAPI schema (the same for every policy: docs/serve-openapi.json)."""
    from typing import cast

    return build_app(cast(ServedPolicy, None), cast(ServeMetrics, None)).openapi()
