"""The ControllerService API between protobuf and the core's types, both ways, in one place.

The controller's servicer decodes requests and encodes answers here; a broker's
line to the controller encodes its AlterPartition and ControlledShutdown
requests and decodes the answers here. Error codes cross as their wire numbers
(`ErrorCode.of` reads one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2
from replog.core.config_resources import ConfigSource, DescribedConfigs, Resource, ResourceType
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import ProposalOutcome
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse, IsrMember, PartitionState
from replog.core.outcome import Outcome
from replog.core.reassignment import OngoingReassignment
from replog.core.topic_configs import ConfigChange, ConfigOp
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import Assignments, NewPartitions, NewTopic, TopicOutcome

_RESOURCE_TYPES = {
    controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC: ResourceType.TOPIC,
    controller_pb2.CONFIG_RESOURCE_TYPE_BROKER: ResourceType.BROKER,
}
_RESOURCE_TYPE_NUMBERS = {kind: number for number, kind in _RESOURCE_TYPES.items()}
_CONFIG_SOURCES = {
    ConfigSource.DYNAMIC_TOPIC_CONFIG: controller_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG: controller_pb2.CONFIG_SOURCE_STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG: controller_pb2.CONFIG_SOURCE_DEFAULT_CONFIG,
}
_CONFIG_OPS = {
    controller_pb2.ALTER_CONFIG_OP_SET: ConfigOp.SET,
    controller_pb2.ALTER_CONFIG_OP_DELETE: ConfigOp.DELETE,
    controller_pb2.ALTER_CONFIG_OP_APPEND: ConfigOp.APPEND,
    controller_pb2.ALTER_CONFIG_OP_SUBTRACT: ConfigOp.SUBTRACT,
}


class MalformedRequest(ValueError):
    """A request the controller cannot read; the message says what is wrong (gRPC INVALID_ARGUMENT)."""


def partitions(topics: Iterable[common_pb2.TopicPartitions]) -> list[TopicPartition]:
    return [TopicPartition(t.topic, p) for t in topics for p in t.partitions]


def partition_results(outcomes: Iterable[tuple[TopicPartition, Outcome]]) -> list[common_pb2.PartitionResult]:
    return [common_pb2.PartitionResult(topic=partition.topic, partition=partition.partition,
                                       error_code=int(outcome.error), error_message=outcome.message)
            for partition, outcome in outcomes]


def _assignments(assignments: Iterable[controller_pb2.ReplicaAssignment]) -> Assignments:
    return tuple((a.partition, tuple(a.broker_ids)) for a in assignments)


# -- topics -----------------------------------------------------------------------------------------


def new_topics(request: controller_pb2.CreateTopicsRequest) -> list[NewTopic]:
    return [NewTopic(name=t.name, num_partitions=t.num_partitions, replication_factor=t.replication_factor,
                     assignments=_assignments(t.assignments), configs=dict(t.configs))
            for t in request.topics]


def create_topics_request(topics: Iterable[NewTopic], timeout_ms: int) -> controller_pb2.CreateTopicsRequest:
    return controller_pb2.CreateTopicsRequest(
        topics=[controller_pb2.CreatableTopic(name=t.name, num_partitions=t.num_partitions,
                                              replication_factor=t.replication_factor, configs=dict(t.configs))
                for t in topics],
        timeout_ms=timeout_ms)


def topic_outcomes(response: controller_pb2.CreateTopicsResponse) -> list[TopicOutcome]:
    return [TopicOutcome(t.name, ErrorCode.of(t.error_code), t.error_message) for t in response.topics]


def create_topics_response(outcomes: Iterable[TopicOutcome]) -> controller_pb2.CreateTopicsResponse:
    return controller_pb2.CreateTopicsResponse(topics=[
        controller_pb2.CreatableTopicResult(
            name=o.name, topic_id=o.topic_id, error_code=int(o.error), error_message=o.message,
            num_partitions=o.num_partitions, replication_factor=o.replication_factor)
        for o in outcomes])


def delete_topics_response(names: Sequence[str], outcomes: Iterable[Outcome]) -> controller_pb2.DeleteTopicsResponse:
    return controller_pb2.DeleteTopicsResponse(topics=[
        controller_pb2.DeletableTopicResult(name=name, error_code=int(o.error), error_message=o.message)
        for name, o in zip(names, outcomes)])


def new_partitions(request: controller_pb2.CreatePartitionsRequest) -> list[NewPartitions]:
    return [NewPartitions(t.name, t.count, _assignments(t.assignments)) for t in request.topics]


def create_partitions_response(
    topics: Sequence[NewPartitions], outcomes: Iterable[Outcome]
) -> controller_pb2.CreatePartitionsResponse:
    return controller_pb2.CreatePartitionsResponse(topics=[
        controller_pb2.CreatePartitionsTopicResult(name=t.name, error_code=int(o.error), error_message=o.message)
        for t, o in zip(topics, outcomes)])


# -- configs ----------------------------------------------------------------------------------------


def _resource(resource_type: int, name: str) -> Resource:
    return Resource(_RESOURCE_TYPES.get(resource_type), name)


def configs_to_describe(request: controller_pb2.DescribeConfigsRequest) -> list[tuple[Resource, list[str]]]:
    return [(_resource(r.resource_type, r.resource_name), list(r.config_names)) for r in request.resources]


def describe_configs_response(described: Iterable[DescribedConfigs]) -> controller_pb2.DescribeConfigsResponse:
    return controller_pb2.DescribeConfigsResponse(results=[_described(d) for d in described])


def _described(described: DescribedConfigs) -> controller_pb2.DescribeConfigsResult:
    resource = described.resource
    result = controller_pb2.DescribeConfigsResult(
        error_code=int(described.outcome.error), error_message=described.outcome.message,
        resource_type=_RESOURCE_TYPE_NUMBERS.get(resource.type, controller_pb2.CONFIG_RESOURCE_TYPE_UNSPECIFIED),
        resource_name=resource.name)
    for entry in described.entries:
        config = result.configs.add(name=entry.name, read_only=entry.read_only, source=_CONFIG_SOURCES[entry.source])
        if entry.value is not None:
            config.value = entry.value
    return result


def config_changes(request: controller_pb2.AlterConfigsRequest) -> list[tuple[Resource, list[ConfigChange]]]:
    """The changes of each resource; MalformedRequest for a change without an op."""
    requests = []
    for resource in request.resources:
        changes = []
        for config in resource.configs:
            op = _CONFIG_OPS.get(config.op)
            if op is None:
                raise MalformedRequest(f"config {config.name!r} has no op: set SET, DELETE, APPEND or SUBTRACT")
            changes.append(ConfigChange(config.name, op, config.value if config.HasField("value") else None))
        requests.append((_resource(resource.resource_type, resource.resource_name), changes))
    return requests


def alter_configs_response(
    request: controller_pb2.AlterConfigsRequest, outcomes: Iterable[Outcome]
) -> controller_pb2.AlterConfigsResponse:
    return controller_pb2.AlterConfigsResponse(results=[
        controller_pb2.AlterConfigsResult(error_code=int(o.error), error_message=o.message,
                                          resource_type=r.resource_type, resource_name=r.resource_name)
        for r, o in zip(request.resources, outcomes)])


# -- elections and controlled shutdown --------------------------------------------------------------


def elect_leaders_response(
    outcomes: Iterable[tuple[TopicPartition, Outcome]], refusal: Outcome | None = None
) -> controller_pb2.ElectLeadersResponse:
    """The per-partition outcomes, or a refusal of the whole request."""
    if refusal is not None:
        return controller_pb2.ElectLeadersResponse(error_code=int(refusal.error), error_message=refusal.message)
    return controller_pb2.ElectLeadersResponse(error_code=int(ErrorCode.NONE), results=partition_results(outcomes))


def controlled_shutdown_response(
    remaining: Iterable[TopicPartition], refusal: Outcome | None = None
) -> controller_pb2.ControlledShutdownResponse:
    if refusal is not None:
        return controller_pb2.ControlledShutdownResponse(error_code=int(refusal.error), error_message=refusal.message)
    return controller_pb2.ControlledShutdownResponse(
        error_code=int(ErrorCode.NONE),
        remaining_partitions=[common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in remaining])


def controlled_shutdown_request(broker_id: int, broker_epoch: int) -> controller_pb2.ControlledShutdownRequest:
    return controller_pb2.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch)


def remaining_partitions(response: controller_pb2.ControlledShutdownResponse) -> list[TopicPartition]:
    """The partitions a broker in controlled shutdown still leads."""
    return [TopicPartition(p.topic, p.partition) for p in response.remaining_partitions]


# -- AlterPartition ---------------------------------------------------------------------------------


def alter_partition_request(
    broker_id: int, broker_epoch: int, proposals: Iterable[tuple[TopicPartition, AlterPartitionRequest]]
) -> controller_pb2.AlterPartitionRequest:
    """A leader's proposals, each ISR member with the broker epoch the leader saw it fetch with (KIP-903)."""
    return controller_pb2.AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=broker_epoch,
        partitions=[
            controller_pb2.AlterPartitionProposal(
                topic=partition.topic, partition=partition.partition, leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr_with_epochs=[controller_pb2.IsrMember(broker_id=m.broker_id, broker_epoch=m.broker_epoch)
                                     for m in proposal.new_isr])
            for partition, proposal in proposals
        ])


