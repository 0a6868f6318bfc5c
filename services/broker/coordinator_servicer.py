"""CoordinatorService: decode, run on the group's or the transactional id's coordinator, encode.

FindCoordinator is answered by any broker from what it knows of the cluster;
the first one asked about a group creates `__consumer_offsets`, the first one
asked about a transactional id `__transaction_state`, through the active
controller (each with its *.num.partitions partitions, its replication factor
capped by the live brokers, compacted). Every other group RPC runs on the shard
of the `__consumer_offsets` partition the group hashes to, every transaction
RPC on the shard of the id's `__transaction_state` partition, here or nowhere
(NOT_COORDINATOR). InitProducerId without a transactional id is answered by
any broker, from the producer id blocks it reserves in ZooKeeper; with one, by
the id's transaction coordinator, from the same blocks.
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
from replog.broker.coordinator_shards import CoordinatorError
from replog.broker.group_coordinator import GroupCoordinators
from replog.broker.metadata_cache import MetadataCache
from replog.broker.partitions import now_ms
from replog.broker.producer_ids import ProducerIdManager
from replog.broker.replicas import wall_ms
from replog.broker.txn_coordinator import TransactionCoordinators
from replog.core.errors import ErrorCode
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.group.requests import PartitionError
from replog.core.key_placement import partition_for
from replog.core.topic_partition import TopicPartition
from replog.core.topic_plan import NewTopic
from replog.core.txn.requests import AddPartitionsResponse, Answer, DescribedTransaction, ProducerIdAndEpoch
from replog.rpc import coordinator_convert as convert
from replog.rpc import txn_convert

log = logging.getLogger("replog.broker")

SEGMENT_BYTES = 100 * 1024 * 1024  # offsets.topic.segment.bytes: small segments compact sooner


@dataclass(frozen=True)
class InternalTopicSettings:
    """How a coordinator's internal topic is created on first use."""

    name: str = OFFSETS_TOPIC
    partitions: int = 50  # offsets.topic.num.partitions, transaction.state.log.num.partitions
    replication_factor: int = 3  # offsets.topic.replication.factor, transaction.state.log.replication.factor
    min_insync_replicas: int = 2  # transaction.state.log.min.isr
    segment_bytes: int = SEGMENT_BYTES

    def new_topic(self, live_brokers: int) -> NewTopic:
        """The topic to create: the replication factor capped by the live brokers, and min.insync.replicas
        below it, so that losing one replica leaves the coordinator able to write."""
        factor = min(self.replication_factor, max(live_brokers, 1))
        min_isr = max(1, min(self.min_insync_replicas, factor - 1))
        return NewTopic(self.name, self.partitions, factor, configs={
            "cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes),
            "min.insync.replicas": str(min_isr)})


