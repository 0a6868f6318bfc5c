"""clients/service-config.json, the gRPC service config every client should use: each entry names a
real service and method, the calls that are safe to repeat are the only ones retried by the
transport, and every method a client calls has a deadline."""

from __future__ import annotations

import json

from google.protobuf import descriptor_pool

import replog.api.broker.v1.broker_pb2  # noqa: F401
import replog.api.controller.v1.controller_pb2  # noqa: F401
import replog.api.coordinator.v1.coordinator_pb2  # noqa: F401
import replog.api.metadata.v1.metadata_pb2  # noqa: F401
from replog.api.generate import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "clients" / "service-config.json").read_text())
# Calls that change state and are not idempotent: a transport retry could apply them twice.
NEVER_RETRIED = {("replog.api.broker.v1.BrokerService", "Produce"),
                 ("replog.api.coordinator.v1.CoordinatorService", "ConsumerGroupHeartbeat")}
CLIENT_CALLS = {
    "replog.api.metadata.v1.MetadataService": ["Metadata"],
    "replog.api.broker.v1.BrokerService": ["Produce", "Fetch", "ListOffsets"],
    "replog.api.coordinator.v1.CoordinatorService": ["FindCoordinator", "ConsumerGroupHeartbeat", "OffsetCommit",
                                                     "OffsetFetch", "InitProducerId"],
}


def entries():
    for config in CONFIG["methodConfig"]:
        for name in config["name"]:
            yield name["service"], name.get("method"), config


def test_every_entry_names_a_real_service_and_method() -> None:
    pool = descriptor_pool.Default()
    for service, method, _ in entries():
        described = pool.FindServiceByName(service)
        if method is not None:
            assert method in described.methods_by_name, f"{service} has no method {method}"


def test_only_calls_safe_to_repeat_are_retried_and_every_client_call_has_a_deadline() -> None:
    deadlines = {}
    for service, method, config in entries():
        if "retryPolicy" in config:
            assert (service, method) not in NEVER_RETRIED, f"{service}/{method} must not be retried by the transport"
            assert config["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
        deadlines[(service, method)] = config.get("timeout")
    for service, methods in CLIENT_CALLS.items():
        for method in methods:
            assert deadlines.get((service, method)) or deadlines.get((service, None)), f"{service}/{method}"
