"""Fetch, ListOffsets and OffsetsForLeaderEpoch: the read side of a leader.

A fetch asks each partition's core for a plan (which offsets it may read; a
follower's fetch also reports its log end offset, which may move the HW), then
reads whole batches from the log. With nothing to return it long-polls: it is
woken by appends and HW moves, never by a sleep loop.
"""

from __future__ import annotations

import time

from replog.api.broker.v1 import broker_pb2
from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.messages import CONSUMER_REPLICA_ID, FetchPlan, FetchRequest

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
FETCH_WAIT_MS_MAX = 30_000


async def handle_fetch(partitions: Partitions, request: broker_pb2.FetchRequest,
                       response: broker_pb2.FetchResponse | None = None) -> broker_pb2.FetchResponse:
    """Answer a fetch, filling `response` when given (a stream's message, so that the records are not copied)."""
    wait_ms = min(max(request.max_wait_ms, 0), FETCH_WAIT_MS_MAX)
    deadline = time.monotonic() + wait_ms / 1000
    metrics.FETCH_PURGATORY.inc()
    try:
        while True:
            plans = _plan(partitions, request)
            answerable = any(plan.has_data or plan.error != ErrorCode.NONE or plan.diverging_epoch is not None
                             for _, _, plan in plans)
            remaining_s = deadline - time.monotonic()
            if answerable or remaining_s <= 0:
                break
            await partitions.wait_for_data(remaining_s)
    finally:
        metrics.FETCH_PURGATORY.dec()
    return _respond(partitions, request, plans, broker_pb2.FetchResponse() if response is None else response)


def _plan(partitions: Partitions, request: broker_pb2.FetchRequest) -> list[tuple[str, broker_pb2.FetchPartition, FetchPlan]]:
    now = now_ms()
    plans = []
    for topic in request.topics:
        for fetch_partition in topic.partitions:
            driver = partitions.by_name.get((topic.topic, fetch_partition.partition))
            if driver is None:
                plans.append((topic.topic, fetch_partition, FetchPlan(ErrorCode.NOT_LEADER_OR_FOLLOWER)))
                continue
            plan = driver.replica.handle_fetch(
                FetchRequest(
                    replica_id=request.replica_id,
                    fetch_offset=fetch_partition.fetch_offset,
                    max_bytes=fetch_partition.partition_max_bytes or request.max_bytes,
                    last_fetched_epoch=fetch_partition.last_fetched_epoch,
                    current_leader_epoch=fetch_partition.current_leader_epoch,
                    replica_epoch=request.replica_epoch,
                    max_wait_ms=request.max_wait_ms,
                ),
                now,
            )
            if request.replica_id != CONSUMER_REPLICA_ID:
                partitions.apply(driver, now)  # the HW may have moved: complete producers
            plans.append((topic.topic, fetch_partition, plan))
    return plans


def _respond(partitions: Partitions, request: broker_pb2.FetchRequest,
             plans: list[tuple[str, broker_pb2.FetchPartition, FetchPlan]],
             response: broker_pb2.FetchResponse) -> broker_pb2.FetchResponse:
    response.error_code = int(ErrorCode.NONE)
    budget = request.max_bytes if request.max_bytes > 0 else 1 << 30
    topics: dict[str, broker_pb2.FetchTopicResponse] = {}
    for topic, fetch_partition, plan in plans:
        topic_response = topics.get(topic)
        if topic_response is None:
            topic_response = topics[topic] = response.topics.add(topic=topic)
        result = topic_response.partitions.add(
            partition=fetch_partition.partition, error_code=int(plan.error), high_watermark=plan.high_watermark,
            last_stable_offset=plan.high_watermark, log_start_offset=plan.log_start_offset,
            preferred_read_replica=-1,
        )
        if plan.error != ErrorCode.NONE:
            result.error_message = plan.error.name
        if plan.diverging_epoch is not None:
            result.diverging_epoch.epoch = plan.diverging_epoch.epoch
            result.diverging_epoch.end_offset = plan.diverging_epoch.end_offset
        if not plan.has_data or budget <= 0:
            continue
        driver = partitions.by_name[(topic, fetch_partition.partition)]
        read = driver.log.read(plan.read_offset, min(plan.max_bytes, budget), max_offset=plan.max_offset)
        if read.error != ErrorCode.NONE:
            result.error_code = int(read.error)
            result.error_message = f"cannot read offset {plan.read_offset}: {read.error.name}"
            continue
        result.records = read.records
        budget -= len(read.records)
        metrics.BYTES_OUT.labels(topic).inc(len(read.records))
    return response


def handle_list_offsets(partitions: Partitions, request: broker_pb2.ListOffsetsRequest) -> broker_pb2.ListOffsetsResponse:
    response = broker_pb2.ListOffsetsResponse()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for asked in topic.partitions:
            result = topic_response.partitions.add(partition=asked.partition, timestamp_ms=-1, offset=-1,
                                                   leader_epoch=-1)
            driver = partitions.by_name.get((topic.topic, asked.partition))
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if driver is not None:
                error = driver.replica.check_list_offsets(asked.current_leader_epoch)
            if error != ErrorCode.NONE:
                result.error_code, result.error_message = int(error), error.name
                continue
            result.error_code = int(ErrorCode.NONE)
            result.leader_epoch = driver.replica.leader_epoch
            if asked.timestamp_ms == EARLIEST_TIMESTAMP:
                result.offset = driver.replica.log_start_offset
            elif asked.timestamp_ms == LATEST_TIMESTAMP:
                result.offset = driver.replica.high_watermark
            else:
                found = driver.log.offset_for_timestamp(asked.timestamp_ms)
                if found is not None and found[0] < driver.replica.high_watermark:
                    result.offset, result.timestamp_ms = found
    return response


def handle_offsets_for_leader_epoch(
    partitions: Partitions, request: broker_pb2.OffsetsForLeaderEpochRequest
) -> broker_pb2.OffsetsForLeaderEpochResponse:
    response = broker_pb2.OffsetsForLeaderEpochResponse()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for asked in topic.partitions:
            result = topic_response.partitions.add(partition=asked.partition, leader_epoch=-1, end_offset=-1)
            driver = partitions.by_name.get((topic.topic, asked.partition))
            if driver is None:
                result.error_code = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                result.error_message = "this broker hosts no replica of the partition"
                continue
            error, answer = driver.replica.handle_offsets_for_leader_epoch(asked.current_leader_epoch,
                                                                           asked.leader_epoch)
            result.error_code = int(error)
            if error != ErrorCode.NONE:
                result.error_message = error.name
                continue
            result.leader_epoch, result.end_offset = answer.epoch, answer.end_offset
    return response
