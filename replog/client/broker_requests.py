"""The client's side of BrokerService: the requests it sends to leaders, and how it reads their answers.

The one module of the client that builds broker messages; the sender and the
fetcher hand it plain values (partitions, epochs, offsets) and take back the
answers per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from replog.api.broker.v1 import broker_pb2
from replog.api.common.v1 import common_pb2
from replog.client.types import LogDirDescription, ProducerDescription, ReplicaInfo
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.rpc.coordinator_convert import grouped

CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATION_LEVELS = {
    READ_UNCOMMITTED: broker_pb2.ISOLATION_LEVEL_READ_UNCOMMITTED,
    READ_COMMITTED: broker_pb2.ISOLATION_LEVEL_READ_COMMITTED,
}


def _by_topic(items: Iterable[tuple[TopicPartition, Any]]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for tp, partition in items:
        grouped.setdefault(tp.topic, []).append(partition)
    return grouped


def produce_request(acks: int, timeout_ms: int, partitions: Sequence[tuple[TopicPartition, bytes, int]],
                    transactional_id: str | None = None,
                    transaction_version: int = 0) -> broker_pb2.ProduceStreamRequest:
    """A ProduceStream message: each partition's encoded batches and the leader epoch known for it."""
    message = broker_pb2.ProduceStreamRequest()
    request = message.request
    request.acks, request.timeout_ms = acks, timeout_ms
    if transactional_id is not None:
        request.transactional_id = transactional_id
        request.transaction_version = transaction_version
    for topic, parts in _by_topic((tp, (tp.partition, records, epoch)) for tp, records, epoch in partitions).items():
        data = request.topics.add(topic=topic)
        for partition, records, epoch in parts:
            data.partitions.add(partition=partition, records=records, current_leader_epoch=epoch)
    return message