class CoordinatorServicer(coordinator_pb2_grpc.CoordinatorServiceServicer):
    def __init__(self, coordinators: GroupCoordinators, metadata: MetadataCache, controller: ControllerChannel,
                 producer_ids: ProducerIdManager, transactions: TransactionCoordinators,
                 offsets_topic: InternalTopicSettings, transaction_topic: InternalTopicSettings, *,
                 transaction_version: int = 2) -> None:
        """`transaction_version`: the transaction protocol this broker tells producers (transaction.version)."""
        self._coordinators = coordinators
        self._transaction_version = transaction_version
        self._transactions = transactions
        self._producer_ids = producer_ids
        self._metadata = metadata
        self._controller = controller
        self._internal_topics = {coordinator_pb2.COORDINATOR_TYPE_GROUP: offsets_topic,
                                 coordinator_pb2.COORDINATOR_TYPE_TRANSACTION: transaction_topic}
        self._creating: dict[str, asyncio.Task[None]] = {}

    # -- FindCoordinator ------------------------------------------------------------------------

    async def FindCoordinator(self, request: coordinator_pb2.FindCoordinatorRequest,
                              context: grpc.aio.ServicerContext) -> coordinator_pb2.FindCoordinatorResponse:
        response = coordinator_pb2.FindCoordinatorResponse()
        for key in request.keys:
            response.coordinators.append(self._find(key, request.key_type))
        return response

    def _find(self, key: str, key_type: int) -> coordinator_pb2.Coordinator:
        topic = self._internal_topics.get(key_type)
        if topic is None:
            return convert.coordinator(key, ErrorCode.INVALID_REQUEST,
                                       "key_type must be COORDINATOR_TYPE_GROUP or COORDINATOR_TYPE_TRANSACTION")
        if not key:
            if key_type == coordinator_pb2.COORDINATOR_TYPE_GROUP:
                return convert.coordinator(key, ErrorCode.INVALID_GROUP_ID, "the group id must not be empty")
            return convert.coordinator(key, ErrorCode.INVALID_REQUEST, "the transactional id must not be empty")
        count = self._metadata.partition_counts.get(topic.name, 0)
        if not count:
            self._create_internal_topic(topic)
            return convert.coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       f"{topic.name} is being created; retry")
        partition = partition_for(key, count)
        leader = self._metadata.leader_of(TopicPartition(topic.name, partition))
        if leader is None:
            return convert.coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       f"partition {partition} of {topic.name} has no leader now; retry")
        return convert.coordinator(key, ErrorCode.NONE, endpoint=leader)

    def _create_internal_topic(self, topic: InternalTopicSettings) -> None:
        creating = self._creating.get(topic.name)
        if creating is None or creating.done():
            self._creating[topic.name] = asyncio.get_running_loop().create_task(self._create(topic))

    async def _create(self, topic: InternalTopicSettings) -> None:
        new_topic = topic.new_topic(len(self._metadata.brokers))
        outcome = await self._controller.create_topic(new_topic)
        if outcome.error == ErrorCode.NONE:
            log.info("created %s: %d partitions, replication factor %d, min.insync.replicas %s", topic.name,
                     new_topic.num_partitions, new_topic.replication_factor, new_topic.configs["min.insync.replicas"])
        elif outcome.error != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.warning("could not create %s: %s %s", topic.name, outcome.error.name, outcome.message)

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
            offsets = self._coordinators.read(
                request.group_id, lambda shard: shard.fetch_offsets(request.group_id, wanted, request.require_stable))
        except CoordinatorError as error:
            return coordinator_pb2.OffsetFetchResponse(error_code=int(error.error), error_message=error.message)
        return convert.fetch_offsets_response(offsets)

    async def TxnOffsetCommit(self, request: coordinator_pb2.TxnOffsetCommitRequest,
                              context: grpc.aio.ServicerContext) -> coordinator_pb2.TxnOffsetCommitResponse:
        commit = convert.txn_commit_request_of(request)
        try:
            outcomes = await self._coordinators.commit_transactional(commit, self._metadata.partition_counts)
        except CoordinatorError as error:
            outcomes = {tp: _refusal(error) for tp in commit.offsets}
        return convert.commit_response(outcomes, coordinator_pb2.TxnOffsetCommitResponse)

    async def OffsetDelete(self, request: coordinator_pb2.OffsetDeleteRequest,
                           context: grpc.aio.ServicerContext) -> coordinator_pb2.OffsetDeleteResponse:
        partitions = convert.keys_of(request.topics)
        try:
            whole, outcomes = await self._coordinators.run(
                request.group_id, lambda shard: shard.delete_offsets(request.group_id, partitions))
        except CoordinatorError as error:
            return coordinator_pb2.OffsetDeleteResponse(error_code=int(error.error), error_message=error.message)
        return convert.offset_delete_response(whole, outcomes)

    # -- producer ids ---------------------------------------------------------------------------

    async def InitProducerId(self, request: coordinator_pb2.InitProducerIdRequest,
                             context: grpc.aio.ServicerContext) -> coordinator_pb2.InitProducerIdResponse:
        if request.HasField("transactional_id"):
            return await self._init_transactional_producer(request)
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

    # -- transactions -------------------------------------------------------------------------------

    async def _init_transactional_producer(
            self, request: coordinator_pb2.InitProducerIdRequest) -> coordinator_pb2.InitProducerIdResponse:
        asked = txn_convert.init_producer_id_request_of(request)
        answer = await self._with_producer_ids(asked.transactional_id,
                                               lambda core: core.init_producer_id(asked, wall_ms()))
        return txn_convert.init_producer_id_response(answer, self._transaction_version)

    async def _with_producer_ids(self, transactional_id: str, operation) -> ProducerIdAndEpoch:
        """InitProducerId and EndTxn: the core takes a producer id synchronously when it needs a new one (a new
        transactional id, an exhausted epoch), so a block is at hand first."""
        try:
            await self._producer_ids.ensure_available()
        except Exception as error:  # ZooKeeper unreachable or the ids used up: the client retries
            log.warning("no producer id to hand out: %s", error)
            return ProducerIdAndEpoch(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no producer id available: {error}")
        try:
            return await self._transactions.run(transactional_id, operation)
        except CoordinatorError as error:
            return ProducerIdAndEpoch(error.error, error.message)

    async def AddPartitionsToTxn(self, request: coordinator_pb2.AddPartitionsToTxnRequest,
                                 context: grpc.aio.ServicerContext) -> coordinator_pb2.AddPartitionsToTxnResponse:
        asked = txn_convert.add_partitions_request_of(request)
        try:
            answer = await self._transactions.run(
                asked.transactional_id,
                lambda core: core.add_partitions(asked, self._metadata.partition_counts, wall_ms()))
        except CoordinatorError as error:
            answer = AddPartitionsResponse(error.error, error.message)
        return txn_convert.add_partitions_response(answer, asked.partitions)

    async def AddOffsetsToTxn(self, request: coordinator_pb2.AddOffsetsToTxnRequest,
                              context: grpc.aio.ServicerContext) -> coordinator_pb2.AddOffsetsToTxnResponse:
        asked = txn_convert.add_offsets_request_of(request)
        if not asked.group_id:
            return txn_convert.add_offsets_response(Answer(ErrorCode.INVALID_GROUP_ID,
                                                           "the group id must not be empty"))
        try:
            answer = await self._transactions.run(asked.transactional_id,
                                                  lambda core: core.add_offsets(asked, wall_ms()))
        except CoordinatorError as error:
            answer = Answer(error.error, error.message)
        return txn_convert.add_offsets_response(answer)

    async def EndTxn(self, request: coordinator_pb2.EndTxnRequest,
                     context: grpc.aio.ServicerContext) -> coordinator_pb2.EndTxnResponse:
        asked = txn_convert.end_txn_request_of(request)
        answer = await self._with_producer_ids(asked.transactional_id, lambda core: core.end_txn(asked, wall_ms()))
        return txn_convert.end_txn_response(answer, self._transaction_version)

    async def ListTransactions(self, request: coordinator_pb2.ListTransactionsRequest,
                               context: grpc.aio.ServicerContext) -> coordinator_pb2.ListTransactionsResponse:
        states, unknown = txn_convert.state_filters_of(request.state_filters)
        if unknown:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"no transaction state is named {', '.join(unknown)}; the states are Empty, Ongoing, "
                                "PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort")
        if self._transactions.loading():
            return coordinator_pb2.ListTransactionsResponse(error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        listed = [t for core in self._transactions.all_cores() for t in core.list_transactions(states)]
        return coordinator_pb2.ListTransactionsResponse(
            error_code=int(ErrorCode.NONE),
            transactions=txn_convert.listed_transactions(sorted(listed, key=lambda t: t.transactional_id)))

    async def DescribeTransactions(self, request: coordinator_pb2.DescribeTransactionsRequest,
                                   context: grpc.aio.ServicerContext) -> coordinator_pb2.DescribeTransactionsResponse:
        response = coordinator_pb2.DescribeTransactionsResponse()
        for transactional_id in request.transactional_ids:
            try:
                described = self._transactions.read(transactional_id, lambda core, t=transactional_id: core.describe(t))
            except CoordinatorError as error:
                described = DescribedTransaction(transactional_id, error.error, error.message)
            response.transactions.append(txn_convert.described_transaction(described))
        return response

    # -- groups -----------------------------------------------------------------------------------

    async def ListGroups(self, request: coordinator_pb2.ListGroupsRequest,
                         context: grpc.aio.ServicerContext) -> coordinator_pb2.ListGroupsResponse:
        states = list(request.states_filter)
        if loading := self._coordinators.loading():
            return coordinator_pb2.ListGroupsResponse(
                error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                error_message=f"{OFFSETS_TOPIC} partitions {loading} are still loading; retry")
        listed = [group for shard in self._coordinators.all_cores() for group in shard.list_groups(states)]
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

