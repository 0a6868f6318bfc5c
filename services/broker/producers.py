"""DescribeProducers: the producers a partition leader keeps state for (Kafka's DescribeProducers).

Each hosted partition's core knows its producers (`ProducerStates`): their
epochs, cached batches and open transactions. The entries keep time on the
broker's monotonic clock, so the last timestamp is turned into wall-clock
milliseconds here; state read back from a snapshot has no time (-1).
"""

from __future__ import annotations

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions
from replog.broker.replicas import now_ms, wall_ms
from replog.core.errors import ErrorCode
from replog.core.producer_state import ProducerEntry
from replog.core.topic_partition import TopicPartition


def handle_describe_producers(partitions: Partitions,
                              request: broker_pb2.DescribeProducersRequest) -> broker_pb2.DescribeProducersResponse:
    response = broker_pb2.DescribeProducersResponse()
    monotonic, wall = now_ms(), wall_ms()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for partition in topic.partitions:
            result = topic_response.partitions.add(partition=partition)
            key = TopicPartition(topic.topic, partition)
            refusal = partitions.not_led_here(key)
            if refusal is not None:
                result.error_code, result.error_message = int(refusal[0]), refusal[1]
                continue
            result.error_code = int(ErrorCode.NONE)
            for entry in partitions.by_name[key].replica.producers:
                _add_producer(result, entry, monotonic, wall)
    return response


def _add_producer(result: broker_pb2.DescribeProducersPartitionResponse, entry: ProducerEntry, monotonic_ms: int,
                  wall_ms_now: int) -> None:
    last_timestamp_ms = wall_ms_now - (monotonic_ms - entry.last_timestamp_ms) if entry.last_timestamp_ms > 0 else -1
    result.active_producers.add(producer_id=entry.producer_id, producer_epoch=entry.epoch,
                                last_sequence=entry.last_sequence, last_timestamp_ms=last_timestamp_ms,
                                coordinator_epoch=entry.coordinator_epoch,
                                current_txn_start_offset=entry.current_txn_first_offset)
