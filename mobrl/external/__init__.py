"""External simulators over the network: an env running in its own process (ns-3, OMNeT++, a
testbed, a C++ or Java program, or a Python env) steps for mobrl's trainer over a small
protocol: length-prefixed JSON or msgpack messages on TCP (docs/external.md).

The simulator's side in Python is `serve_env` (or `ExternalServer`, or `python -m
mobrl.external MODULE:CALLABLE`); the trainer's side is `connect`, which returns a
`RemoteEnv` (Gymnasium) or a `RemoteMultiAgentEnv` (RLlib's multi-agent API). Neither side
imports Ray or torch. `mobile` builds one of mobrl's own mobile-env scenarios as mobrl trains
it, whose replies also carry the network's measures (`env.core` on the client).
"""

from __future__ import annotations

from mobrl.external.client import RemoteEnv, RemoteMultiAgentEnv, connect
from mobrl.external.measures import RemoteCore, mobile
from mobrl.external.server import ExternalServer, serve_env
from mobrl.external.wire import (
    PROTOCOL_VERSION,
    ExternalConnectError,
    ExternalEnvError,
    ExternalStepError,
)

__all__ = [
    "PROTOCOL_VERSION",
    "ExternalConnectError",
    "ExternalEnvError",
    "ExternalServer",
    "ExternalStepError",
    "RemoteCore",
    "RemoteEnv",
    "RemoteMultiAgentEnv",
    "connect",
    "mobile",
    "serve_env",
]