def fetch_request(partitions: Iterable[tuple[TopicPartition, int, int]], *, max_wait_ms: int, min_bytes: int,
                  max_bytes: int, partition_max_bytes: int, isolation_level: str) -> broker_pb2.FetchStreamRequest:
    """A consumer's FetchStream message (no session) for (partition, leader epoch, fetch offset)."""
    by_topic = _by_topic((tp, broker_pb2.FetchPartition(
        partition=tp.partition, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=partition_max_bytes,
    )) for tp, leader_epoch, fetch_offset in partitions)
    return broker_pb2.FetchStreamRequest(request=broker_pb2.FetchRequest(
        replica_id=CONSUMER_REPLICA_ID, replica_epoch=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
        max_bytes=max_bytes, isolation_level=ISOLATION_LEVELS[isolation_level], session_id=0, session_epoch=-1,
        topics=[broker_pb2.FetchTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
    ))


def list_offsets_request(partitions: Iterable[tuple[TopicPartition, int, int]],
                         isolation_level: str) -> broker_pb2.ListOffsetsRequest:
    """ListOffsets for (partition, leader epoch, timestamp: -2 earliest, -1 latest)."""
    by_topic = _by_topic((tp, broker_pb2.ListOffsetsPartition(
        partition=tp.partition, current_leader_epoch=leader_epoch, timestamp_ms=timestamp_ms,
    )) for tp, leader_epoch, timestamp_ms in partitions)
    return broker_pb2.ListOffsetsRequest(
        replica_id=CONSUMER_REPLICA_ID, isolation_level=ISOLATION_LEVELS[isolation_level],
        topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
    )


def offsets_for_leader_epoch_request(
    partitions: Iterable[tuple[TopicPartition, int, int]],
) -> broker_pb2.OffsetsForLeaderEpochRequest:
    """OffsetsForLeaderEpoch for (partition, current leader epoch, the epoch to find the end of)."""
    by_topic = _by_topic((tp, broker_pb2.OffsetForLeaderPartition(
        partition=tp.partition, current_leader_epoch=current_leader_epoch, leader_epoch=leader_epoch,
    )) for tp, current_leader_epoch, leader_epoch in partitions)
    return broker_pb2.OffsetsForLeaderEpochRequest(
        replica_id=CONSUMER_REPLICA_ID,
        topics=[broker_pb2.OffsetForLeaderTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
    )


def partition_results(response: Any) -> dict[TopicPartition, Any]:
    """An answer's per-partition results, by partition (any BrokerService response with topics)."""
    return {TopicPartition(topic.topic, result.partition): result
            for topic in response.topics for result in topic.partitions}


def describe_producers_request(partitions: Iterable[TopicPartition]) -> broker_pb2.DescribeProducersRequest:
    return broker_pb2.DescribeProducersRequest(topics=grouped(partitions))


def described_producers(response: broker_pb2.DescribeProducersResponse
                        ) -> dict[TopicPartition, tuple[ErrorCode, str, list[ProducerDescription]]]:
    """Each partition's outcome and active producers, by producer id."""
    return {tp: (ErrorCode.of(result.error_code), result.error_message, [
        ProducerDescription(p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp_ms, p.coordinator_epoch,
                            p.current_txn_start_offset) for p in sorted(result.active_producers,
                                                                        key=lambda p: p.producer_id)])
        for tp, result in partition_results(response).items()}


def delete_records_request(offsets: Iterable[tuple[TopicPartition, int]],
                           timeout_ms: int) -> broker_pb2.DeleteRecordsRequest:
    """DeleteRecords of each partition before its offset (-1: the high watermark)."""
    by_topic = _by_topic((tp, broker_pb2.DeleteRecordsPartition(partition=tp.partition, offset=offset))
                         for tp, offset in offsets)
    return broker_pb2.DeleteRecordsRequest(
        timeout_ms=timeout_ms,
        topics=[broker_pb2.DeleteRecordsTopic(topic=topic, partitions=parts) for topic, parts in by_topic.items()])


def describe_log_dirs_request(partitions: Iterable[TopicPartition] | None) -> broker_pb2.DescribeLogDirsRequest:
    """DescribeLogDirs of these partitions, or of every one (None)."""
    return broker_pb2.DescribeLogDirsRequest(topics=grouped(partitions) if partitions is not None else [])


def deleted_records(response: broker_pb2.DeleteRecordsResponse) -> dict[TopicPartition, tuple[ErrorCode, str, int]]:
    """Each partition's outcome and low watermark."""
    return {tp: (ErrorCode.of(result.error_code), result.error_message, result.low_watermark)
            for tp, result in partition_results(response).items()}


def described_log_dirs(response: broker_pb2.DescribeLogDirsResponse) -> list[LogDirDescription]:
    """A broker's log dirs, each with its replicas by partition."""
    return [LogDirDescription(
        described.log_dir, ErrorCode.of(described.error_code), described.total_bytes, described.usable_bytes,
        {TopicPartition(topic.topic, p.partition): ReplicaInfo(p.size_bytes, p.log_start_offset, p.log_end_offset,
                                                               p.high_watermark, p.leader)
         for topic in described.topics for p in topic.partitions})
        for described in response.log_dirs]


def abort_marker_request(tp: TopicPartition, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int) -> broker_pb2.WriteTxnMarkersRequest:
    """WriteTxnMarkers with one ABORT marker for one partition (an operator's abort)."""
    request = broker_pb2.WriteTxnMarkersRequest()
    request.markers.add(producer_id=producer_id, producer_epoch=producer_epoch, committed=False,
                        coordinator_epoch=coordinator_epoch,
                        topics=[common_pb2.TopicPartitions(topic=tp.topic, partitions=[tp.partition])])
    return request


def written_markers(response: broker_pb2.WriteTxnMarkersResponse) -> dict[TopicPartition, tuple[ErrorCode, str, None]]:
    """Each partition's outcome of WriteTxnMarkers."""
    return {TopicPartition(result.topic, result.partition): (ErrorCode.of(result.error_code), result.error_message,
                                                             None)
            for marker in response.markers for result in marker.results}
