"""One task's read: a range of one partition, fetched straight from its leader as Arrow batches.

The task asks the metadata service who leads the partition and fetches from
that broker; NOT_LEADER_OR_FOLLOWER, a fenced epoch or a lost connection
refresh the metadata and the fetch goes again, to the new leader, until the
read's deadline (`pollTimeoutMs`) passes without an answer. One fetch is
always in flight while the last answer is turned into Arrow, so the network
and the decoding overlap.

Offsets the log no longer has are data loss: below the log start offset
(retention deleted them) or past a log end that went back (an unclean leader
election truncated it). With failOnDataLoss the task fails naming the
partition and the range; without it, it logs them and goes on (from the log
start, or stops at the log end).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc

from replog.client.broker_requests import fetch_request, partition_results
from replog.client.errors import ClientError
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.retry import STALE_METADATA, backoff_ms, error_code_for_status
from replog.core.errors import ErrorCode
from replog.core.offset_ranges import LostRange, lost_below_start, lost_past_end
from replog.core.topic_partition import TopicPartition
from replog.rpc.channels import ClientSecurity
from replog.rpc.request_stream import StreamError
from replog.spark.arrow import ColumnBuilder, checked_headers, visible_batches

log = logging.getLogger("replog.spark")

FETCH_MAX_BYTES = 16 << 20  # per answer: few, large calls (DESIGN §12)
FETCH_MAX_WAIT_MS = 500
RETRY_BACKOFF_MS = 100
REQUEST_TIMEOUT_MS = 30_000
# How long a log end below the range's end may stay there before the missing offsets count as
# truncated: a new leader's high watermark catches up with the old one within a few follower fetches.
TRUNCATION_GRACE_S = 10.0


class DataLossError(ClientError):
    """Offsets a query meant to read are gone (failOnDataLoss=true)."""

    def __init__(self, lost: LostRange) -> None:
        super().__init__(f"{lost}; set failOnDataLoss=false to go on without them", ErrorCode.OFFSET_OUT_OF_RANGE)
        self.lost = lost


@dataclass(frozen=True)
class ReadSettings:
    isolation_level: str = "read_uncommitted"
    include_headers: bool = False
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000


@dataclass(frozen=True)
class _Answer:
    code: ErrorCode
    records: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]


class PartitionReader:
    """Reads ranges of partitions from their leaders; one per task (it owns an I/O thread)."""

    def __init__(self, bootstrap: str, settings: ReadSettings, security: ClientSecurity | None = None) -> None:
        self._settings = settings
        self._io = IoThread("replog-spark-fetch")
        self._channels = Channels(security)
        self._metadata = MetadataManager(parse_bootstrap(bootstrap), self._channels,
                                         request_timeout_ms=REQUEST_TIMEOUT_MS, retry_backoff_ms=RETRY_BACKOFF_MS)
        self._rng = random.Random()

    def read(self, tp: TopicPartition, start: int, until: int) -> Iterator:
        """Arrow batches of the records at offsets [start, until) of `tp`."""
        builder = ColumnBuilder(tp.topic, tp.partition, include_headers=self._settings.include_headers)
        committed = self._settings.isolation_level == "read_committed"
        position = start
        stuck_since: float | None = None
        pending = self._fetch(tp, position)
        try:
            while position < until:
                answer = pending.result()
                if answer.code is ErrorCode.OFFSET_OUT_OF_RANGE:
                    position, stuck_since = self._out_of_range(tp, position, until, answer, stuck_since)
                    if position < until:
                        pending = self._fetch(tp, position)
                    continue
                view = memoryview(answer.records)
                headers = checked_headers(view)
                next_position = max([position] + [h.next_offset for h in headers])
                if next_position < until:
                    pending = self._fetch(tp, next_position)  # in flight while this answer is decoded
                if headers:
                    stuck_since = None
                    lso = answer.last_stable_offset if committed else None
                    batch = builder.build(view, visible_batches(view, headers, read_committed_lso=lso,
                                                                aborted=answer.aborted), position, until)
                    if batch is not None:
                        yield batch
                    position = next_position
                    continue
                log_end = answer.last_stable_offset if committed else answer.high_watermark
                position, stuck_since = self._below_end(tp, position, until, log_end, stuck_since)
                if position < until:
                    pending = self._fetch(tp, position)
        finally:
            pending.cancel()

    def _out_of_range(self, tp, position, until, answer: _Answer, stuck_since):
        lost = lost_below_start(tp, position, answer.log_start_offset)
        if lost is not None:
            self._lose(lost)
            return min(answer.log_start_offset, until), None
        log_end = answer.last_stable_offset if self._settings.isolation_level == "read_committed" \
            else answer.high_watermark
        time.sleep(RETRY_BACKOFF_MS / 1000)  # the leader answers at once: do not spin
        return self._below_end(tp, position, until, log_end, stuck_since)

    def _below_end(self, tp, position, until, log_end, stuck_since):
        """No records at `position`: wait for the log to reach it, or call what is missing truncated."""
        now = time.monotonic()
        if stuck_since is None:
            return position, now
        if now - stuck_since < TRUNCATION_GRACE_S:
            return position, stuck_since
        lost = lost_past_end(tp, until, max(log_end, position))
        if lost is None:
            return position, stuck_since
        self._lose(lost)
        return until, None

    def _lose(self, lost: LostRange) -> None:
        if self._settings.fail_on_data_loss:
            raise DataLossError(lost)
        log.warning("%s; going on without them (failOnDataLoss=false)", lost)

    # -- on the I/O loop -----------------------------------------------------------------------

    def _fetch(self, tp: TopicPartition, offset: int) -> concurrent.futures.Future[_Answer]:
        return self._io.submit(self._fetch_until_answered(tp, offset))

    async def _fetch_until_answered(self, tp: TopicPartition, offset: int) -> _Answer:
        """One partition's fetch at its current leader, following leader changes until the deadline."""
        deadline = time.monotonic() + self._settings.poll_timeout_ms / 1000
        attempt = 0
        problem = "no leader is known"
        while True:
            metadata = self._metadata.current
            leader = metadata.leader_of(tp)
            if leader < 0:
                metadata = await self._refresh(tp)
                leader = metadata.leader_of(tp)
            if leader >= 0:
                answer, problem = await self._ask(leader, metadata, tp, offset)
                if answer is not None:
                    return answer
            attempt += 1
            wait_s = backoff_ms(attempt, RETRY_BACKOFF_MS, jitter=self._rng.random()) / 1000
            if time.monotonic() + wait_s >= deadline:
                raise ClientError(f"could not read {tp} at offset {offset} within "
                                  f"{self._settings.poll_timeout_ms} ms (pollTimeoutMs): {problem}",
                                  ErrorCode.REQUEST_TIMED_OUT)
            await asyncio.sleep(wait_s)
            await self._refresh(tp)

    async def _ask(self, leader: int, metadata, tp: TopicPartition, offset: int) -> tuple[_Answer | None, str]:
        message = fetch_request([(tp, metadata.leader_epoch_of(tp), offset)], max_wait_ms=FETCH_MAX_WAIT_MS,
                                min_bytes=1, max_bytes=FETCH_MAX_BYTES, partition_max_bytes=FETCH_MAX_BYTES,
                                isolation_level=self._settings.isolation_level)
        address = metadata.brokers[leader]
        try:
            response = (await self._channels.broker_stream(address, "FetchStream").request(
                message, (REQUEST_TIMEOUT_MS + FETCH_MAX_WAIT_MS) / 1000)).response
        except (StreamError, grpc.aio.AioRpcError) as error:
            code = error_code_for_status(error.code())
            detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
            if not code.retriable:
                raise ClientError(f"reading {tp}: {detail}", code) from None
            return None, detail
        result = partition_results(response).get(tp)
        if result is None:
            return None, f"broker {leader} left {tp} out of its answer ({response.error_message})"
        code = ErrorCode.of(result.error_code)
        if code in (ErrorCode.NONE, ErrorCode.OFFSET_OUT_OF_RANGE):
            return _Answer(code, result.records, result.high_watermark, result.last_stable_offset,
                           result.log_start_offset,
                           tuple((a.producer_id, a.first_offset) for a in result.aborted_transactions)), ""
        detail = f"broker {leader} answered {code.name} for {tp}: {result.error_message}"
        if code in STALE_METADATA or code.retriable:
            return None, detail
        raise ClientError(f"reading {tp}: {detail}", code)

    async def _refresh(self, tp: TopicPartition):
        try:
            return await self._metadata.refresh([tp.topic])
        except ClientError as error:
            log.info("metadata refresh for %s failed: %s", tp, error)
            return self._metadata.current

    def close(self) -> None:
        try:
            self._io.run(self._channels.close(), 10, what="closing the reader's connections")
        finally:
            self._io.stop()
