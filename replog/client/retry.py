"""What to do after an error: fail, retry after a backoff, or refresh metadata first and retry."""

from __future__ import annotations

import enum

import grpc

from replog.core.errors import ErrorCode


class Action(enum.Enum):
    FAIL = "fail"
    RETRY = "retry"
    REFRESH_AND_RETRY = "refresh and retry"


# Errors that mean the client's idea of who leads (or what exists) is out of date.
STALE_METADATA = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.NETWORK_EXCEPTION,
})

BACKOFF_JITTER = 0.2  # ±20 %, as Kafka's exponential backoff (KIP-580)
BACKOFF_MS_MAX = 1_000  # Kafka's retry.backoff.max.ms


def classify(code: ErrorCode) -> Action:
    if not code.retriable:
        return Action.FAIL
    return Action.REFRESH_AND_RETRY if code in STALE_METADATA else Action.RETRY


def produce_action(
    code: ErrorCode, *, attempts: int, retries: int, age_ms: float, delivery_timeout_ms: int
) -> Action:
    """A batch that failed with `code` after `attempts` sends, `age_ms` after it was opened."""
    action = classify(code)
    if action is Action.FAIL or attempts > retries or age_ms >= delivery_timeout_ms:
        return Action.FAIL
    return action


def backoff_ms(attempt: int, base_ms: float, *, jitter: float, max_ms: float = BACKOFF_MS_MAX) -> float:
    """Wait before retry number `attempt` (1, 2, ...): base·2^(attempt-1), capped, ±20 %.

    `jitter` is a number in [0, 1) (random.random()), passed in so the decision
    stays a function of its arguments.
    """
    exponential = base_ms * (2 ** min(max(attempt - 1, 0), 32))
    bounded = min(exponential, max(max_ms, base_ms))
    return bounded * (1 - BACKOFF_JITTER + 2 * BACKOFF_JITTER * jitter)


_STATUS_ERRORS = {
    grpc.StatusCode.UNAVAILABLE: ErrorCode.NETWORK_EXCEPTION,
    grpc.StatusCode.CANCELLED: ErrorCode.NETWORK_EXCEPTION,
    grpc.StatusCode.UNKNOWN: ErrorCode.NETWORK_EXCEPTION,
    grpc.StatusCode.INTERNAL: ErrorCode.NETWORK_EXCEPTION,
    grpc.StatusCode.DEADLINE_EXCEEDED: ErrorCode.REQUEST_TIMED_OUT,
    grpc.StatusCode.INVALID_ARGUMENT: ErrorCode.INVALID_REQUEST,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ErrorCode.MESSAGE_TOO_LARGE,
}


def error_code_for_status(status: grpc.StatusCode) -> ErrorCode:
    """The Kafka error a whole-request gRPC failure amounts to for each item in it.

    UNAVAILABLE and friends are a lost connection (retry, maybe elsewhere);
    UNIMPLEMENTED, PERMISSION_DENIED and the like will not change by retrying.
    """
    return _STATUS_ERRORS.get(status, ErrorCode.UNKNOWN_SERVER_ERROR)