def isr_proposals(request: controller_pb2.AlterPartitionRequest) -> list[tuple[TopicPartition, AlterPartitionRequest]]:
    """The proposals of an AlterPartition, in request order, as the core judges them."""
    return [
        (TopicPartition(p.topic, p.partition),
         AlterPartitionRequest(request.broker_id, p.leader_epoch, p.partition_epoch,
                               tuple(IsrMember(m.broker_id, m.broker_epoch) for m in p.new_isr_with_epochs)))
        for p in request.partitions
    ]


def alter_partition_results(
    outcomes: Iterable[ProposalOutcome], refusal: Outcome | None = None
) -> controller_pb2.AlterPartitionResponse:
    """One result per proposal, each with the partition's state, or a refusal of the whole request."""
    if refusal is not None:
        return controller_pb2.AlterPartitionResponse(error_code=int(refusal.error), error_message=refusal.message)
    return controller_pb2.AlterPartitionResponse(error_code=int(ErrorCode.NONE),
                                                 partitions=[_alter_partition_result(o) for o in outcomes])


def _alter_partition_result(outcome: ProposalOutcome) -> controller_pb2.AlterPartitionResult:
    result = controller_pb2.AlterPartitionResult(
        topic=outcome.partition.topic, partition=outcome.partition.partition, error_code=int(outcome.error),
        error_message=outcome.message, leader=-1, leader_epoch=-1, partition_epoch=-1,
    )
    if outcome.state is not None:
        result.leader = outcome.state.leader
        result.leader_epoch = outcome.state.leader_epoch
        result.isr.extend(outcome.state.isr)
        result.partition_epoch = outcome.state.partition_epoch
    return result


