"""Which errors are retried, after which backoff, and which refresh metadata first."""

import grpc
import pytest

from replog.client.retry import Action, backoff_ms, classify, error_code_for_status, produce_action
from replog.core.errors import ErrorCode


@pytest.mark.parametrize("code", [
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_CONTROLLER,
    ErrorCode.NETWORK_EXCEPTION,
])
def test_stale_leadership_errors_refresh_metadata_then_retry(code):
    assert classify(code) is Action.REFRESH_AND_RETRY


@pytest.mark.parametrize("code", [
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.CORRUPT_MESSAGE,
])
def test_other_retriable_errors_retry_without_a_refresh(code):
    assert classify(code) is Action.RETRY


@pytest.mark.parametrize("code", [
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_REQUIRED_ACKS, ErrorCode.INVALID_REQUEST,
    ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_RECORD,
])
def test_non_retriable_errors_fail_at_once(code):
    assert classify(code) is Action.FAIL
    assert produce_action(code, attempts=1, retries=10, age_ms=0, delivery_timeout_ms=120_000) is Action.FAIL


def test_a_batch_is_retried_until_retries_are_used_up():
    decide = lambda attempts: produce_action(ErrorCode.NOT_ENOUGH_REPLICAS, attempts=attempts, retries=2,
                                            age_ms=0, delivery_timeout_ms=120_000)
    assert [decide(n) for n in (1, 2, 3)] == [Action.RETRY, Action.RETRY, Action.FAIL]


def test_retries_zero_fails_on_the_first_error():
    assert produce_action(ErrorCode.NOT_LEADER_OR_FOLLOWER, attempts=1, retries=0, age_ms=0,
                          delivery_timeout_ms=120_000) is Action.FAIL


def test_no_retry_once_delivery_timeout_has_passed():
    assert produce_action(ErrorCode.REQUEST_TIMED_OUT, attempts=1, retries=100, age_ms=120_000,
                          delivery_timeout_ms=120_000) is Action.FAIL


def test_backoff_doubles_from_retry_backoff_ms_up_to_one_second():
    middle = [backoff_ms(n, 100, jitter=0.5) for n in range(1, 7)]
    assert middle == [100, 200, 400, 800, 1000, 1000]


def test_backoff_jitter_stays_within_twenty_percent():
    assert backoff_ms(1, 100, jitter=0.0) == pytest.approx(80)
    assert backoff_ms(1, 100, jitter=0.999999) == pytest.approx(120, abs=0.01)
    assert backoff_ms(50, 100, jitter=0.0) == pytest.approx(800)


def test_a_base_backoff_above_the_cap_is_kept():
    assert backoff_ms(3, 5000, jitter=0.5) == 5000


@pytest.mark.parametrize(("status", "code"), [
    (grpc.StatusCode.UNAVAILABLE, ErrorCode.NETWORK_EXCEPTION),
    (grpc.StatusCode.DEADLINE_EXCEEDED, ErrorCode.REQUEST_TIMED_OUT),
    (grpc.StatusCode.INVALID_ARGUMENT, ErrorCode.INVALID_REQUEST),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, ErrorCode.MESSAGE_TOO_LARGE),
    (grpc.StatusCode.UNIMPLEMENTED, ErrorCode.UNKNOWN_SERVER_ERROR),
    (grpc.StatusCode.PERMISSION_DENIED, ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_grpc_failures_map_to_kafka_errors(status, code):
    assert error_code_for_status(status) is code


def test_a_lost_connection_is_retried_but_an_unimplemented_rpc_is_not():
    assert classify(error_code_for_status(grpc.StatusCode.UNAVAILABLE)) is Action.REFRESH_AND_RETRY
    assert classify(error_code_for_status(grpc.StatusCode.UNIMPLEMENTED)) is Action.FAIL
