"""ControllerService over gRPC: decode, ask the controller, encode (`replog.rpc.controller_convert`)."""

from __future__ import annotations

from typing import NoReturn

import grpc

from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.controller.driver import Controller
from replog.controller.events import ControllerBusy
from replog.core.errors import ErrorCode
from replog.core.outcome import Outcome
from replog.rpc import controller_convert as convert
from replog.rpc import status


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    async def CreateTopics(
        self, request: controller_pb2.CreateTopicsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.CreateTopicsResponse:
        try:
            outcomes = await self._controller.topics.create_topics(convert.new_topics(request),
                                                                   validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.create_topics_response(outcomes)

    async def DeleteTopics(
        self, request: controller_pb2.DeleteTopicsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.DeleteTopicsResponse:
        names = list(request.topic_names)
        try:
            outcomes = await self._controller.topics.delete_topics(names, timeout_ms=max(0, request.timeout_ms))
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.delete_topics_response(names, outcomes)

    async def CreatePartitions(
        self, request: controller_pb2.CreatePartitionsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.CreatePartitionsResponse:
        topics = convert.new_partitions(request)
        try:
            outcomes = await self._controller.topics.create_partitions(topics, validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.create_partitions_response(topics, outcomes)

    async def DescribeConfigs(
        self, request: controller_pb2.DescribeConfigsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.DescribeConfigsResponse:
        try:
            described = await self._controller.configs.describe(convert.configs_to_describe(request))
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.describe_configs_response(described)

    async def AlterConfigs(
        self, request: controller_pb2.AlterConfigsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterConfigsResponse:
        try:
            changes = convert.config_changes(request)
        except convert.MalformedRequest as error:
            await status.abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(error), ErrorCode.INVALID_REQUEST)
        try:
            outcomes = await self._controller.configs.alter(changes, validate_only=request.validate_only)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.alter_configs_response(request, outcomes)

    async def ElectLeaders(
        self, request: controller_pb2.ElectLeadersRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ElectLeadersResponse:
        if request.election_type not in (controller_pb2.ELECTION_TYPE_PREFERRED, controller_pb2.ELECTION_TYPE_UNCLEAN):
            return convert.elect_leaders_response((), _invalid("give the election type: preferred or unclean"))
        partitions = convert.partitions(request.topic_partitions)
        if request.all_partitions == bool(partitions):
            return convert.elect_leaders_response(
                (), _invalid("name the partitions, or ask for all of them, but not both"))
        try:
            refusal, outcomes = await self._controller.leadership.elect_leaders(
                None if request.all_partitions else partitions,
                unclean=request.election_type == controller_pb2.ELECTION_TYPE_UNCLEAN)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.elect_leaders_response(outcomes, refusal)

    async def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        try:
            refusal, outcomes = await self._controller.isr_changes.alter_partition(
                request.broker_id, request.broker_epoch, convert.isr_proposals(request))
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.alter_partition_results(outcomes, refusal)

    async def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        try:
            refusal, remaining = await self._controller.leadership.controlled_shutdown(
                request.broker_id, request.broker_epoch)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.controlled_shutdown_response(remaining, refusal)

    async def AlterPartitionReassignments(
        self, request: controller_pb2.AlterPartitionReassignmentsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.AlterPartitionReassignmentsResponse:
        try:
            refusal, outcomes = await self._controller.reassignments.alter(convert.reassignment_targets(request))
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.alter_reassignments_response(outcomes, refusal)

    async def ListPartitionReassignments(
        self, request: controller_pb2.ListPartitionReassignmentsRequest, context: grpc.aio.ServicerContext
    ) -> controller_pb2.ListPartitionReassignmentsResponse:
        partitions = convert.partitions(request.topic_partitions)
        try:
            refusal, ongoing = await self._controller.reassignments.list(partitions or None)
        except ControllerBusy as error:
            await _busy(context, error)
        return convert.list_reassignments_response(ongoing, refusal)


async def _busy(context: grpc.aio.ServicerContext, error: ControllerBusy) -> NoReturn:
    # Kafka's controller answers REQUEST_TIMED_OUT for an event it could not queue in time.
    await status.abort(context, grpc.StatusCode.UNAVAILABLE, f"the controller is busy ({error}); retry later",
                       ErrorCode.REQUEST_TIMED_OUT)


def _invalid(message: str) -> Outcome:
    return Outcome(ErrorCode.INVALID_REQUEST, message)
