"""Produce: check the request's acks, validate each partition's batches, hand them to the leader's
driver, await the answers.

Batches are checked once here (CRC, sizes, max.message.bytes, and what the
topic's configs demand of their records: keys on a compacted topic, CreateTime
timestamps within message.timestamp.before/after.max.ms) so that a bad batch is
refused with a reason before the core sees it; the bytes then go to the log
untouched except for the header fields the leader stamps (offsets and epoch,
and on a LogAppendTime topic the timestamp type and maxTimestamp), unless the
topic's compression.type names a codec other than the producer's: then the
leader compresses those batches anew in it, as Kafka's does. What is
answered and when is the core's to say: it tells whether a CompleteProduce
follows (never for acks=0) and answers REQUEST_TIMED_OUT itself at the
request's timeout. A transaction's first batch on a partition waits for its
coordinator's verification first (KIP-890); WriteTxnMarkers appends the
coordinator's markers through the same path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace

from replog.api.broker.v1 import broker_pb2
from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.broker.replicas import wall_ms
from replog.core.errors import ErrorCode
from replog.core.leader import check_acks
from replog.core.messages import ACKS_ALL, CompleteProduce, ProduceRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import ProducerAppend
from replog.core.topic_partition import TopicPartition
from replog.core.txn.markers import TxnMarker
from replog.protocol.batch import (
    BatchHeader,
    Compression,
    CorruptBatchError,
    recompress_batches,
    stamp_log_append_time,
    validate_batches,
)
from replog.protocol.control import marker_batch
from replog.rpc.broker_convert import fill_produce_partition, producer_append
from replog.storage import LogConfig
from replog.storage.appended_batches import refused_records

log = logging.getLogger("replog.broker")

# How long a marker waits for the ISR before the coordinator hears REQUEST_TIMED_OUT and sends it again.
MARKER_TIMEOUT_MS = 30_000


@dataclass
class PendingProduce:
    """A produce request whose batches are appended, waiting for their acknowledgements."""

    response: broker_pb2.ProduceResponse
    waits: list[tuple[broker_pb2.ProducePartitionResponse, asyncio.Future[CompleteProduce]]]
    appended_s: float  # perf_counter when every partition was handed to its driver


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
    return PendingProduce(response, waits, time.perf_counter())


async def answer_produce(pending: PendingProduce) -> broker_pb2.ProduceResponse:
    """Wait for each partition's acknowledgement and fill in the answer."""
    for result, waiter in pending.waits:
        completion = await asyncio.shield(waiter)
        fill_produce_partition(result, completion.error, completion.message, base_offset=completion.base_offset)
        if completion.first_max_timestamp >= 0 and result.log_append_time_ms >= 0:
            # A retry answered with its first append's offsets gets that append's time too, as stored.
            result.log_append_time_ms = completion.first_max_timestamp
    if pending.waits:
        metrics.REMOTE_TIME.labels("Produce").observe(time.perf_counter() - pending.appended_s)
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
    received = data.records  # each read of a bytes field copies it out of the message
    config = driver.log.config
    wall = wall_ms()
    try:
        records, headers = _stored_form(received, config, wall)
        producer = producer_append(headers, request.transaction_version)
        if isinstance(producer, str):
            raise _Refused(ErrorCode.INVALID_RECORD, producer)
    except _Refused as refused:
        metrics.PRODUCE_REFUSED.labels(key.topic, refused.error.name).inc()
        log.info("%s: produce refused with %s: %s", key, refused.error.name, refused.reason)
        fill_produce_partition(result, refused.error, refused.reason)
        return None
    record_count = sum(header.last_offset_delta + 1 for header in headers)
    buf = bytearray(records)
    if config.log_append_time:
        stamp_log_append_time(buf, headers, wall)
        result.log_append_time_ms = wall
        if producer is not None:
            producer = replace(producer, max_timestamp=wall)
    produce = ProduceRequest(0, buf, record_count, request.acks, request.timeout_ms,
                             data.current_leader_epoch, producer)
    metrics.BYTES_IN.labels(key.topic).inc(len(received))
    metrics.MESSAGES_IN.labels(key.topic).inc(record_count)
    result.log_start_offset = driver.log.log_start_offset
    if producer is not None and driver.is_leader and driver.replica.needs_verification(producer):
        if not request.HasField("transactional_id"):
            fill_produce_partition(result, ErrorCode.INVALID_TXN_STATE,
                                   "a transactional batch comes with its producer's transactional id")
            return None
        return asyncio.ensure_future(_verify_then_append(partitions, driver, request.transactional_id, produce))
    return _submit(partitions, driver, produce, now, result)


