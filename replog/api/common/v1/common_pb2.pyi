from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    ERROR_CODE_NONE: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_SERVER_ERROR: _ClassVar[ErrorCode]
    ERROR_CODE_OFFSET_OUT_OF_RANGE: _ClassVar[ErrorCode]
    ERROR_CODE_CORRUPT_MESSAGE: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_FETCH_SIZE: _ClassVar[ErrorCode]
    ERROR_CODE_LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_LEADER_OR_FOLLOWER: _ClassVar[ErrorCode]
    ERROR_CODE_REQUEST_TIMED_OUT: _ClassVar[ErrorCode]
    ERROR_CODE_BROKER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_REPLICA_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_MESSAGE_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_CONTROLLER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_OFFSET_METADATA_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_NETWORK_EXCEPTION: _ClassVar[ErrorCode]
    ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_COORDINATOR_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_COORDINATOR: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TOPIC_EXCEPTION: _ClassVar[ErrorCode]
    ERROR_CODE_RECORD_LIST_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_ENOUGH_REPLICAS: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REQUIRED_ACKS: _ClassVar[ErrorCode]
    ERROR_CODE_ILLEGAL_GENERATION: _ClassVar[ErrorCode]
    ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_GROUP_ID: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_MEMBER_ID: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_SESSION_TIMEOUT: _ClassVar[ErrorCode]
    ERROR_CODE_REBALANCE_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TIMESTAMP: _ClassVar[ErrorCode]
    ERROR_CODE_TOPIC_ALREADY_EXISTS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_PARTITIONS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REPLICATION_FACTOR: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REPLICA_ASSIGNMENT: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_CONFIG: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_CONTROLLER: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REQUEST: _ClassVar[ErrorCode]
    ERROR_CODE_POLICY_VIOLATION: _ClassVar[ErrorCode]
    ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER: _ClassVar[ErrorCode]
    ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_PRODUCER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TXN_STATE: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_PRODUCER_ID_MAPPING: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TRANSACTION_TIMEOUT: _ClassVar[ErrorCode]
    ERROR_CODE_CONCURRENT_TRANSACTIONS: _ClassVar[ErrorCode]
    ERROR_CODE_TRANSACTION_COORDINATOR_FENCED: _ClassVar[ErrorCode]
    ERROR_CODE_KAFKA_STORAGE_ERROR: _ClassVar[ErrorCode]
    ERROR_CODE_FENCED_LEADER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_LEADER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_PRODUCER_ID: _ClassVar[ErrorCode]
    ERROR_CODE_REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_ELECTION_NOT_NEEDED: _ClassVar[ErrorCode]
    ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_OFFSET_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_MEMBER_ID_REQUIRED: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_ID_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_UNSTABLE_OFFSET_COMMIT: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_UPDATE_VERSION: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_TOPIC_ID: _ClassVar[ErrorCode]
    ERROR_CODE_INELIGIBLE_REPLICA: _ClassVar[ErrorCode]
    ERROR_CODE_NEW_LEADER_ELECTED: _ClassVar[ErrorCode]
    ERROR_CODE_PRODUCER_FENCED: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_BROKER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_RECORD: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_COORDINATOR_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_TOPIC_DELETION_DISABLED: _ClassVar[ErrorCode]
    ERROR_CODE_FETCH_SESSION_ID_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_FETCH_SESSION_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_FENCED_INSTANCE_ID: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_MAX_SIZE_REACHED: _ClassVar[ErrorCode]
    ERROR_CODE_NON_EMPTY_GROUP: _ClassVar[ErrorCode]
    ERROR_CODE_FENCED_MEMBER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_MEMBER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_UNRELEASED_INSTANCE_ID: _ClassVar[ErrorCode]
    ERROR_CODE_UNSUPPORTED_ASSIGNOR: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_SUBSCRIPTION_REGEX: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_SUBSCRIBED_TO_TOPIC: _ClassVar[ErrorCode]
    ERROR_CODE_OPERATION_NOT_ATTEMPTED: _ClassVar[ErrorCode]
    ERROR_CODE_TRANSACTIONAL_ID_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_TRANSACTION_ABORTABLE: _ClassVar[ErrorCode]
