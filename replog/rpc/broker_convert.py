"""BrokerService messages <-> core types: the one place where the broker's protobuf meets the core.

Decoding reads what a request asks into the core's values (a fetch position,
a partition state); encoding fills an answer's message in place, so that a
stream's message is filled without copying record bytes. The last region builds
the requests the active controller sends brokers (LeaderAndIsr, UpdateMetadata,
StopReplica, and the endpoints they carry) from the controller's records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from replog.api.broker.v1 import broker_pb2
from replog.api.common.v1 import common_pb2
from replog.core.epoch_cache import EpochEndOffset
from replog.core.errors import ErrorCode
from replog.core.fetch_session import PartitionFetch, SessionRequest
from replog.core.messages import (
    LATEST_TIMESTAMP,
    BrokerEndpoint,
    FetchPlan,
    FetchRequest,
    FetchResponse,
    ListedOffset,
    PartitionState,
)
from replog.core.producer_state import NO_PRODUCER_ID, ProducerAppend, last_sequence
from replog.core.records import BatchInfo
from replog.core.topic_partition import TopicPartition
from replog.core.txn.aborted import AbortedTxn
from replog.protocol.batch import decode_batch, read_header
from replog.protocol.control import decode_marker
from replog.protocol.header import BatchHeader
from replog.protocol.layout import HEADER_SIZE
from replog.zk.records import LeaderAndIsr

# -- a produce ----------------------------------------------------------------------------


def producer_append(headers: Sequence[BatchHeader], transaction_version: int = 0) -> ProducerAppend | str | None:
    """The idempotent producer's part of a partition's batches: None when no producer id is set, a
    sentence saying why not when the batches do not fit the rules (one batch per partition, as
    Kafka requires of an idempotent producer). A transactional batch of a Produce on transaction
    version 2 asks its leader to add the partition (`leader_add`, KIP-890 part 2)."""
    if any(h.is_control for h in headers):
        return "control batches are written by the transaction coordinator's markers, never by a producer"
    with_producer = [h for h in headers if h.producer_id != NO_PRODUCER_ID]
    if not with_producer:
        if any(h.is_transactional for h in headers):
            return "a transactional batch needs a producer id"
        return None
    if len(headers) != 1:
        return (f"an idempotent producer sends one batch per partition in a request, not {len(headers)} "
                f"({len(with_producer)} with a producer id)")
    header = headers[0]
    if header.producer_epoch < 0 or header.base_sequence < 0:
        # Refused here, before a transactional batch's verification asks its coordinator about it.
        return (f"producer {header.producer_id} sent epoch {header.producer_epoch} and sequence "
                f"{header.base_sequence}; neither may be negative")
    return ProducerAppend(header.producer_id, header.producer_epoch, header.base_sequence,
                          last_sequence(header.base_sequence, header.last_offset_delta + 1), header.is_transactional,
                          leader_add=header.is_transactional and transaction_version >= 2,
                          max_timestamp=header.max_timestamp)


# -- a produce's answer ----------------------------------------------------------------------


def fill_produce_partition(result: broker_pb2.ProducePartitionResponse, error: ErrorCode, message: str = "",
                           base_offset: int = -1) -> None:
    result.error_code = int(error)
    result.base_offset = base_offset if error == ErrorCode.NONE else -1
    if error != ErrorCode.NONE:
        result.error_message = message or error.name
        result.log_append_time_ms = -1


# -- a fetch, as the leader reads it ---------------------------------------------------------


def partition_fetch_of(asked: broker_pb2.FetchPartition, request_max_bytes: int = 0) -> PartitionFetch:
    return PartitionFetch(
        fetch_offset=asked.fetch_offset,
        current_leader_epoch=asked.current_leader_epoch,
        last_fetched_epoch=asked.last_fetched_epoch,
        log_start_offset=asked.log_start_offset,
        max_bytes=asked.partition_max_bytes or request_max_bytes,
    )


def named_partitions(request: broker_pb2.FetchRequest) -> dict[TopicPartition, PartitionFetch]:
    """The partitions a fetch names, with where it reads each."""
    return {TopicPartition(topic.topic, asked.partition): partition_fetch_of(asked, request.max_bytes)
            for topic in request.topics for asked in topic.partitions}


def forgotten_partitions(request: broker_pb2.FetchRequest) -> list[TopicPartition]:
    return [TopicPartition(topic.topic, partition)
            for topic in request.forgotten_topics for partition in topic.partitions]


def add_fetch_partition(
    topic_response: broker_pb2.FetchTopicResponse, partition: int, plan: FetchPlan, error: ErrorCode,
    error_message: str, records: bytes, aborted: Sequence[AbortedTxn] = (),
) -> None:
    """One partition of a fetch's answer."""
    result = topic_response.partitions.add(
        partition=partition, error_code=int(error), high_watermark=plan.high_watermark,
        last_stable_offset=plan.last_stable_offset, log_start_offset=plan.log_start_offset,
        preferred_read_replica=-1, error_message=error_message,
    )
    for entry in aborted:
        result.aborted_transactions.add(producer_id=entry.producer_id, first_offset=entry.first_offset)
    if plan.diverging_epoch is not None:
        result.diverging_epoch.epoch = plan.diverging_epoch.epoch
        result.diverging_epoch.end_offset = plan.diverging_epoch.end_offset
    if records:
        result.records = records


