"""Fetch, ListOffsets and OffsetsForLeaderEpoch: the read side of a leader.

A fetch asks each partition's driver for a plan (which offsets it may read; a
follower's fetch also reports its position, which may move the HW), then reads
whole batches from the log (a read_committed consumer's below the last stable
offset, with the aborted transactions of the range from the `.txnindex`). With nothing to answer it long-polls: it is woken
by appends, HW moves and role changes of the partitions it reads, never by a
sleep loop, and then plans again only those. A follower's fetch may belong to a
fetch session (replog.core.fetch_session): then the session says which
partitions to read, every one of them is planned on every fetch (that is how
the leader hears the follower's position), and an incremental answer lists
only the partitions with something new.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import replace
from typing import NamedTuple

from replog.api.broker.v1 import broker_pb2
from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.fetch_session import EPOCH_MAX, FetchSessionCache, SessionStart
from replog.core.messages import CONSUMER_REPLICA_ID, FetchPlan, FetchRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.rpc.broker_convert import (
    add_fetch_partition,
    fill_epoch_end_offset,
    fill_listed_offset,
    forgotten_partitions,
    named_partitions,
)

log = logging.getLogger("replog.broker")

FETCH_WAIT_MS_MAX = 30_000
# Bounds the re-planning of one long-polling fetch: a wake-up per append of its partitions.
FETCH_WAKEUPS_MAX = 10_000


def reads_committed(isolation_level: int) -> bool:
    return isolation_level == broker_pb2.ISOLATION_LEVEL_READ_COMMITTED


def new_fetch_sessions() -> FetchSessionCache:
    """The leader's session cache, drawing session ids at random (KIP-227)."""
    rng = random.Random()
    sessions = FetchSessionCache(lambda: rng.randrange(1, EPOCH_MAX))
    metrics.FETCH_SESSIONS.set_function(lambda: len(sessions))  # read when scraped
    return sessions


class Planned(NamedTuple):
    key: TopicPartition
    driver: PartitionDriver | None  # None: this broker hosts no replica of the partition
    request: FetchRequest | None
    plan: FetchPlan
    changes: int  # the driver's change count when planned


async def handle_fetch(partitions: Partitions, sessions: FetchSessionCache, request: broker_pb2.FetchRequest,
                       response: broker_pb2.FetchResponse | None = None) -> broker_pb2.FetchResponse:
    """Answer a fetch, filling `response` when given (a stream's message, so that the records are not copied)."""
    response = broker_pb2.FetchResponse() if response is None else response
    named = named_partitions(request)
    start = sessions.start(request.replica_id, request.session_id, request.session_epoch, named,
                           forgotten_partitions(request), now_ms())
    _report_evictions(sessions)
    if start.error != ErrorCode.NONE:
        response.error_code = int(start.error)
        response.error_message = (f"fetch session {request.session_id} at epoch {request.session_epoch}: "
                                  f"{start.error.name}; start over with a full fetch")
        return response
    if start.session is not None and start.full:
        log.info("fetch session %d opened for broker %d", start.session_id, request.replica_id)
    asked = start.requests(named, request.replica_id, request.replica_epoch, request.max_wait_ms)
    if reads_committed(request.isolation_level):
        asked = {key: replace(fetch, read_committed=True) for key, fetch in asked.items()}
    deadline = time.monotonic() + min(max(request.max_wait_ms, 0), FETCH_WAIT_MS_MAX) / 1000
    now = now_ms()
    plans = [_plan(partitions, key, fetch, now) for key, fetch in asked.items()]
    held_s = time.perf_counter()
    for _ in range(FETCH_WAKEUPS_MAX):
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0 or any(not p.plan.quiet for p in plans):
            break
        await partitions.wait_for_data((p.driver for p in plans if p.driver is not None), remaining_s)
        # Only a partition that moved can plan differently: the others keep their plan.
        now = now_ms()
        plans = [p if p.driver is None or p.driver.changes == p.changes else _replan(p, now) for p in plans]
    fetcher = "FetchConsumer" if request.replica_id == CONSUMER_REPLICA_ID else "FetchFollower"
    metrics.REMOTE_TIME.labels(fetcher).observe(time.perf_counter() - held_s)
    return _respond(request, plans, start, response)


