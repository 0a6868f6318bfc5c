"""The client's exceptions: each names the Kafka error code and says what went wrong."""

from __future__ import annotations

from replog.core.errors import ErrorCode


class ClientError(Exception):
    """Base of every error the client raises on purpose.

    `error_code` is the Kafka error behind it (UNKNOWN_SERVER_ERROR when the
    cause was not an error code, e.g. a gRPC failure); `str()` is one sentence.
    """

    def __init__(self, message: str, error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class ClusterUnreachableError(ClientError):
    """No bootstrap address (or no broker, or no controller) answered in time."""


class ServerUnsupportedError(ClientError):
    """The server does not implement the RPC (gRPC UNIMPLEMENTED)."""


class ClientTimeoutError(ClientError):
    """An operation did not finish within its timeout (Kafka's TimeoutException)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.REQUEST_TIMED_OUT)


class UnknownTopicError(ClientError):
    """The topic does not exist (UNKNOWN_TOPIC_OR_PARTITION in the metadata)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"topic {topic!r} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        self.topic = topic


class ProduceError(ClientError):
    """A batch was not written: the partition's error code, after any retries."""

    def __init__(self, topic: str, partition: int, error_code: ErrorCode, detail: str) -> None:
        detail = f": {detail}" if detail else ""
        super().__init__(f"producing to {topic}-{partition} failed with {error_code.name}{detail}", error_code)
        self.topic = topic
        self.partition = partition


class RecordTooLargeError(ClientError):
    """A record is larger than the producer's max_request_size."""

    def __init__(self, size_bytes: int, limit_bytes: int) -> None:
        super().__init__(
            f"the record takes {size_bytes} bytes, more than max_request_size ({limit_bytes} bytes)",
            ErrorCode.MESSAGE_TOO_LARGE,
        )


class ProducerClosedError(ClientError):
    """send() after close(), or records still unsent when close() gave up."""


class FetchError(ClientError):
    """A partition could not be read for a reason that retrying will not fix."""

    def __init__(self, topic: str, partition: int, error_code: ErrorCode, detail: str) -> None:
        detail = f": {detail}" if detail else ""
        super().__init__(f"fetching {topic}-{partition} failed with {error_code.name}{detail}", error_code)
        self.topic = topic
        self.partition = partition


class OffsetOutOfRangeError(ClientError):
    """The position is outside the log and auto_offset_reset is "none"."""

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range for {topic}-{partition} and auto_offset_reset is 'none'; "
            "seek to a valid offset",
            ErrorCode.OFFSET_OUT_OF_RANGE,
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset


class LogTruncationError(ClientError):
    """The new leader's log ends below the consumer's position (KIP-320).

    Records the consumer already returned are gone from the partition: an
    unclean leader election lost them. The partition stops fetching until the
    caller seeks (for example to `end_offset`, the first offset the new leader
    does not have from the consumed epoch on).
    """

    def __init__(self, topic: str, partition: int, position: int, end_offset: int, leader_epoch: int) -> None:
        if end_offset >= 0:
            where = (f"the leader's log ends at {end_offset} for leader epoch {leader_epoch}; records "
                     f"{end_offset}..{position - 1} it returned were lost")
        else:
            where = f"the leader has no record of leader epoch {leader_epoch}, so records it returned were lost"
        super().__init__(
            f"log truncation detected on {topic}-{partition}: the consumer's position is {position} but "
            f"{where}; seek to continue",
            ErrorCode.OFFSET_OUT_OF_RANGE,
        )
        self.topic = topic
        self.partition = partition
        self.position = position
        self.end_offset = end_offset
        self.leader_epoch = leader_epoch


class AdminError(ClientError):
    """An admin request failed for one topic (or for the whole request)."""

    def __init__(self, message: str, error_code: ErrorCode, topic: str | None = None) -> None:
        super().__init__(message, error_code)
        self.topic = topic
        self.errors: dict[str, AdminError] = {}  # create_topics: every topic that failed
        self.created: dict = {}  # create_topics: the topics of the same call that were created


class NoOffsetForPartitionError(ClientError):
    """The group has no committed offset for a partition and auto_offset_reset is "none"."""

    def __init__(self, topic: str, partition: int) -> None:
        super().__init__(
            f"the group has no committed offset for {topic}-{partition} and auto_offset_reset is 'none'; "
            "seek to an offset, or use auto_offset_reset 'earliest' or 'latest'",
            ErrorCode.OFFSET_OUT_OF_RANGE,
        )
        self.topic = topic
        self.partition = partition


class CommitFailedError(ClientError):
    """The coordinator refused a commit for a reason that retrying will not fix (Kafka's
    CommitFailedException): the member was fenced or removed, a partition does not exist, ..."""


class GroupMembershipError(ClientError):
    """The coordinator refused the consumer's membership for good: an invalid group id or regex,
    an unknown assignor, an instance id another consumer holds, a full group."""


class TransactionStateError(ClientError):
    """A transactional call the producer's state does not allow (Kafka's IllegalStateException): begin twice,
    commit without a transaction, send() outside one, anything before init_transactions()."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.INVALID_TXN_STATE)


class TransactionAbortableError(ClientError):
    """The open transaction cannot commit (a batch failed for good, the coordinator would not add a
    partition or the offsets, or aborted the transaction after its timeout): call abort_transaction(),
    then go on with a new transaction."""


class TransactionAbortedError(ClientError):
    """A record was not written because its transaction was aborted."""


class ProducerFencedError(ClientError):
    """A newer producer with the same transactional id fenced this one (PRODUCER_FENCED): the producer
    cannot be used any more; close it."""


class TransactionFatalError(ClientError):
    """The transaction coordinator refused the producer for good (a state it does not accept, an invalid
    transaction timeout, ...): the producer cannot be used any more; close it."""