# -- a fetch, as the follower sends it and takes the answer ----------------------------------


def fill_follower_fetch(request: broker_pb2.FetchRequest, session: SessionRequest,
                        wanted: Mapping[TopicPartition, PartitionFetch]) -> None:
    """A follower's fetch in its session: the partitions to name, at their positions, and those to forget."""
    request.session_id = session.session_id
    request.session_epoch = session.session_epoch
    topics: dict[str, broker_pb2.FetchTopic] = {}
    for key in session.named:
        fetch_topic = topics.get(key.topic)
        if fetch_topic is None:
            fetch_topic = topics[key.topic] = request.topics.add(topic=key.topic)
        position = wanted[key]
        fetch_topic.partitions.add(
            partition=key.partition, current_leader_epoch=position.current_leader_epoch,
            fetch_offset=position.fetch_offset, last_fetched_epoch=position.last_fetched_epoch,
            log_start_offset=position.log_start_offset, partition_max_bytes=position.max_bytes,
        )
    forgotten: dict[str, list[int]] = {}
    for key in session.forgotten:
        forgotten.setdefault(key.topic, []).append(key.partition)
    for topic, indexes in forgotten.items():
        request.forgotten_topics.add(topic=topic, partitions=indexes)


def partition_fetch_from(request: FetchRequest) -> PartitionFetch:
    """Where a follower core's fetch reads, as its session holds it."""
    return PartitionFetch(fetch_offset=request.fetch_offset, current_leader_epoch=request.current_leader_epoch,
                          last_fetched_epoch=request.last_fetched_epoch, log_start_offset=request.log_start_offset,
                          max_bytes=request.max_bytes)


def fetch_response_of(result: broker_pb2.FetchPartitionResponse) -> FetchResponse:
    """A leader's answer for one partition, as the follower's core takes it."""
    diverging = None
    if result.HasField("diverging_epoch"):
        diverging = EpochEndOffset(result.diverging_epoch.epoch, result.diverging_epoch.end_offset)
    records = result.records  # each read of a bytes field copies it out of the message
    batches = batch_infos(records)
    whole_bytes = sum(batch.size_bytes for batch in batches)
    # A response cut at its size bound may end inside a batch: keep whole batches only.
    if whole_bytes != len(records):
        records = records[:whole_bytes]
    return FetchResponse(
        error=ErrorCode.of(result.error_code),
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        diverging_epoch=diverging,
        batches=batches,
        records=records,
    )


def batch_infos(records: bytes) -> tuple[BatchInfo, ...]:
    """Offsets, epoch and size of each whole batch, from the headers only."""
    infos = []
    position = 0
    while position + HEADER_SIZE <= len(records):
        header = read_header(records, position)
        if position + header.size > len(records):
            break
        marker = decode_marker(decode_batch(records, position)) if header.is_control else None
        infos.append(BatchInfo(header.base_offset, header.last_offset, header.partition_leader_epoch, header.size,
                               header.producer_id, header.producer_epoch, header.base_sequence,
                               header.is_transactional, header.is_control, marker, header.max_timestamp))
        position += header.size
    return tuple(infos)


# -- ListOffsets and OffsetsForLeaderEpoch ----------------------------------------------------


def latest_offsets_request(partitions: Iterable[TopicPartition]) -> broker_pb2.ListOffsetsRequest:
    """ListOffsets for the high watermark of each partition, as a broker asks a leader."""
    request = broker_pb2.ListOffsetsRequest(replica_id=-1)
    topics: dict[str, broker_pb2.ListOffsetsTopic] = {}
    for tp in partitions:
        topic = topics.get(tp.topic)
        if topic is None:
            topic = topics[tp.topic] = request.topics.add(topic=tp.topic)
        topic.partitions.add(partition=tp.partition, timestamp_ms=LATEST_TIMESTAMP, current_leader_epoch=-1)
    return request


def fill_listed_offset(result: broker_pb2.ListOffsetsPartitionResponse, listed: ListedOffset) -> None:
    result.error_code = int(listed.error)
    if listed.error != ErrorCode.NONE:
        result.error_message = listed.error.name
    result.offset, result.timestamp_ms, result.leader_epoch = listed.offset, listed.timestamp_ms, listed.leader_epoch


def fill_epoch_end_offset(result: broker_pb2.OffsetForLeaderPartitionResult, error: ErrorCode,
                          answer: EpochEndOffset) -> None:
    result.error_code = int(error)
    if error != ErrorCode.NONE:
        result.error_message = error.name
        return
    result.leader_epoch, result.end_offset = answer.epoch, answer.end_offset