def _plan(partitions: Partitions, key: TopicPartition, fetch: FetchRequest, now: int) -> Planned:
    driver = partitions.by_name.get(key)
    if driver is None:
        return Planned(key, None, None, FetchPlan(partitions.metadata.not_hosted(key)), 0)
    return Planned(key, driver, fetch, driver.fetch(fetch, now), driver.changes)


def _replan(planned: Planned, now: int) -> Planned:
    driver = planned.driver
    return planned._replace(plan=driver.fetch(planned.request, now), changes=driver.changes)


def _respond(request: broker_pb2.FetchRequest, plans: list[Planned], start: SessionStart,
             response: broker_pb2.FetchResponse) -> broker_pb2.FetchResponse:
    response.error_code = int(ErrorCode.NONE)
    response.session_id = start.session_id
    budget = request.max_bytes if request.max_bytes > 0 else 1 << 30
    topics: dict[str, broker_pb2.FetchTopicResponse] = {}
    for key, driver, fetch, plan, _ in plans:
        records = b""
        error, error_message = plan.error, plan.error.name if plan.error != ErrorCode.NONE else ""
        if driver is not None and budget > 0:
            read = driver.read(plan, budget)
            if read is not None and read.error != ErrorCode.NONE:
                error, error_message = read.error, f"cannot read offset {plan.read_offset}: {read.error.name}"
            elif read is not None:
                records = read.records
        # In an incremental answer a partition with nothing new is left out.
        if not start.include(key, plan, has_news=bool(records) or error != plan.error):
            continue
        topic_response = topics.get(key.topic)
        if topic_response is None:
            topic_response = topics[key.topic] = response.topics.add(topic=key.topic)
        aborted = ()
        if records and fetch is not None and fetch.read_committed:
            aborted = driver.log.aborted_transactions(plan.read_offset, plan.max_offset)
        add_fetch_partition(topic_response, key.partition, plan, error, error_message, records, aborted)
        if records:
            budget -= len(records)
            metrics.BYTES_OUT.labels(key.topic).inc(len(records))
    return response


def _report_evictions(sessions: FetchSessionCache) -> None:
    for evicted in sessions.evicted:
        log.warning("%d fetch sessions kept, the most allowed: closed session %d of broker %d, used least recently",
                    len(sessions), evicted.session_id, evicted.replica_id)
    sessions.evicted.clear()


def handle_list_offsets(partitions: Partitions, request: broker_pb2.ListOffsetsRequest) -> broker_pb2.ListOffsetsResponse:
    response = broker_pb2.ListOffsetsResponse()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for asked in topic.partitions:
            result = topic_response.partitions.add(partition=asked.partition, timestamp_ms=-1, offset=-1,
                                                   leader_epoch=-1)
            key = TopicPartition(topic.topic, asked.partition)
            driver = partitions.by_name.get(key)
            if driver is None:
                error = partitions.metadata.not_hosted(key)
                result.error_code, result.error_message = int(error), error.name
                continue
            fill_listed_offset(result, driver.list_offsets(asked.current_leader_epoch, asked.timestamp_ms,
                                                           driver.log.offset_for_timestamp,
                                                           read_committed=reads_committed(request.isolation_level)))
    return response


def handle_offsets_for_leader_epoch(
    partitions: Partitions, request: broker_pb2.OffsetsForLeaderEpochRequest
) -> broker_pb2.OffsetsForLeaderEpochResponse:
    response = broker_pb2.OffsetsForLeaderEpochResponse()
    for topic in request.topics:
        topic_response = response.topics.add(topic=topic.topic)
        for asked in topic.partitions:
            result = topic_response.partitions.add(partition=asked.partition, leader_epoch=-1, end_offset=-1)
            key = TopicPartition(topic.topic, asked.partition)
            driver = partitions.by_name.get(key)
            if driver is None:
                error = partitions.metadata.not_hosted(key)
                result.error_code = int(error)
                result.error_message = "this broker hosts no replica of the partition"
                continue
            fill_epoch_end_offset(result, *driver.offsets_for_leader_epoch(asked.current_leader_epoch,
                                                                           asked.leader_epoch))
    return response