class _Refused(Exception):
    """A partition's batches refused before anything of them was appended, with Kafka's error and why."""

    def __init__(self, error: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.error = error
        self.reason = reason


def _stored_form(records: bytes, config: LogConfig, wall: int) -> tuple[bytes, list[BatchHeader]]:
    """The producer's batches as the leader appends them, and their headers: checked (CRC, sizes, what the
    topic's configs demand of the records at the wall clock `wall`), and compressed anew where the topic's
    compression.type names another codec than the producer's (Kafka's leader does the same). _Refused
    says why not."""
    checked = validate_batches(records, max_message_bytes=config.max_message_bytes)
    if not checked.ok:
        raise _Refused(checked.error, checked.reason)
    refused = refused_records(records, checked.headers, config, wall)
    if refused is not None:
        raise _Refused(*refused)
    codec = Compression.for_topic(config.compression_type)
    try:
        recompressed = None if codec is None else recompress_batches(records, checked.headers, codec)
    except CorruptBatchError as error:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(error)) from None
    if recompressed is None:
        return records, checked.headers
    stored = validate_batches(recompressed, max_message_bytes=config.max_message_bytes)
    if not stored.ok:
        raise _Refused(stored.error, f"as {config.compression_type}, the topic's compression.type: {stored.reason}")
    return recompressed, stored.headers


def _submit(partitions: Partitions, driver: PartitionDriver, produce: ProduceRequest, now: int,
            result: broker_pb2.ProducePartitionResponse | None = None) -> asyncio.Future[CompleteProduce] | None:
    """Hand a request to the partition's driver; the future of its answer, None for acks=0."""
    waiters = partitions.produce_waiters
    request_id = waiters.new_request_id()
    waiter = waiters.wait(request_id)
    if not driver.produce(replace(produce, request_id=request_id), now):
        # acks=0: nobody reads the answer (Kafka sends none); ours says only what validation found.
        waiters.forget(request_id)
        if result is not None:
            fill_produce_partition(result, ErrorCode.NONE)
        return None
    return waiter


async def verify(partitions: Partitions, driver: PartitionDriver, transactional_id: str,
                 producer: ProducerAppend) -> tuple[ErrorCode, str]:
    """KIP-890: ask the transactional id's coordinator whether the partition is in the producer's ongoing
    transaction at this epoch (or, for a producer on transaction version 2, have it add the partition),
    and note its yes on the partition; the produce answer and why. Writes of the same producer, epoch and
    partition arriving meanwhile wait for the same answer."""
    asking = (driver.topic_partition, producer.producer_id, producer.producer_epoch)
    verification = partitions.verifications.get(asking)
    if verification is None:
        verification = asyncio.ensure_future(
            partitions.verify_transaction(transactional_id, producer, driver.topic_partition))
        partitions.verifications[asking] = verification
        verification.add_done_callback(lambda _: partitions.verifications.pop(asking, None))
    error, message = await asyncio.shield(verification)
    if error != ErrorCode.NONE:
        log.info("%s: transactional id %r (producer %d epoch %d) not %s: %s (%s)", driver.name,
                 transactional_id, producer.producer_id, producer.producer_epoch,
                 "added" if producer.leader_add else "verified",
                 error.name, message)
    elif driver.is_leader:
        driver.replica.verified(producer, now_ms())
    return error, message


async def _verify_then_append(partitions: Partitions, driver: PartitionDriver, transactional_id: str,
                              produce: ProduceRequest) -> CompleteProduce:
    """The first batch of a transaction on a partition is appended only once its coordinator says the
    partition is in the producer's ongoing transaction: no late write opens a transaction no marker will
    close. Batches of the same producer waiting together are appended in the order they came."""
    error, message = await verify(partitions, driver, transactional_id, produce.producer)
    if error != ErrorCode.NONE:
        return CompleteProduce(produce.request_id, error, message=message)
    waiter = _submit(partitions, driver, produce, now_ms())
    if waiter is None:
        return CompleteProduce(produce.request_id, ErrorCode.NONE)
    return await waiter


async def handle_write_txn_markers(partitions: Partitions,
                                   request: broker_pb2.WriteTxnMarkersRequest) -> broker_pb2.WriteTxnMarkersResponse:
    """Append each marker to the partitions it names that this broker leads, acks=all, and answer
    once every one is replicated or refused."""
    response = broker_pb2.WriteTxnMarkersResponse()
    waits = []
    now = now_ms()
    for asked in request.markers:
        marker = TxnMarker(asked.producer_id, asked.producer_epoch, asked.coordinator_epoch, asked.committed)
        marker_result = response.markers.add(producer_id=asked.producer_id)
        for topic in asked.topics:
            for partition in topic.partitions:
                key = TopicPartition(topic.topic, partition)
                result = marker_result.results.add(topic=topic.topic, partition=partition)
                driver = partitions.by_name.get(key)
                if driver is None:
                    result.error_code = int(partitions.metadata.not_hosted(key))
                    result.error_message = f"this broker hosts no replica of {key}"
                    continue
                batch = marker_batch(marker, timestamp_ms=wall_ms())
                log_end_offset = driver.log.log_end_offset
                waiter = _submit(partitions, driver, ProduceRequest(0, bytearray(batch), 1, ACKS_ALL,
                                                                    MARKER_TIMEOUT_MS, marker=marker), now)
                if driver.log.log_end_offset > log_end_offset:
                    partitions.marker_appended(driver, marker)  # the leader appends at once, or refuses
                waits.append((result, waiter, key, marker))
    for result, waiter, key, marker in waits:
        completion = await asyncio.shield(waiter)
        result.error_code = int(completion.error)
        if completion.error != ErrorCode.NONE:
            result.error_message = completion.error.name
        log.debug("%s: %s marker for producer %d epoch %d: %s", key, "COMMIT" if marker.commit else "ABORT",
                  marker.producer_id, marker.producer_epoch, completion.error.name)
    return response
