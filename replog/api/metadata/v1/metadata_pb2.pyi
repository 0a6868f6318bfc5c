from replog.api.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MetadataRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("brokers", "cluster_id", "controller_id", "controller", "topics", "image_version")
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedCompositeFieldContainer[_common_pb2.BrokerEndpoint]
    cluster_id: str
    controller_id: int
    controller: _common_pb2.ControllerEndpoint
    topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    image_version: int
    def __init__(self, brokers: _Optional[_Iterable[_Union[_common_pb2.BrokerEndpoint, _Mapping]]] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., controller: _Optional[_Union[_common_pb2.ControllerEndpoint, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ..., image_version: _Optional[int] = ...) -> None: ...

class TopicMetadata(_message.Message):
    __slots__ = ("error_code", "error_message", "name", "topic_id", "is_internal", "partitions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    name: str
    topic_id: str
    is_internal: bool
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionMetadata]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., name: _Optional[str] = ..., topic_id: _Optional[str] = ..., is_internal: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[PartitionMetadata, _Mapping]]] = ...) -> None: ...

class PartitionMetadata(_message.Message):
    __slots__ = ("error_code", "error_message", "partition", "leader", "leader_epoch", "replicas", "isr", "offline_replicas")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., partition: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class WatchMetadataRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class WatchMetadataResponse(_message.Message):
    __slots__ = ("image_version", "full_snapshot", "cluster_id", "controller_id", "controller", "changed_brokers", "removed_broker_ids", "changed_topics", "removed_topics")
    IMAGE_VERSION_FIELD_NUMBER: _ClassVar[int]
    FULL_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BROKERS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
    CHANGED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    image_version: int
    full_snapshot: bool
    cluster_id: str
    controller_id: int
    controller: _common_pb2.ControllerEndpoint
    changed_brokers: _containers.RepeatedCompositeFieldContainer[_common_pb2.BrokerEndpoint]
    removed_broker_ids: _containers.RepeatedScalarFieldContainer[int]
    changed_topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    removed_topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, image_version: _Optional[int] = ..., full_snapshot: _Optional[bool] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., controller: _Optional[_Union[_common_pb2.ControllerEndpoint, _Mapping]] = ..., changed_brokers: _Optional[_Iterable[_Union[_common_pb2.BrokerEndpoint, _Mapping]]] = ..., removed_broker_ids: _Optional[_Iterable[int]] = ..., changed_topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ..., removed_topics: _Optional[_Iterable[str]] = ...) -> None: ...
