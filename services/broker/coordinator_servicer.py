"""CoordinatorService: decode, run on the group's coordinator, encode.

FindCoordinator is answered by any broker from what it knows of the cluster;
the first one asked creates `__consumer_offsets` through the active controller
(offsets.topic.num.partitions partitions, offsets.topic.replication.factor
replicas capped by the live brokers, compacted). Every other group RPC runs on
the shard of the `__consumer_offsets` partition the group hashes to, here or
nowhere (NOT_COORDINATOR). InitProducerId without a transactional id is
answered by any broker, from the producer id blocks it reserves in ZooKeeper.
Transactions are not served yet: InitProducerId with a transactional id, and
their other RPCs, answer UNIMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import grpc

from replog.api.coordinator.v1 import coordinator_pb2, coordinator_pb2_grpc
from replog.broker import metrics
from replog.broker.controller_channel import ControllerChannel
from replog.broker.group_coordinator import CoordinatorError, GroupCoordinators
from replog.broker.metadata_cache import MetadataCache
from replog.broker.partitions import now_ms
from replog.broker.producer_ids import ProducerIdManager
from replog.broker.replicas import wall_ms
from replog.core.errors import ErrorCode
from replog.core.group.placement import OFFSETS_TOPIC, partition_for
from replog.core.group.requests import PartitionError
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewTopic
from replog.rpc import coordinator_convert as convert
from replog.rpc import status

log = logging.getLogger("replog.broker")

OFFSETS_SEGMENT_BYTES = 100 * 1024 * 1024  # offsets.topic.segment.bytes: small segments compact sooner


@dataclass(frozen=True)
class OffsetsTopicSettings:
    partitions: int = 50  # offsets.topic.num.partitions
    replication_factor: int = 3  # offsets.topic.replication.factor


class CoordinatorServicer(coordinator_pb2_grpc.CoordinatorServiceServicer):
    def __init__(self, coordinators: GroupCoordinators, metadata: MetadataCache, controller: ControllerChannel,
                 offsets_topic: OffsetsTopicSettings, producer_ids: ProducerIdManager) -> None:
        self._coordinators = coordinators
        self._producer_ids = producer_ids
        self._metadata = metadata
        self._controller = controller
        self._offsets_topic = offsets_topic
        self._creating: asyncio.Task[None] | None = None

    # -- FindCoordinator ------------------------------------------------------------------------

    async def FindCoordinator(self, request: coordinator_pb2.FindCoordinatorRequest,
                              context: grpc.aio.ServicerContext) -> coordinator_pb2.FindCoordinatorResponse:
        response = coordinator_pb2.FindCoordinatorResponse()
        for key in request.keys:
            response.coordinators.append(self._find(key, request.key_type))
        return response

    def _find(self, key: str, key_type: int) -> coordinator_pb2.Coordinator:
        if key_type != coordinator_pb2.COORDINATOR_TYPE_GROUP:
            return convert.coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       "transaction coordinators are not served yet")
        if not key:
            return convert.coordinator(key, ErrorCode.INVALID_GROUP_ID, "the group id must not be empty")
        count = self._metadata.partition_counts.get(OFFSETS_TOPIC, 0)
        if not count:
            self._create_offsets_topic()
            return convert.coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       f"{OFFSETS_TOPIC} is being created; retry")
        leader = self._metadata.leader_of(TopicPartition(OFFSETS_TOPIC, partition_for(key, count)))
        if leader is None:
            return convert.coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       f"partition {partition_for(key, count)} of {OFFSETS_TOPIC} has no leader now; "
                                       "retry")
        return convert.coordinator(key, ErrorCode.NONE, endpoint=leader)

    def _create_offsets_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self._create())

    async def _create(self) -> None:
        live = max(len(self._metadata.brokers), 1)
        factor = min(self._offsets_topic.replication_factor, live)
        configs = {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_SEGMENT_BYTES),
                   "min.insync.replicas": "2" if factor >= 3 else "1"}
        outcome = await self._controller.create_topic(
            NewTopic(OFFSETS_TOPIC, self._offsets_topic.partitions, factor, configs=configs))
        if outcome.error == ErrorCode.NONE:
            log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC,
                     self._offsets_topic.partitions, factor)
        elif outcome.error != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("could not create %s: %s %s", OFFSETS_TOPIC, outcome.error.name, outcome.message)

    # -- membership -----------------------------------------------------------------------------

    async def ConsumerGroupHeartbeat(
        self, request: coordinator_pb2.ConsumerGroupHeartbeatRequest, context: grpc.aio.ServicerContext
    ) -> coordinator_pb2.ConsumerGroupHeartbeatResponse:
        heartbeat = convert.heartbeat_request_of(request, _client_host(context))
        try:
            response = await self._coordinators.run(
                request.group_id,
                lambda shard: shard.heartbeat(heartbeat, self._metadata.partition_counts, now_ms(), wall_ms()))
        except CoordinatorError as error:
            return convert.heartbeat_refused(request, error.error, error.message)
        return convert.heartbeat_response(response)

    # -- offsets ----------------------------------------------------------------------------------

    async def OffsetCommit(self, request: coordinator_pb2.OffsetCommitRequest,
                           context: grpc.aio.ServicerContext) -> coordinator_pb2.OffsetCommitResponse:
        started = time.monotonic()
        commit = convert.commit_request_of(request)
        try:
            outcomes = await self._coordinators.run(
                request.group_id,
                lambda shard: shard.commit_offsets(commit, self._metadata.partition_counts, wall_ms()))
        except CoordinatorError as error:
            return convert.commit_response({tp: _refusal(error) for tp in commit.offsets})
        metrics.GROUP_COMMIT_SECONDS.observe(time.monotonic() - started)
        return convert.commit_response(outcomes)

    async def OffsetFetch(self, request: coordinator_pb2.OffsetFetchRequest,
                          context: grpc.aio.ServicerContext) -> coordinator_pb2.OffsetFetchResponse:
        wanted = convert.keys_of(request.topics) or None
        try:
            offsets = self._coordinators.read(request.group_id, lambda shard: shard.fetch_offsets(request.group_id,
                                                                                                  wanted))
        except CoordinatorError as error:
            return coordinator_pb2.OffsetFetchResponse(error_code=int(error.error), error_message=error.message)
        return convert.fetch_offsets_response(offsets)

    async def OffsetDelete(self, request: coordinator_pb2.OffsetDeleteRequest,
                           context: grpc.aio.ServicerContext) -> coordinator_pb2.OffsetDeleteResponse:
        partitions = convert.keys_of(request.topics)
        try:
            whole, outcomes = await self._coordinators.run(
                request.group_id, lambda shard: shard.delete_offsets(request.group_id, partitions))
        except CoordinatorError as error:
            return coordinator_pb2.OffsetDeleteResponse(error_code=int(error.error), error_message=error.message)
        return convert.offset_delete_response(whole, outcomes)

    # -- groups -----------------------------------------------------------------------------------

    async def InitProducerId(self, request: coordinator_pb2.InitProducerIdRequest,
                             context: grpc.aio.ServicerContext) -> coordinator_pb2.InitProducerIdResponse:
        if request.HasField("transactional_id"):
            await status.abort(context, grpc.StatusCode.UNIMPLEMENTED,
                               "transactional producers are not served yet: leave transactional_id unset",
                               ErrorCode.INVALID_REQUEST)
        try:
            producer_id = await self._producer_ids.next_id()
        except Exception as error:  # ZooKeeper unreachable or the ids used up: the client retries elsewhere
            log.warning("no producer id to hand out: %s", error)
            return coordinator_pb2.InitProducerIdResponse(
                error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), error_message=f"no producer id available: {error}",
                producer_id=-1, producer_epoch=-1)
        log.info("producer id %d handed out (epoch 0)", producer_id)
        return coordinator_pb2.InitProducerIdResponse(error_code=int(ErrorCode.NONE), producer_id=producer_id,
                                                      producer_epoch=0)

    async def ListGroups(self, request: coordinator_pb2.ListGroupsRequest,
                         context: grpc.aio.ServicerContext) -> coordinator_pb2.ListGroupsResponse:
        states = list(request.states_filter)
        if loading := self._coordinators.loading():
            return coordinator_pb2.ListGroupsResponse(
                error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                error_message=f"{OFFSETS_TOPIC} partitions {loading} are still loading; retry")
        listed = [group for shard in self._coordinators.all_shards() for group in shard.list_groups(states)]
        return coordinator_pb2.ListGroupsResponse(error_code=int(ErrorCode.NONE),
                                                  groups=convert.listed_groups(listed))

    async def DescribeGroups(self, request: coordinator_pb2.DescribeGroupsRequest,
                             context: grpc.aio.ServicerContext) -> coordinator_pb2.DescribeGroupsResponse:
        response = coordinator_pb2.DescribeGroupsResponse()
        for group_id in request.group_ids:
            try:
                described = self._coordinators.read(group_id, lambda shard, g=group_id: shard.describe_group(g))
            except CoordinatorError as error:
                response.groups.append(convert.described_refusal(group_id, error.error, error.message))
                continue
            response.groups.append(convert.described_group(described))
        return response

    async def DeleteGroups(self, request: coordinator_pb2.DeleteGroupsRequest,
                           context: grpc.aio.ServicerContext) -> coordinator_pb2.DeleteGroupsResponse:
        response = coordinator_pb2.DeleteGroupsResponse()
        for group_id in request.group_ids:
            try:
                outcomes = await self._coordinators.run(group_id, lambda shard, g=group_id: shard.delete_groups([g]))
                error, message = outcomes[group_id]
            except CoordinatorError as refusal:
                error, message = refusal.error, refusal.message
            response.results.append(convert.deleted_group(group_id, error, message))
        return response


def _refusal(error: CoordinatorError) -> PartitionError:
    return PartitionError(error.error, error.message)


def _client_host(context: grpc.aio.ServicerContext | None) -> str:
    """The client's address as gRPC saw it ("ipv4:127.0.0.1:5000" -> "127.0.0.1")."""
    peer = context.peer() if context is not None else ""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return rest.rsplit(":", 1)[0].strip("[]").replace("%5B", "").replace("%5D", "")
    return rest.rsplit(":", 1)[0] if rest else peer

