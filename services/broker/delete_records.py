"""DeleteRecords: a partition's records before an offset deleted (Kafka's DeleteRecords).

The leader's core moves its log start offset and holds the request until the
log of every replica on a live broker (UpdateMetadata's) and of every ISR member
starts there too (followers take the leader's log start from their next fetch
answer), or until the request's timeout; this module hands each partition to its
driver and waits for the answers. The leader's log start is in its log dir's
checkpoint file before it answers, and a follower's soon after it moves, so that
records deleted from within a segment do not come back after a crash. A topic
that does not delete (cleanup.policy=compact alone, the internal topics among
them) is refused, as Kafka refuses it.
"""

from __future__ import annotations

import asyncio
import logging

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions
from replog.broker.replicas import now_ms
from replog.core.errors import ErrorCode
from replog.core.messages import CompleteDeleteRecords, DeleteRecordsRequest
from replog.core.topic_partition import TopicPartition

log = logging.getLogger("replog.broker")

DELETE_RECORDS_TIMEOUT_MS = 30_000  # a request's timeout_ms of 0
DELETE_RECORDS_TIMEOUT_MS_MAX = 300_000


def timeout_problem(timeout_ms: int) -> str | None:
    if not 0 <= timeout_ms <= DELETE_RECORDS_TIMEOUT_MS_MAX:
        return (f"timeout_ms {timeout_ms} is out of range: give 0 (the default, "
                f"{DELETE_RECORDS_TIMEOUT_MS} ms) up to {DELETE_RECORDS_TIMEOUT_MS_MAX}")
    return None


async def handle_delete_records(partitions: Partitions,
                                request: broker_pb2.DeleteRecordsRequest) -> broker_pb2.DeleteRecordsResponse:
    """Hand each partition this broker leads to its core, then answer each as its core does."""
    response = broker_pb2.DeleteRecordsResponse()
    timeout_ms = request.timeout_ms or DELETE_RECORDS_TIMEOUT_MS
    waits = []
    now = now_ms()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for asked in topic.partitions:
            result = topic_response.partitions.add(partition=asked.partition, low_watermark=-1)
            key = TopicPartition(topic.topic, asked.partition)
            refusal = _refusal(partitions, key)
            if refusal is not None:
                result.error_code, result.error_message = int(refusal[0]), refusal[1]
                continue
            driver = partitions.by_name[key]
            waiters = partitions.delete_waiters
            request_id = waiters.new_request_id()
            waiter = waiters.wait(request_id)
            start_before = driver.log.log_start_offset
            driver.delete_records(DeleteRecordsRequest(request_id, asked.offset, timeout_ms), now)
            if driver.log.log_start_offset > start_before:
                log.info("%s: records before offset %d deleted (the log started at %d)", key,
                         driver.log.log_start_offset, start_before)
            waits.append((result, waiter))
    if waits:
        await partitions.log_starts_written()  # a crash now keeps the records deleted
    for result, waiter in waits:
        completion: CompleteDeleteRecords = await asyncio.shield(waiter)
        result.error_code = int(completion.error)
        result.low_watermark = completion.low_watermark
        if completion.error != ErrorCode.NONE:
            result.error_message = completion.message or completion.error.name
    return response


def _refusal(partitions: Partitions, key: TopicPartition) -> tuple[ErrorCode, str] | None:
    refusal = partitions.not_led_here(key)
    if refusal is not None:
        return refusal
    driver = partitions.by_name[key]
    if not driver.log.config.deletes:
        return (ErrorCode.POLICY_VIOLATION,
                f"{key.topic} keeps every key's latest record (cleanup.policy={driver.log.config.cleanup_policy}): "
                "its records are not deleted by offset")
    return None
