"""Kafka's error codes, as values the pure rules hand back.

The numbers are replog's own wire numbers (the `ErrorCode` enum of
`replog.api.common.v1`, where each name carries the `ERROR_CODE_` prefix); the
names are Kafka's, so that a Kafka user recognises every one. Zero stays
unused on the wire (`ERROR_CODE_UNSPECIFIED`): a response that forgot to set
its error is then visibly wrong rather than silently NONE.
"""

import enum


class ErrorCode(enum.IntEnum):
    NONE = 1
    UNKNOWN_SERVER_ERROR = 2
    OFFSET_OUT_OF_RANGE = 3
    CORRUPT_MESSAGE = 4
    UNKNOWN_TOPIC_OR_PARTITION = 5
    INVALID_FETCH_SIZE = 6
    LEADER_NOT_AVAILABLE = 7
    NOT_LEADER_OR_FOLLOWER = 8
    REQUEST_TIMED_OUT = 9
    BROKER_NOT_AVAILABLE = 10
    REPLICA_NOT_AVAILABLE = 11
    MESSAGE_TOO_LARGE = 12
    STALE_CONTROLLER_EPOCH = 13
    OFFSET_METADATA_TOO_LARGE = 14
    NETWORK_EXCEPTION = 15
    COORDINATOR_LOAD_IN_PROGRESS = 16
    COORDINATOR_NOT_AVAILABLE = 17
    NOT_COORDINATOR = 18
    INVALID_TOPIC_EXCEPTION = 19
    RECORD_LIST_TOO_LARGE = 20
    NOT_ENOUGH_REPLICAS = 21
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 22
    INVALID_REQUIRED_ACKS = 23
    ILLEGAL_GENERATION = 24
    INCONSISTENT_GROUP_PROTOCOL = 25
    INVALID_GROUP_ID = 26
    UNKNOWN_MEMBER_ID = 27
    INVALID_SESSION_TIMEOUT = 28
    REBALANCE_IN_PROGRESS = 29
    INVALID_COMMIT_OFFSET_SIZE = 30
    INVALID_TIMESTAMP = 31
    TOPIC_ALREADY_EXISTS = 32
    INVALID_PARTITIONS = 33
    INVALID_REPLICATION_FACTOR = 34
    INVALID_REPLICA_ASSIGNMENT = 35
    INVALID_CONFIG = 36
    NOT_CONTROLLER = 37
    INVALID_REQUEST = 38
    POLICY_VIOLATION = 39
    OUT_OF_ORDER_SEQUENCE_NUMBER = 40
    DUPLICATE_SEQUENCE_NUMBER = 41
    INVALID_PRODUCER_EPOCH = 42
    INVALID_TXN_STATE = 43
    INVALID_PRODUCER_ID_MAPPING = 44
    INVALID_TRANSACTION_TIMEOUT = 45
    CONCURRENT_TRANSACTIONS = 46
    TRANSACTION_COORDINATOR_FENCED = 47
    KAFKA_STORAGE_ERROR = 48
    FENCED_LEADER_EPOCH = 49
    UNKNOWN_LEADER_EPOCH = 50
    UNKNOWN_PRODUCER_ID = 51
    REASSIGNMENT_IN_PROGRESS = 52
    NO_REASSIGNMENT_IN_PROGRESS = 53
    ELECTION_NOT_NEEDED = 54
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 55
    PREFERRED_LEADER_NOT_AVAILABLE = 56
    OFFSET_NOT_AVAILABLE = 57
    MEMBER_ID_REQUIRED = 58
    GROUP_ID_NOT_FOUND = 59
    UNSTABLE_OFFSET_COMMIT = 60
    INVALID_UPDATE_VERSION = 61
    UNKNOWN_TOPIC_ID = 62
    INELIGIBLE_REPLICA = 63
    NEW_LEADER_ELECTED = 64
    PRODUCER_FENCED = 65
    STALE_BROKER_EPOCH = 66
    INVALID_RECORD = 67
    GROUP_COORDINATOR_NOT_AVAILABLE = 68
    TOPIC_DELETION_DISABLED = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_INSTANCE_ID = 72
    GROUP_MAX_SIZE_REACHED = 73
    NON_EMPTY_GROUP = 74

    @property
    def retriable(self) -> bool:
        return self in _RETRIABLE

    @classmethod
    def of(cls, value: int) -> "ErrorCode":
        """The ErrorCode a wire number means: UNSPECIFIED (0), which a peer that forgot to set
        the field sends, and numbers this build does not know are server errors."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


# Kafka marks these as RetriableException: a client may try again after a
# metadata refresh or a backoff, and the request may then succeed.
_RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
    }
)