def alter_partition_response(result: controller_pb2.AlterPartitionResult) -> AlterPartitionResponse:
    """One partition's answer as the leader's core takes it: the state only when the proposal was applied."""
    error = ErrorCode.of(result.error_code)
    if error != ErrorCode.NONE:
        return AlterPartitionResponse(error)
    return AlterPartitionResponse(
        ErrorCode.NONE,
        PartitionState(leader=result.leader, leader_epoch=result.leader_epoch, isr=tuple(result.isr),
                       partition_epoch=result.partition_epoch, replicas=()),
    )


# -- reassignments ----------------------------------------------------------------------------------


def reassignment_targets(
    request: controller_pb2.AlterPartitionReassignmentsRequest,
) -> list[tuple[TopicPartition, tuple[int, ...]]]:
    """Each partition's target replicas; empty cancels."""
    return [(TopicPartition(p.topic, p.partition), tuple(p.replicas)) for p in request.partitions]


def alter_reassignments_response(
    outcomes: Iterable[tuple[TopicPartition, Outcome]], refusal: Outcome | None = None
) -> controller_pb2.AlterPartitionReassignmentsResponse:
    if refusal is not None:
        return controller_pb2.AlterPartitionReassignmentsResponse(error_code=int(refusal.error),
                                                                  error_message=refusal.message)
    return controller_pb2.AlterPartitionReassignmentsResponse(error_code=int(ErrorCode.NONE),
                                                              results=partition_results(outcomes))


def list_reassignments_response(
    ongoing: Iterable[OngoingReassignment], refusal: Outcome | None = None
) -> controller_pb2.ListPartitionReassignmentsResponse:
    if refusal is not None:
        return controller_pb2.ListPartitionReassignmentsResponse(error_code=int(refusal.error),
                                                                 error_message=refusal.message)
    return controller_pb2.ListPartitionReassignmentsResponse(error_code=int(ErrorCode.NONE), reassignments=[
        controller_pb2.OngoingPartitionReassignment(topic=o.partition.topic, partition=o.partition.partition,
                                                    replicas=o.replicas, adding_replicas=o.adding,
                                                    removing_replicas=o.removing)
        for o in ongoing])
