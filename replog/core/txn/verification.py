"""What a partition leader answers a transactional batch its coordinator did not verify (KIP-890 part 1), or
did not add (part 2, a producer on transaction version 2).

Before it appends the first batch of a producer's transaction, the leader asks
the transactional id's coordinator (AddPartitionsToTxn, verify-only) whether
the partition is in the producer's ongoing transaction at the batch's epoch,
or has it add the partition. The coordinator's answer becomes the produce
answer as Kafka 4 maps it:

    coordinator's answer                                     produce answer
    -------------------------------------------------------  ---------------------------------------
    NONE                                                     (the batch is appended)
    TRANSACTION_ABORTABLE, INVALID_TXN_STATE                 INVALID_TXN_STATE: the partition was not
                                                             added to the transaction
    NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,           NOT_ENOUGH_REPLICAS: retriable, and it
    COORDINATOR_NOT_AVAILABLE, NETWORK_EXCEPTION,            sends the producer to no metadata refresh
    REQUEST_TIMED_OUT (no answer)
    anything else (PRODUCER_FENCED,                          the same, with the coordinator's message
    INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING,
    CONCURRENT_TRANSACTIONS)
"""

from ..errors import ErrorCode

_NOT_ADDED = frozenset({ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.INVALID_TXN_STATE})
_NOT_VERIFIED_YET = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                               ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION,
                               ErrorCode.REQUEST_TIMED_OUT})


def produce_error(coordinator_answer: ErrorCode, message: str = "") -> tuple[ErrorCode, str]:
    """The produce answer to a batch whose verification the coordinator answered so (with `message`), and
    why."""
    if coordinator_answer == ErrorCode.NONE:
        return ErrorCode.NONE, ""
    if coordinator_answer in _NOT_ADDED:
        return ErrorCode.INVALID_TXN_STATE, "the partition was not added to the producer's ongoing transaction"
    if coordinator_answer in _NOT_VERIFIED_YET:
        return (ErrorCode.NOT_ENOUGH_REPLICAS, "the transaction coordinator could not verify the partition yet "
                                               f"({coordinator_answer.name}); retry")
    return coordinator_answer, f"the transaction coordinator refused: {message or coordinator_answer.name}"
