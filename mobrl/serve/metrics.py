"""What `GET /metrics` tells Prometheus: requests by endpoint and status, their latency, the
agents decided and the requests in flight (`prometheus_client`, a registry of the service's
own, so two services in one process never mix their counts)."""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

#: latency buckets (seconds): a request is a fraction of a millisecond to tens of milliseconds
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: the endpoint label of each path the service answers; any other path counts as "other",
#: so a client cannot grow the label set
_PATHS = {"/healthz", "/v1/act", "/v1/decide", "/metrics", "/openapi.json", "/docs"}
_PREDICT = re.compile(r"^/v1/models/[^/]+:predict$")
_MODEL = re.compile(r"^/v1/models/[^/:]+$")
PREDICT_LABEL = "/v1/models/{name}:predict"
MODEL_LABEL = "/v1/models/{name}"

CONTENT_TYPE = CONTENT_TYPE_LATEST


def endpoint_label(path: str) -> str:
    if path in _PATHS:
        return path
    if _PREDICT.match(path):
        return PREDICT_LABEL
    return MODEL_LABEL if _MODEL.match(path) else "other"


class ServeMetrics:
    """The service's counters, histograms and gauges."""

    def __init__(self, policy: str, scenario: str) -> None:
        disable_created_metrics()  # the `_created` series tell a scraper nothing here
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "mobrl_serve_requests",
            "HTTP requests answered, by endpoint and status code.",
            ["endpoint", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "mobrl_serve_request_duration_seconds",
            "Time from a request's headers to the end of its answer, by endpoint.",
            ["endpoint"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.decisions = Counter(
            "mobrl_serve_decisions",
            "Agent actions answered (one per agent of /v1/act, instance of predict).",
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "mobrl_serve_requests_in_flight", "Requests being answered.", registry=self.registry
        )
        info = Gauge(
            "mobrl_serve_policy_info",
            "The policy served (value 1).",
            ["policy", "scenario"],
            registry=self.registry,
        )
        info.labels(policy=policy, scenario=scenario).set(1)

    def observe(self, path: str, status: int, seconds: float) -> None:
        label = endpoint_label(path)
        self.requests.labels(endpoint=label, status=str(status)).inc()
        self.latency.labels(endpoint=label).observe(seconds)

    def text(self) -> bytes:
        return generate_latest(self.registry)

    def count(self, **labels: Any) -> float:
        """A request count by labels (for tests)."""
        value = self.registry.get_sample_value("mobrl_serve_requests_total", labels)
        return value or 0.0