ERROR_CODE_UNSPECIFIED: ErrorCode
ERROR_CODE_NONE: ErrorCode
ERROR_CODE_UNKNOWN_SERVER_ERROR: ErrorCode
ERROR_CODE_OFFSET_OUT_OF_RANGE: ErrorCode
ERROR_CODE_CORRUPT_MESSAGE: ErrorCode
ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION: ErrorCode
ERROR_CODE_INVALID_FETCH_SIZE: ErrorCode
ERROR_CODE_LEADER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_NOT_LEADER_OR_FOLLOWER: ErrorCode
ERROR_CODE_REQUEST_TIMED_OUT: ErrorCode
ERROR_CODE_BROKER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_REPLICA_NOT_AVAILABLE: ErrorCode
ERROR_CODE_MESSAGE_TOO_LARGE: ErrorCode
ERROR_CODE_STALE_CONTROLLER_EPOCH: ErrorCode
ERROR_CODE_OFFSET_METADATA_TOO_LARGE: ErrorCode
ERROR_CODE_NETWORK_EXCEPTION: ErrorCode
ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS: ErrorCode
ERROR_CODE_COORDINATOR_NOT_AVAILABLE: ErrorCode
ERROR_CODE_NOT_COORDINATOR: ErrorCode
ERROR_CODE_INVALID_TOPIC_EXCEPTION: ErrorCode
ERROR_CODE_RECORD_LIST_TOO_LARGE: ErrorCode
ERROR_CODE_NOT_ENOUGH_REPLICAS: ErrorCode
ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode
ERROR_CODE_INVALID_REQUIRED_ACKS: ErrorCode
ERROR_CODE_ILLEGAL_GENERATION: ErrorCode
ERROR_CODE_INCONSISTENT_GROUP_PROTOCOL: ErrorCode
ERROR_CODE_INVALID_GROUP_ID: ErrorCode
ERROR_CODE_UNKNOWN_MEMBER_ID: ErrorCode
ERROR_CODE_INVALID_SESSION_TIMEOUT: ErrorCode
ERROR_CODE_REBALANCE_IN_PROGRESS: ErrorCode
ERROR_CODE_INVALID_COMMIT_OFFSET_SIZE: ErrorCode
ERROR_CODE_INVALID_TIMESTAMP: ErrorCode
ERROR_CODE_TOPIC_ALREADY_EXISTS: ErrorCode
ERROR_CODE_INVALID_PARTITIONS: ErrorCode
ERROR_CODE_INVALID_REPLICATION_FACTOR: ErrorCode
ERROR_CODE_INVALID_REPLICA_ASSIGNMENT: ErrorCode
ERROR_CODE_INVALID_CONFIG: ErrorCode
ERROR_CODE_NOT_CONTROLLER: ErrorCode
ERROR_CODE_INVALID_REQUEST: ErrorCode
ERROR_CODE_POLICY_VIOLATION: ErrorCode
ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode
ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER: ErrorCode
ERROR_CODE_INVALID_PRODUCER_EPOCH: ErrorCode
ERROR_CODE_INVALID_TXN_STATE: ErrorCode
ERROR_CODE_INVALID_PRODUCER_ID_MAPPING: ErrorCode
ERROR_CODE_INVALID_TRANSACTION_TIMEOUT: ErrorCode
ERROR_CODE_CONCURRENT_TRANSACTIONS: ErrorCode
ERROR_CODE_TRANSACTION_COORDINATOR_FENCED: ErrorCode
ERROR_CODE_KAFKA_STORAGE_ERROR: ErrorCode
ERROR_CODE_FENCED_LEADER_EPOCH: ErrorCode
ERROR_CODE_UNKNOWN_LEADER_EPOCH: ErrorCode
ERROR_CODE_UNKNOWN_PRODUCER_ID: ErrorCode
ERROR_CODE_REASSIGNMENT_IN_PROGRESS: ErrorCode
ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS: ErrorCode
ERROR_CODE_ELECTION_NOT_NEEDED: ErrorCode
ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE: ErrorCode
ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_OFFSET_NOT_AVAILABLE: ErrorCode
ERROR_CODE_MEMBER_ID_REQUIRED: ErrorCode
ERROR_CODE_GROUP_ID_NOT_FOUND: ErrorCode
ERROR_CODE_UNSTABLE_OFFSET_COMMIT: ErrorCode
ERROR_CODE_INVALID_UPDATE_VERSION: ErrorCode
ERROR_CODE_UNKNOWN_TOPIC_ID: ErrorCode
ERROR_CODE_INELIGIBLE_REPLICA: ErrorCode
ERROR_CODE_NEW_LEADER_ELECTED: ErrorCode
ERROR_CODE_PRODUCER_FENCED: ErrorCode
ERROR_CODE_STALE_BROKER_EPOCH: ErrorCode
ERROR_CODE_INVALID_RECORD: ErrorCode
ERROR_CODE_GROUP_COORDINATOR_NOT_AVAILABLE: ErrorCode
ERROR_CODE_TOPIC_DELETION_DISABLED: ErrorCode
ERROR_CODE_FETCH_SESSION_ID_NOT_FOUND: ErrorCode
ERROR_CODE_INVALID_FETCH_SESSION_EPOCH: ErrorCode
ERROR_CODE_FENCED_INSTANCE_ID: ErrorCode
ERROR_CODE_GROUP_MAX_SIZE_REACHED: ErrorCode
ERROR_CODE_NON_EMPTY_GROUP: ErrorCode
ERROR_CODE_FENCED_MEMBER_EPOCH: ErrorCode
ERROR_CODE_STALE_MEMBER_EPOCH: ErrorCode
ERROR_CODE_UNRELEASED_INSTANCE_ID: ErrorCode
ERROR_CODE_UNSUPPORTED_ASSIGNOR: ErrorCode
ERROR_CODE_INVALID_SUBSCRIPTION_REGEX: ErrorCode
ERROR_CODE_GROUP_SUBSCRIBED_TO_TOPIC: ErrorCode
ERROR_CODE_OPERATION_NOT_ATTEMPTED: ErrorCode
ERROR_CODE_TRANSACTIONAL_ID_NOT_FOUND: ErrorCode
ERROR_CODE_TRANSACTION_ABORTABLE: ErrorCode

class BrokerEndpoint(_message.Message):
    __slots__ = ("broker_id", "host", "port", "rack")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    host: str
    port: int
    rack: str
    def __init__(self, broker_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...

class ControllerEndpoint(_message.Message):
    __slots__ = ("controller_id", "host", "port")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    host: str
    port: int
    def __init__(self, controller_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class TopicPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class TopicPartitions(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[_Union[ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...
