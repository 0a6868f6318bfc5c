"""ControllerService over gRPC: decode, ask the controller, encode."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import grpc

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.controller.configs import ConfigSource, DescribedConfigs, Resource, ResourceType
from replog.controller.driver import Controller
from replog.controller.events import ControllerBusy
from replog.controller.reassignment import OngoingReassignment
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import ProposalOutcome
from replog.core.outcome import Outcome
from replog.core.topic_configs import ConfigChange, ConfigOp
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewPartitions, NewTopic, TopicOutcome
from replog.rpc import controller_convert

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


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    async def CreateTopics(
        self, request: controller_pb2.CreateTopicsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.CreateTopicsResponse:
        topics = [
            NewTopic(
                name=topic.name,
                num_partitions=topic.num_partitions,
                replication_factor=topic.replication_factor,
                assignments=tuple((a.partition, tuple(a.broker_ids)) for a in topic.assignments),
                configs=dict(topic.configs),
            )
            for topic in request.topics
        ]
        try:
            outcomes = await self._controller.topics.create_topics(topics, validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return controller_pb2.CreateTopicsResponse(topics=[_topic_result(o) for o in outcomes])

    async def DeleteTopics(
        self, request: controller_pb2.DeleteTopicsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.DeleteTopicsResponse:
        names = list(request.topic_names)
        try:
            outcomes = await self._controller.topics.delete_topics(names, timeout_ms=max(0, request.timeout_ms))
        except ControllerBusy as error:
            await _busy(context, error)
        return controller_pb2.DeleteTopicsResponse(topics=[
            controller_pb2.DeletableTopicResult(name=name, error_code=int(o.error), error_message=o.message)
            for name, o in zip(names, outcomes)])

    async def CreatePartitions(
        self, request: controller_pb2.CreatePartitionsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.CreatePartitionsResponse:
        topics = [NewPartitions(t.name, t.count, tuple((a.partition, tuple(a.broker_ids)) for a in t.assignments))
                  for t in request.topics]
        try:
            outcomes = await self._controller.topics.create_partitions(topics, validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return controller_pb2.CreatePartitionsResponse(topics=[
            controller_pb2.CreatePartitionsTopicResult(name=t.name, error_code=int(o.error), error_message=o.message)
            for t, o in zip(topics, outcomes)])

    async def DescribeConfigs(
        self, request: controller_pb2.DescribeConfigsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.DescribeConfigsResponse:
        requests = [(_resource(r.resource_type, r.resource_name), list(r.config_names)) for r in request.resources]
        try:
            described = await self._controller.configs.describe(requests)
        except ControllerBusy as error:
            await _busy(context, error)
        return controller_pb2.DescribeConfigsResponse(results=[_described(d) for d in described])

    async def AlterConfigs(
        self, request: controller_pb2.AlterConfigsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterConfigsResponse:
        requests = []
        for resource in request.resources:
            changes = []
            for config in resource.configs:
                op = _CONFIG_OPS.get(config.op)
                if op is None:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                        f"config {config.name!r} has no op: set SET, DELETE, APPEND or SUBTRACT")
                changes.append(ConfigChange(config.name, op, config.value if config.HasField("value") else None))
            requests.append((_resource(resource.resource_type, resource.resource_name), changes))
        try:
            outcomes = await self._controller.configs.alter(requests, validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return controller_pb2.AlterConfigsResponse(results=[
            controller_pb2.AlterConfigsResult(
                error_code=int(o.error), error_message=o.message, resource_type=r.resource_type,
                resource_name=r.resource_name)
            for r, o in zip(request.resources, outcomes)])

    async def ElectLeaders(
        self, request: controller_pb2.ElectLeadersRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ElectLeadersResponse:
        if request.election_type not in (controller_pb2.ELECTION_TYPE_PREFERRED, controller_pb2.ELECTION_TYPE_UNCLEAN):
            return _elect_refused("give the election type: preferred or unclean")
        partitions = _partitions(request.topic_partitions)
        if request.all_partitions == bool(partitions):
            return _elect_refused("name the partitions, or ask for all of them, but not both")
        try:
            rejection, outcomes = await self._controller.leadership.elect_leaders(
                None if request.all_partitions else partitions,
                unclean=request.election_type == controller_pb2.ELECTION_TYPE_UNCLEAN)
        except ControllerBusy as error:
            await _busy(context, error)
        if rejection is not None:
            return _elect_refused(rejection.message, rejection.error)
        return controller_pb2.ElectLeadersResponse(
            error_code=int(ErrorCode.NONE),
            results=[_partition_outcome(o.partition, o.outcome) for o in outcomes])

    async def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        try:
            rejection, outcomes = await self._controller.isr_changes.alter_partition(
                request.broker_id, request.broker_epoch, controller_convert.isr_proposals(request))
        except ControllerBusy as error:
            await _busy(context, error)
        if rejection is not None:
            return controller_pb2.AlterPartitionResponse(error_code=int(rejection.error),
                                                         error_message=rejection.message)
        return controller_pb2.AlterPartitionResponse(
            error_code=int(ErrorCode.NONE), partitions=[_alter_partition_result(o) for o in outcomes])

    async def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        try:
            rejection, remaining = await self._controller.leadership.controlled_shutdown(
                request.broker_id, request.broker_epoch)
        except ControllerBusy as error:
            await _busy(context, error)
        if rejection is not None:
            return controller_pb2.ControlledShutdownResponse(error_code=int(rejection.error),
                                                             error_message=rejection.message)
        return controller_pb2.ControlledShutdownResponse(
            error_code=int(ErrorCode.NONE),
            remaining_partitions=[common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition)
                                  for tp in remaining])

    async def AlterPartitionReassignments(
        self, request: controller_pb2.AlterPartitionReassignmentsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionReassignmentsResponse:
        requests = [(TopicPartition(p.topic, p.partition), tuple(p.replicas)) for p in request.partitions]
        try:
            rejection, outcomes = await self._controller.reassignments.alter(requests)
        except ControllerBusy as error:
            await _busy(context, error)
        if rejection is not None:
            return controller_pb2.AlterPartitionReassignmentsResponse(error_code=int(rejection.error),
                                                                      error_message=rejection.message)
        return controller_pb2.AlterPartitionReassignmentsResponse(
            error_code=int(ErrorCode.NONE), results=[_partition_outcome(p, o) for p, o in outcomes])

    async def ListPartitionReassignments(
        self, request: controller_pb2.ListPartitionReassignmentsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ListPartitionReassignmentsResponse:
        partitions = _partitions(request.topic_partitions)
        try:
            rejection, ongoing = await self._controller.reassignments.list(partitions or None)
        except ControllerBusy as error:
            await _busy(context, error)
        if rejection is not None:
            return controller_pb2.ListPartitionReassignmentsResponse(error_code=int(rejection.error),
                                                                     error_message=rejection.message)
        return controller_pb2.ListPartitionReassignmentsResponse(
            error_code=int(ErrorCode.NONE), reassignments=[_ongoing(o) for o in ongoing])


async def _busy(context: grpc.aio.ServicerContext, error: ControllerBusy) -> NoReturn:
    await context.abort(grpc.StatusCode.UNAVAILABLE, f"the controller is busy ({error}); retry later")
    raise AssertionError("abort returns only by raising")


def _resource(resource_type: int, name: str) -> Resource:
    return Resource(_RESOURCE_TYPES.get(resource_type), name)


def _partitions(topics: Iterable[common_pb2.TopicPartitions]) -> list[TopicPartition]:
    return [TopicPartition(t.topic, p) for t in topics for p in t.partitions]


def _elect_refused(message: str, error: ErrorCode = ErrorCode.INVALID_REQUEST) -> controller_pb2.ElectLeadersResponse:
    return controller_pb2.ElectLeadersResponse(error_code=int(error), error_message=message)


def _partition_outcome(partition: TopicPartition, outcome: Outcome) -> common_pb2.PartitionResult:
    return common_pb2.PartitionResult(topic=partition.topic, partition=partition.partition,
                                      error_code=int(outcome.error), error_message=outcome.message)


def _topic_result(outcome: TopicOutcome) -> controller_pb2.CreatableTopicResult:
    return controller_pb2.CreatableTopicResult(
        name=outcome.name, topic_id=outcome.topic_id, error_code=int(outcome.error),
        error_message=outcome.message, num_partitions=outcome.num_partitions,
        replication_factor=outcome.replication_factor,
    )


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


def _ongoing(ongoing: OngoingReassignment) -> controller_pb2.OngoingPartitionReassignment:
    return controller_pb2.OngoingPartitionReassignment(
        topic=ongoing.partition.topic, partition=ongoing.partition.partition, replicas=ongoing.replicas,
        adding_replicas=ongoing.adding, removing_replicas=ongoing.removing)


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
