"""Produce: check the request's acks, validate each partition's batches, hand them to the leader's
driver, await the answers.

Batches are checked once here (CRC, sizes, max.message.bytes) so that a bad
batch is refused with a reason before the core sees it; the bytes then go to
the log untouched except for the header fields the leader stamps. What is
answered and when is the core's to say: it tells whether a CompleteProduce
follows (never for acks=0) and answers REQUEST_TIMED_OUT itself at the
request's timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from replog.api.broker.v1 import broker_pb2
from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.leader import check_acks
from replog.core.messages import CompleteProduce, ProduceRequest
from replog.core.topic_partition import TopicPartition
from replog.protocol.batch import validate_batches
from replog.rpc.broker_convert import fill_produce_partition, producer_append


@dataclass
class PendingProduce:
    """A produce request whose batches are appended, waiting for their acknowledgements."""

    response: broker_pb2.ProduceResponse
    waits: list[tuple[broker_pb2.ProducePartitionResponse, asyncio.Future[CompleteProduce]]]


async def handle_produce(partitions: Partitions, request: broker_pb2.ProduceRequest) -> broker_pb2.ProduceResponse:
    return await answer_produce(append_produce(partitions, request))


def append_produce(partitions: Partitions, request: broker_pb2.ProduceRequest,
                   response: broker_pb2.ProduceResponse | None = None) -> PendingProduce:
    """Validate and append every partition's batches now, in the caller's order; nothing here awaits.

    A ProduceStream relies on it: the requests of one stream reach the log in
    the order they were sent, whatever their acknowledgements wait for. The
    answer goes into `response` when given (a stream's message).
    """
    response = broker_pb2.ProduceResponse() if response is None else response
    waits: list[tuple[broker_pb2.ProducePartitionResponse, asyncio.Future[CompleteProduce]]] = []
    acks_error = check_acks(request.acks)
    now = now_ms()
    for topic_data in request.topics:
        topic_response = response.topics.add(topic=topic_data.topic)
        for partition_data in topic_data.partitions:
            result = topic_response.partitions.add(partition=partition_data.partition, base_offset=-1,
                                                   log_append_time_ms=-1, log_start_offset=-1)
            if acks_error != ErrorCode.NONE:
                fill_produce_partition(result, acks_error, f"acks must be 0, 1 or -1 (all), not {request.acks}")
                continue
            waiter = _append(partitions, TopicPartition(topic_data.topic, partition_data.partition), partition_data,
                             request, result, now)
            if waiter is not None:
                waits.append((result, waiter))
    return PendingProduce(response, waits)


async def answer_produce(pending: PendingProduce) -> broker_pb2.ProduceResponse:
    """Wait for each partition's acknowledgement and fill in the answer."""
    for result, waiter in pending.waits:
        completion = await asyncio.shield(waiter)
        fill_produce_partition(result, completion.error, base_offset=completion.base_offset)
    return pending.response


def _append(
    partitions: Partitions,
    key: TopicPartition,
    data: broker_pb2.ProducePartitionData,
    request: broker_pb2.ProduceRequest,
    result: broker_pb2.ProducePartitionResponse,
    now: int,
) -> asyncio.Future[CompleteProduce] | None:
    driver = partitions.by_name.get(key)
    if driver is None:
        fill_produce_partition(result, partitions.metadata.not_hosted(key), f"this broker hosts no replica of {key}")
        return None
    checked = validate_batches(data.records, max_message_bytes=driver.log.config.max_message_bytes)
    if not checked.ok:
        fill_produce_partition(result, checked.error, checked.reason)
        return None
    record_count = sum(header.last_offset_delta + 1 for header in checked.headers)
    producer = producer_append(checked.headers)
    if isinstance(producer, str):
        fill_produce_partition(result, ErrorCode.INVALID_RECORD, producer)
        return None
    waiters = partitions.produce_waiters
    request_id = waiters.new_request_id()
    waiter = waiters.wait(request_id)
    answered = driver.produce(
        ProduceRequest(request_id, bytearray(data.records), record_count, request.acks, request.timeout_ms,
                       data.current_leader_epoch, producer),
        now,
    )
    metrics.BYTES_IN.labels(key.topic).inc(len(data.records))
    metrics.MESSAGES_IN.labels(key.topic).inc(record_count)
    result.log_start_offset = driver.log.log_start_offset
    if not answered:
        # acks=0: nobody reads the answer (Kafka sends none); ours says only what validation found.
        waiters.forget(request_id)
        fill_produce_partition(result, ErrorCode.NONE)
        return None
    return waiter
