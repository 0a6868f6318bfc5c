"""The metrics every RPC is counted in, unary calls and stream messages alike."""

import prometheus_client

REQUEST_DURATION = prometheus_client.Histogram(
    "replog_request_duration_seconds",
    "Time to serve one RPC, in seconds, from the request's arrival to its response.",
    ["rpc"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
REQUESTS_FAILED = prometheus_client.Counter(
    "replog_requests_failed_total",
    "RPCs that ended with a gRPC status other than OK, by status.",
    ["rpc", "error"],
)
