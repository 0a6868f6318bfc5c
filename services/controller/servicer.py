"""ControllerService over gRPC: decode, ask the controller, encode. RPCs not listed here
answer UNIMPLEMENTED (the generated base class)."""

from __future__ import annotations

import grpc

from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.controller.decisions import IsrProposal, NewTopic
from replog.controller.driver import Controller, ProposalOutcome, TopicOutcome
from replog.controller.events import ControllerBusy
from replog.core.errors import ErrorCode
from replog.zk.records import TopicPartition


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
            outcomes = await self._controller.create_topics(topics, validate_only=request.validate_only)
        except ControllerBusy as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the controller is busy ({error}); retry later")
        return controller_pb2.CreateTopicsResponse(topics=[_topic_result(o) for o in outcomes])

    async def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        proposals = [
            (TopicPartition(p.topic, p.partition),
             IsrProposal(request.broker_id, p.leader_epoch, p.partition_epoch, tuple(p.new_isr)))
            for p in request.partitions
        ]
        try:
            rejection, outcomes = await self._controller.alter_partition(
                request.broker_id, request.broker_epoch, proposals)
        except ControllerBusy as error:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the controller is busy ({error}); retry later")
        if rejection is not None:
            return controller_pb2.AlterPartitionResponse(error_code=int(rejection.error),
                                                         error_message=rejection.message)
        return controller_pb2.AlterPartitionResponse(
            error_code=int(ErrorCode.NONE), partitions=[_partition_result(o) for o in outcomes])


def _topic_result(outcome: TopicOutcome) -> controller_pb2.CreatableTopicResult:
    return controller_pb2.CreatableTopicResult(
        name=outcome.name, topic_id=outcome.topic_id, error_code=int(outcome.error),
        error_message=outcome.message, num_partitions=outcome.num_partitions,
        replication_factor=outcome.replication_factor,
    )


def _partition_result(outcome: ProposalOutcome) -> controller_pb2.AlterPartitionResult:
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
