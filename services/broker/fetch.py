"""Fetch, ListOffsets and OffsetsForLeaderEpoch: the read side of a leader.

A fetch asks each partition's core for a plan (which offsets it may read; a
follower's fetch also reports its log end offset, which may move the HW), then
reads whole batches from the log. With nothing to return it long-polls: it is
woken by appends and HW moves of the partitions it reads, never by a sleep
loop. A follower's fetch may belong to a fetch session (fetch_sessions.py):
then the session says which partitions to read, and an incremental answer
lists only the partitions with something new.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from replog.api.broker.v1 import broker_pb2
from replog.broker import metrics
from replog.broker.fetch_sessions import FetchSession, FetchSessions, SessionPartition, SessionStart
from replog.broker.partition import PartitionDriver
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.messages import CONSUMER_REPLICA_ID, FetchPlan, FetchRequest

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
FETCH_WAIT_MS_MAX = 30_000
# A session partition with nothing new is planned afresh at least this often.
SESSION_REPLAN_MS = 1_000


async def handle_fetch(partitions: Partitions, sessions: FetchSessions, request: broker_pb2.FetchRequest,
                       response: broker_pb2.FetchResponse | None = None) -> broker_pb2.FetchResponse:
    """Answer a fetch, filling `response` when given (a stream's message, so that the records are not copied)."""
    response = broker_pb2.FetchResponse() if response is None else response
    start = sessions.start(request.replica_id, request.session_id, request.session_epoch, request.topics,
                           request.forgotten_topics)
    if start.error != ErrorCode.NONE:
        response.error_code = int(start.error)
        response.error_message = (f"fetch session {request.session_id} at epoch {request.session_epoch}: "
                                  f"{start.error.name}; start over with a full fetch")
        return response
    asked = _asked(request, start.session)
    wait_ms = min(max(request.max_wait_ms, 0), FETCH_WAIT_MS_MAX)
    deadline = time.monotonic() + wait_ms / 1000
    metrics.FETCH_PURGATORY.inc()
    try:
        now = now_ms()
        reuse = start.session is not None and not start.full
        plans = [_plan(partitions, request, topic, partition, where, now, reuse) for topic, partition, where in asked]
        while True:
            answerable = any(not _quiet(p) for p in plans)
            remaining_s = deadline - time.monotonic()
            if answerable or remaining_s <= 0:
                break
            await partitions.wait_for_data((p.driver for p in plans if p.driver is not None), remaining_s)
            # Only a partition that changed can plan differently: the others keep their plan.
            now = now_ms()
            plans = [p if p.driver is None or p.driver.changes == p.changes
                     else _plan(partitions, request, p.topic, p.partition, p.where, now) for p in plans]
    finally:
        metrics.FETCH_PURGATORY.dec()
    return _respond(request, plans, start, response)


def _asked(request: broker_pb2.FetchRequest, session: FetchSession | None) -> list[tuple[str, int, object]]:
    """(topic, partition, where to read) for each partition to fetch: the session's, or the request's."""
    if session is not None:
        return [(topic, partition, asked) for (topic, partition), asked in session.partitions.items()]
    return [(topic.topic, asked.partition, asked) for topic in request.topics for asked in topic.partitions]


class Planned(NamedTuple):
    driver: PartitionDriver | None  # None: this broker hosts no replica of the partition
    topic: str
    partition: int
    where: object  # where to read: the request's FetchPartition or the session's SessionPartition
    plan: FetchPlan
    changes: int  # the driver's change count when planned
    planned_ms: int


def _quiet(planned: Planned) -> bool:
    """Nothing to answer: no records, no error, no divergence."""
    plan = planned.plan
    return not plan.has_data and plan.error == ErrorCode.NONE and plan.diverging_epoch is None


def _plan(partitions: Partitions, request: broker_pb2.FetchRequest, topic: str, partition: int, where,
          now: int, reuse: bool = False) -> Planned:
    """The core's plan for one partition; with `reuse`, a session's last plan when it still holds.

    A session partition that the request does not name (the follower's position
    is unchanged) and that has not changed since its last quiet plan would plan
    the same again: the follower asks for the leader's log end offset, which
    keeps it caught up. It is planned afresh at least every SESSION_REPLAN_MS,
    so that a leader still retries a follower's way back into the ISR.
    """
    driver = partitions.by_name.get((topic, partition))
    if reuse:
        last = where.last_plan
        if (last is not None and last.driver is driver and driver is not None and driver.changes == last.changes
                and now - last.planned_ms < SESSION_REPLAN_MS and _quiet(last)):
            return last
    if driver is None:
        planned = Planned(None, topic, partition, where, FetchPlan(ErrorCode.NOT_LEADER_OR_FOLLOWER), 0, now)
    else:
        plan = driver.replica.handle_fetch(
            FetchRequest(
                replica_id=request.replica_id,
                fetch_offset=where.fetch_offset,
                max_bytes=where.partition_max_bytes or request.max_bytes,
                last_fetched_epoch=where.last_fetched_epoch,
                current_leader_epoch=where.current_leader_epoch,
                replica_epoch=request.replica_epoch,
                max_wait_ms=request.max_wait_ms,
            ),
            now,
        )
        if request.replica_id != CONSUMER_REPLICA_ID:
            partitions.apply(driver, now)  # the HW may have moved: complete producers
        planned = Planned(driver, topic, partition, where, plan, driver.changes, now)
    if isinstance(where, SessionPartition):
        where.last_plan = planned
    return planned


def _respond(request: broker_pb2.FetchRequest, plans: list[Planned], start: SessionStart,
             response: broker_pb2.FetchResponse) -> broker_pb2.FetchResponse:
    response.error_code = int(ErrorCode.NONE)
    response.session_id = start.session.session_id if start.session is not None else 0
    budget = request.max_bytes if request.max_bytes > 0 else 1 << 30
    topics: dict[str, broker_pb2.FetchTopicResponse] = {}
    for driver, topic, partition, where, plan, *_ in plans:
        records = b""
        error, error_message = plan.error, plan.error.name if plan.error != ErrorCode.NONE else ""
        if plan.has_data and budget > 0:
            read = driver.log.read(plan.read_offset, min(plan.max_bytes, budget), max_offset=plan.max_offset)
            if read.error != ErrorCode.NONE:
                error, error_message = read.error, f"cannot read offset {plan.read_offset}: {read.error.name}"
            else:
                records = read.records
        if start.session is not None:
            # In an incremental answer a partition with nothing new is left out; either way the
            # session notes what the follower has now been told.
            if not (start.full or records or error != ErrorCode.NONE or plan.diverging_epoch is not None
                    or where.worth_answering(plan.high_watermark, plan.log_start_offset)):
                continue
            where.told(plan.high_watermark, plan.log_start_offset)
        topic_response = topics.get(topic)
        if topic_response is None:
            topic_response = topics[topic] = response.topics.add(topic=topic)
        result = topic_response.partitions.add(
            partition=partition, error_code=int(error), high_watermark=plan.high_watermark,
            last_stable_offset=plan.high_watermark, log_start_offset=plan.log_start_offset,
            preferred_read_replica=-1, error_message=error_message,
        )
        if plan.diverging_epoch is not None:
            result.diverging_epoch.epoch = plan.diverging_epoch.epoch
            result.diverging_epoch.end_offset = plan.diverging_epoch.end_offset
        if records:
            result.records = records
            budget -= len(records)
            metrics.BYTES_OUT.labels(topic).inc(len(records))
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
