"""The ZooKeeper session's Prometheus metrics, on every service (Kafka's SessionExpireListener
metrics: the session state, disconnects and expiries)."""

from __future__ import annotations

import prometheus_client

CONNECTED = "connected"
# Disconnected: the session may still be resumed within zookeeper.session.timeout.ms.
SUSPENDED = "suspended"
# The session expired: its ephemeral znodes and watches are gone.
EXPIRED = "expired"
STATES = (CONNECTED, SUSPENDED, EXPIRED)

SESSION_STATE = prometheus_client.Gauge(
    "replog_zookeeper_session_state",
    "1 for the state the ZooKeeper session is in (connected, suspended, expired), 0 for the others.",
    ["state"])
DISCONNECTS = prometheus_client.Counter(
    "replog_zookeeper_disconnects", "Connections to ZooKeeper lost (the session may still be resumed).")
EXPIRES = prometheus_client.Counter(
    "replog_zookeeper_expires", "ZooKeeper sessions that expired: ephemeral znodes and watches were lost.")


def session_state(state: str) -> None:
    """The session moved to `state` (kazoo reports each move once)."""
    for each in STATES:
        SESSION_STATE.labels(each).set(1 if each == state else 0)
    if state == SUSPENDED:
        DISCONNECTS.inc()
    elif state == EXPIRED:
        EXPIRES.inc()
