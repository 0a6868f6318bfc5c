"""replog's Python client: Producer, Consumer and Admin (see docs/CLIENT.md)."""

from replog.client.admin import Admin
from replog.client.consumer import Consumer
from replog.client.errors import (
    AdminError,
    ClientError,
    ClientTimeoutError,
    ClusterUnreachableError,
    FetchError,
    LogTruncationError,
    OffsetOutOfRangeError,
    ProduceError,
    ProducerClosedError,
    RecordTooLargeError,
    UnknownTopicError,
)
from replog.client.producer import Producer, RecordFuture
from replog.client.types import (
    ConsumerRecord,
    CreatedTopic,
    NewTopic,
    PartitionInfo,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "Admin",
    "AdminError",
    "ClientError",
    "ClientTimeoutError",
    "ClusterUnreachableError",
    "Consumer",
    "ConsumerRecord",
    "CreatedTopic",
    "FetchError",
    "LogTruncationError",
    "NewTopic",
    "OffsetOutOfRangeError",
    "PartitionInfo",
    "ProduceError",
    "Producer",
    "ProducerClosedError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "TopicDescription",
    "TopicPartition",
    "UnknownTopicError",
]