# -- controller -> broker requests, as the broker reads them ----------------------------------


def endpoints_of(endpoints: Iterable[common_pb2.BrokerEndpoint]) -> list[BrokerEndpoint]:
    return [BrokerEndpoint(e.broker_id, e.host, e.port, e.rack) for e in endpoints]


def metadata_partitions(states: Iterable[broker_pb2.UpdateMetadataPartitionState]
                        ) -> tuple[list[tuple[TopicPartition, int]], list[TopicPartition]]:
    """UpdateMetadata's partitions: (those that exist, with their leader), (those of topics being deleted)."""
    live, deleted = [], []
    for state in states:
        key = TopicPartition(state.topic, state.partition)
        if state.leader_epoch == DELETION_LEADER_EPOCH:
            deleted.append(key)
        else:
            live.append((key, state.leader))
    return live, deleted


def partition_state_of(state: broker_pb2.LeaderAndIsrPartitionState) -> PartitionState:
    return PartitionState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                          partition_epoch=state.partition_epoch, replicas=tuple(state.replicas))


# -- controller -> broker requests, as the controller builds them -----------------------------------

# StopReplica's leader epoch for a topic being deleted: the broker stops whatever epoch it has.
DELETION_LEADER_EPOCH = -2


class Registration(Protocol):
    """Where a live broker listens, as its registration says."""

    broker_id: int
    host: str
    port: int
    rack: str | None


class ControllerHeader(NamedTuple):
    """What every controller request carries: who sends it, fenced by the controller epoch, for which
    incarnation of the broker (its broker epoch)."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int


def broker_endpoint(registration: Registration) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(broker_id=registration.broker_id, host=registration.host,
                                     port=registration.port, rack=registration.rack or "")


def leader_and_isr_state(
    partition: TopicPartition, topic_id: str, state: LeaderAndIsr, replicas: Sequence[int], *, is_new: bool,
    adding: Sequence[int] = (), removing: Sequence[int] = (),
) -> broker_pb2.LeaderAndIsrPartitionState:
    return broker_pb2.LeaderAndIsrPartitionState(
        topic=partition.topic, topic_id=topic_id, partition=partition.partition,
        controller_epoch=state.controller_epoch, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=state.isr, partition_epoch=state.partition_epoch, replicas=replicas, is_new=is_new,
        adding_replicas=adding, removing_replicas=removing,
    )


def update_metadata_state(
    partition: TopicPartition, topic_id: str, state: LeaderAndIsr, replicas: Sequence[int],
    live: Iterable[int],
) -> broker_pb2.UpdateMetadataPartitionState:
    alive = set(live)
    return broker_pb2.UpdateMetadataPartitionState(
        topic=partition.topic, topic_id=topic_id, partition=partition.partition,
        controller_epoch=state.controller_epoch, leader=state.leader, leader_epoch=state.leader_epoch,
        isr=state.isr, partition_epoch=state.partition_epoch, replicas=replicas,
        offline_replicas=[b for b in replicas if b not in alive],
    )


def deleted_partition_state(partition: TopicPartition, topic_id: str,
                            replicas: Sequence[int]) -> broker_pb2.UpdateMetadataPartitionState:
    """UpdateMetadata's entry for a partition of a topic being deleted: no leader, leader epoch -2."""
    return broker_pb2.UpdateMetadataPartitionState(
        topic=partition.topic, topic_id=topic_id, partition=partition.partition, leader=-1,
        leader_epoch=DELETION_LEADER_EPOCH, replicas=replicas,
    )


def stop_replica_partition(
    partition: TopicPartition, *, delete: bool, leader_epoch: int = DELETION_LEADER_EPOCH
) -> broker_pb2.StopReplicaPartition:
    return broker_pb2.StopReplicaPartition(topic=partition.topic, partition=partition.partition,
                                           leader_epoch=leader_epoch, delete_partition=delete)


def leader_and_isr_request(
    header: ControllerHeader, states: Iterable[broker_pb2.LeaderAndIsrPartitionState],
    live_leaders: Iterable[common_pb2.BrokerEndpoint],
) -> broker_pb2.LeaderAndIsrRequest:
    return broker_pb2.LeaderAndIsrRequest(**header._asdict(), partition_states=list(states),
                                          live_leaders=list(live_leaders))


def update_metadata_request(
    header: ControllerHeader, states: Iterable[broker_pb2.UpdateMetadataPartitionState],
    live_brokers: Iterable[common_pb2.BrokerEndpoint],
) -> broker_pb2.UpdateMetadataRequest:
    return broker_pb2.UpdateMetadataRequest(**header._asdict(), partition_states=list(states),
                                            live_brokers=list(live_brokers))


def stop_replica_request(
    header: ControllerHeader, partitions: Iterable[broker_pb2.StopReplicaPartition]
) -> broker_pb2.StopReplicaRequest:
    return broker_pb2.StopReplicaRequest(**header._asdict(), partitions=list(partitions))
