"""What a partition leader answers a transactional batch its coordinator did not verify (KIP-890), as
Kafka 4 maps the coordinator's answer: retriable when the coordinator could not be asked, INVALID_TXN_STATE
when the partition is not in the transaction, the coordinator's own refusal otherwise."""

import pytest

from replog.core.errors import ErrorCode
from replog.core.txn.verification import produce_error


@pytest.mark.parametrize("answer, expected", [
    (ErrorCode.NONE, ErrorCode.NONE),
    (ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.INVALID_TXN_STATE, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS),
    (ErrorCode.PRODUCER_FENCED, ErrorCode.PRODUCER_FENCED),
    (ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.INVALID_PRODUCER_ID_MAPPING),
    (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.CONCURRENT_TRANSACTIONS),
    (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_EPOCH),
])
def test_the_produce_answer_to_each_coordinator_answer(answer, expected):
    error, message = produce_error(answer)
    assert error == expected
    assert bool(message) == (expected != ErrorCode.NONE)


def test_the_coordinators_reason_reaches_the_producer():
    reason = "the transaction of 'tx' at epoch 0 was aborted: it was open longer than its transaction.timeout.ms"
    error, message = produce_error(ErrorCode.INVALID_PRODUCER_EPOCH, reason)
    assert (error, message) == (ErrorCode.INVALID_PRODUCER_EPOCH, f"the transaction coordinator refused: {reason}")
    assert produce_error(ErrorCode.PRODUCER_FENCED)[1] == "the transaction coordinator refused: PRODUCER_FENCED"
