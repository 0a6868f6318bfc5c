from replog.api.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConfigResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_RESOURCE_TYPE_UNSPECIFIED: _ClassVar[ConfigResourceType]
    CONFIG_RESOURCE_TYPE_TOPIC: _ClassVar[ConfigResourceType]
    CONFIG_RESOURCE_TYPE_BROKER: _ClassVar[ConfigResourceType]

class ConfigSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_SOURCE_UNSPECIFIED: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_STATIC_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DEFAULT_CONFIG: _ClassVar[ConfigSource]

class AlterConfigOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALTER_CONFIG_OP_UNSPECIFIED: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_SET: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_DELETE: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_APPEND: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_SUBTRACT: _ClassVar[AlterConfigOp]

class ElectionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELECTION_TYPE_UNSPECIFIED: _ClassVar[ElectionType]
    ELECTION_TYPE_PREFERRED: _ClassVar[ElectionType]
    ELECTION_TYPE_UNCLEAN: _ClassVar[ElectionType]
CONFIG_RESOURCE_TYPE_UNSPECIFIED: ConfigResourceType
CONFIG_RESOURCE_TYPE_TOPIC: ConfigResourceType
CONFIG_RESOURCE_TYPE_BROKER: ConfigResourceType
CONFIG_SOURCE_UNSPECIFIED: ConfigSource
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: ConfigSource
CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_STATIC_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_DEFAULT_CONFIG: ConfigSource
ALTER_CONFIG_OP_UNSPECIFIED: AlterConfigOp
ALTER_CONFIG_OP_SET: AlterConfigOp
ALTER_CONFIG_OP_DELETE: AlterConfigOp
ALTER_CONFIG_OP_APPEND: AlterConfigOp
ALTER_CONFIG_OP_SUBTRACT: AlterConfigOp
ELECTION_TYPE_UNSPECIFIED: ElectionType
ELECTION_TYPE_PREFERRED: ElectionType
ELECTION_TYPE_UNCLEAN: ElectionType

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatableTopic(_message.Message):
    __slots__ = ("name", "num_partitions", "replication_factor", "assignments", "configs")
    class ConfigsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    num_partitions: int
    replication_factor: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    configs: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ..., configs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ReplicaAssignment(_message.Message):
    __slots__ = ("partition", "broker_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    broker_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopicResult, _Mapping]]] = ...) -> None: ...

class CreatableTopicResult(_message.Message):
    __slots__ = ("name", "topic_id", "error_code", "error_message", "num_partitions", "replication_factor")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error_code: _common_pb2.ErrorCode
    error_message: str
    num_partitions: int
    replication_factor: int
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("topic_names", "timeout_ms")
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeletableTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[DeletableTopicResult, _Mapping]]] = ...) -> None: ...

class DeletableTopicResult(_message.Message):
    __slots__ = ("name", "error_code", "error_message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, name: _Optional[str] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatePartitionsTopic(_message.Message):
    __slots__ = ("name", "count", "assignments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    assignments: _containers.RepeatedCompositeFieldContainer[ReplicaAssignment]
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[ReplicaAssignment, _Mapping]]] = ...) -> None: ...

class CreatePartitionsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopicResult, _Mapping]]] = ...) -> None: ...

class CreatePartitionsTopicResult(_message.Message):
    __slots__ = ("name", "error_code", "error_message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, name: _Optional[str] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class DescribeConfigsRequest(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResource]
    def __init__(self, resources: _Optional[_Iterable[_Union[DescribeConfigsResource, _Mapping]]] = ...) -> None: ...

class DescribeConfigsResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "config_names")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_NAMES_FIELD_NUMBER: _ClassVar[int]
    resource_type: ConfigResourceType
    resource_name: str
    config_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., config_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeConfigsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DescribeConfigsResult, _Mapping]]] = ...) -> None: ...

class DescribeConfigsResult(_message.Message):
    __slots__ = ("error_code", "error_message", "resource_type", "resource_name", "configs")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    resource_type: ConfigResourceType
    resource_name: str
    configs: _containers.RepeatedCompositeFieldContainer[ConfigEntry]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[ConfigEntry, _Mapping]]] = ...) -> None: ...

class ConfigEntry(_message.Message):
    __slots__ = ("name", "value", "read_only", "source", "is_sensitive")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    IS_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    read_only: bool
    source: ConfigSource
    is_sensitive: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., read_only: _Optional[bool] = ..., source: _Optional[_Union[ConfigSource, str]] = ..., is_sensitive: _Optional[bool] = ...) -> None: ...

class AlterConfigsRequest(_message.Message):
    __slots__ = ("resources", "validate_only")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[AlterConfigsResource]
    validate_only: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[AlterConfigsResource, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class AlterConfigsResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "configs")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    resource_type: ConfigResourceType
    resource_name: str
    configs: _containers.RepeatedCompositeFieldContainer[AlterableConfig]
    def __init__(self, resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[AlterableConfig, _Mapping]]] = ...) -> None: ...

class AlterableConfig(_message.Message):
    __slots__ = ("name", "op", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: AlterConfigOp
    value: str
    def __init__(self, name: _Optional[str] = ..., op: _Optional[_Union[AlterConfigOp, str]] = ..., value: _Optional[str] = ...) -> None: ...

class AlterConfigsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterConfigsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterConfigsResult, _Mapping]]] = ...) -> None: ...

class AlterConfigsResult(_message.Message):
    __slots__ = ("error_code", "error_message", "resource_type", "resource_name")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    resource_type: ConfigResourceType
    resource_name: str
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "topic_partitions", "all_partitions", "timeout_ms")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    ALL_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    election_type: ElectionType
    topic_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    all_partitions: bool
    timeout_ms: int
    def __init__(self, election_type: _Optional[_Union[ElectionType, str]] = ..., topic_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ..., all_partitions: _Optional[bool] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[_common_pb2.PartitionResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[_common_pb2.PartitionResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "partitions")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionProposal]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionProposal, _Mapping]]] = ...) -> None: ...

class AlterPartitionProposal(_message.Message):
    __slots__ = ("topic", "partition", "leader_epoch", "partition_epoch", "new_isr_with_epochs")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_WITH_EPOCHS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr_with_epochs: _containers.RepeatedCompositeFieldContainer[IsrMember]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., new_isr_with_epochs: _Optional[_Iterable[_Union[IsrMember, _Mapping]]] = ...) -> None: ...

class IsrMember(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "partitions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message", "leader", "leader_epoch", "isr", "partition_epoch")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: _common_pb2.ErrorCode
    error_message: str
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "remaining_partitions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    remaining_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., remaining_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ...) -> None: ...

class AlterPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("timeout_ms", "partitions")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    partitions: _containers.RepeatedCompositeFieldContainer[ReassignablePartition]
    def __init__(self, timeout_ms: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[ReassignablePartition, _Mapping]]] = ...) -> None: ...

class ReassignablePartition(_message.Message):
    __slots__ = ("topic", "partition", "replicas")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class AlterPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[_common_pb2.PartitionResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[_common_pb2.PartitionResult, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("timeout_ms", "topic_partitions")
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    timeout_ms: int
    topic_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartitions]
    def __init__(self, timeout_ms: _Optional[int] = ..., topic_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartitions, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "reassignments")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    reassignments: _containers.RepeatedCompositeFieldContainer[OngoingPartitionReassignment]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., reassignments: _Optional[_Iterable[_Union[OngoingPartitionReassignment, _Mapping]]] = ...) -> None: ...

class OngoingPartitionReassignment(_message.Message):
    __slots__ = ("topic", "partition", "replicas", "adding_replicas", "removing_replicas")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ...) -> None: ...
