"""The coordinators a broker runs over an internal topic: one shard per partition of it that the broker leads.

The group coordinator (`__consumer_offsets`) and the transaction coordinator
(`__transaction_state`) share this loop. When this broker becomes leader of a
partition of the topic it replays the partition into a new shard (LOADING:
requests for its keys are answered COORDINATOR_LOAD_IN_PROGRESS), waits until
the high watermark covers what it replayed, so that it acts only on what is
committed, then serves them (ACTIVE); when it stops leading it drops the shard,
and its keys' requests are answered NOT_COORDINATOR. A load that fails (a bug,
a read error: never what the log holds, which the cores take as it is) is
logged as an ERROR with its traceback and started again after a backoff.

Every operation runs on the broker's loop: the shard's core decides and
applies at once, its records are handed to the partition (acks=all) in the
same step, so that the log holds the decisions in the order they were made,
and the answer goes out once they are committed. A write that the log refused
leaves memory ahead of the log: the group coordinator replays its shard again
at once; the transaction coordinator's core takes the ids concerned back to
their last records written (`reload_after_refused_write`).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.core.errors import ErrorCode
from replog.core.key_placement import partition_for
from replog.core.messages import ACKS_ALL, CompleteProduce, ProduceRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import ProducerAppend
from replog.core.topic_partition import TopicPartition
from replog.protocol import encode_batch, iter_batches
from replog.protocol.batch import DecodedBatch
from replog.rpc import logs

log = logging.getLogger("replog.broker")

C = TypeVar("C")

LOAD_READ_BYTES = 1 << 20
# How long a loading shard waits at a time for the high watermark to cover what it replayed.
LOAD_HIGH_WATERMARK_WAIT_S = 0.5
# A load that failed starts again after this backoff, doubled at each failure up to the maximum.
LOAD_RETRY_BACKOFF_S = 0.5
LOAD_RETRY_BACKOFF_MAX_S = 10.0
# Records of one operation are written in batches of about this size (the topics' max.message.bytes is 1 MiB).
WRITE_BATCH_BYTES = 512 * 1024
# Errors of an append that left nothing in the log: the shard's memory is ahead of it.
NOT_APPENDED = frozenset({ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.CORRUPT_MESSAGE,
                          ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


class ShardState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


class Encodable(Protocol):
    def encode(self) -> tuple[bytes, bytes | None]: ...


# A batch of records handed to the partition, and the future of the partition's answer to it.
Submitted = tuple[list[Encodable], "asyncio.Future[CompleteProduce]"]


@dataclass
class Shard(Generic[C]):
    partition: int
    driver: PartitionDriver
    leader_epoch: int
    state: ShardState
    core: C
    loader: asyncio.Task[None] | None = None
    load_attempt: int = 0  # loads of this leadership that failed before this one


class _ReadFailed(Exception):
    """The partition's log could not be read while loading."""


class CoordinatorError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class CoordinatorShards(Generic[C]):
    """The shards of one internal topic. A subclass says what a shard's core is and how it replays a batch."""

    topic: str  # the internal topic
    kind: str  # what its keys name, for messages: "group", "transactional id"
    # Replay the shard again after a write the log refused (its core has no other way back to the log).
    reload_after_refused_write = True

    def __init__(self, partitions: Partitions, write_timeout_ms: int, tick_interval_s: float) -> None:
        self._partitions = partitions
        self._write_timeout_ms = write_timeout_ms
        self._tick_interval_s = tick_interval_s
        self._shards: dict[int, Shard[C]] = {}
        self._ticker: asyncio.Task[None] | None = None
        # Each series is served from the start, at 0: a first failure then counts as an increase.
        metrics.COORDINATOR_LOAD_FAILURES.labels(self.topic)
        for error in NOT_APPENDED:
            metrics.COORDINATOR_WRITES_REFUSED.labels(self.topic, error.name)

    # -- what a subclass provides -------------------------------------------------------------

    def new_core(self, driver: PartitionDriver) -> C:
        raise NotImplementedError

    def replay_batch(self, shard: Shard[C], batch: DecodedBatch) -> int:
        """Apply one batch of the partition to the loading shard's core; how many records it applied."""
        raise NotImplementedError

    def loaded(self, shard: Shard[C]) -> None:
        """The shard is replayed and its high watermark covers the replay: it is ACTIVE from now on."""

    def describe(self, shard: Shard[C]) -> str:
        """What the shard holds, for the log: "12 groups"."""
        raise NotImplementedError

    def tick(self) -> None:
        """Every tick_interval_s, on the loop."""

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        for shard in list(self._shards.values()):
            self._unload(shard, "the broker stops")

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self._tick_interval_s)
            self.tick()

    # -- leadership of the topic's partitions ---------------------------------------------------

    def leadership_changed(self, driver: PartitionDriver) -> None:
        """A partition of the topic changed role here: load it as its new leader, or unload."""
        shard = self._shards.get(driver.partition)
        if shard is not None and (shard.driver is not driver or not driver.is_leader
                                  or shard.leader_epoch != driver.replica.leader_epoch):
            self._unload(shard, "its partition's leadership changed")
            shard = None
        if shard is None and driver.is_leader:
            self._load(driver)

    def _load(self, driver: PartitionDriver, attempt: int = 0) -> None:
        shard = Shard(driver.partition, driver, driver.replica.leader_epoch, ShardState.LOADING, self.new_core(driver),
                      load_attempt=attempt)
        self._shards[driver.partition] = shard
        shard.loader = asyncio.get_running_loop().create_task(self._loader(shard))

    async def _loader(self, shard: Shard[C]) -> None:
        """Load the shard; a load that fails is logged and started again, in a new shard, after a backoff: a
        shard never stays LOADING because its loader died."""
        try:
            if shard.load_attempt:
                await asyncio.sleep(load_backoff_s(shard.load_attempt))
                if not self.is_current(shard):
                    return
            await self._replay(shard)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 -- whatever it was, the shard must not stay LOADING
            metrics.COORDINATOR_LOAD_FAILURES.labels(self.topic).inc()
            log.error("%s: %s coordinator failed to load (attempt %d): %s; it loads again in %.1f s",
                      shard.driver.name, self.kind, shard.load_attempt + 1, error,
                      load_backoff_s(shard.load_attempt + 1), exc_info=not isinstance(error, _ReadFailed),
                      extra=logs.fields("coordinator_load_failed", topic=self.topic, partition=shard.partition))
            if self.is_current(shard):
                del self._shards[shard.partition]
                if shard.driver.is_leader and shard.driver.replica.leader_epoch == shard.leader_epoch:
                    self._load(shard.driver, shard.load_attempt + 1)

    async def _replay(self, shard: Shard[C]) -> None:
        """Replay the partition up to its log end, until the high watermark covers it; then the shard is ACTIVE.

        The end is read again after every await: what lands meanwhile (a marker) is replayed too, and
        nothing lands between the last check and the shard going ACTIVE."""
        started = time.monotonic()
        driver = shard.driver
        offset, records = driver.log.log_start_offset, 0
        while True:
            while offset < driver.log.log_end_offset:
                read = driver.log.read(offset, LOAD_READ_BYTES, max_offset=driver.log.log_end_offset)
                if read.error != ErrorCode.NONE or not read.records:
                    raise _ReadFailed(f"offset {offset} could not be read ({read.error.name})")
                for batch in iter_batches(read.records):
                    records += self.replay_batch(shard, batch)
                    offset = batch.last_offset + 1
                await asyncio.sleep(0)  # a large partition does not hold the broker's loop
                if self._shards.get(shard.partition) is not shard:
                    return  # unloaded meanwhile
            if driver.replica.high_watermark >= offset:
                break
            await self._partitions.wait_for_data([driver], LOAD_HIGH_WATERMARK_WAIT_S)
            if self._shards.get(shard.partition) is not shard:
                return
        shard.state = ShardState.ACTIVE
        self.loaded(shard)
        log.info("%s: %s coordinator loaded %d records, %s, in %.3f s (leader epoch %d)", driver.name, self.kind,
                 records, self.describe(shard), time.monotonic() - started, shard.leader_epoch)

    def _unload(self, shard: Shard[C], why: str) -> None:
        if self._shards.get(shard.partition) is shard:
            del self._shards[shard.partition]
        if shard.loader is not None:
            shard.loader.cancel()
        log.info("%s: %s coordinator unloaded (%s): %s go to the partition's new leader", shard.driver.name,
                 self.kind, why, self.describe(shard))

    def reload(self, shard: Shard[C], why: str) -> None:
        log.warning("%s: %s coordinator replays its partition again: %s", shard.driver.name, self.kind, why)
        self._unload(shard, why)
        if shard.driver.is_leader:
            self._load(shard.driver)

    def is_current(self, shard: Shard[C]) -> bool:
        return self._shards.get(shard.partition) is shard

    # -- finding a key's shard ------------------------------------------------------------------

    def partition_of(self, key: str) -> int:
        count = self._partitions.metadata.partition_counts.get(self.topic, 0)
        return partition_for(key, count) if count else -1

    def shard_of(self, key: str) -> Shard[C]:
        """The active shard coordinating the key here; CoordinatorError when there is none."""
        partition = self.partition_of(key)
        shard = self._shards.get(partition)
        if shard is not None:
            driver = self._partitions.by_name.get(TopicPartition(self.topic, partition))
            if driver is not shard.driver or not driver.is_leader or driver.replica.leader_epoch != shard.leader_epoch:
                self._unload(shard, "its partition is led elsewhere now")
                shard = None
        if shard is None:
            raise CoordinatorError(ErrorCode.NOT_COORDINATOR,
                                   f"this broker does not coordinate {self.kind} {key!r} (partition {partition} of "
                                   f"{self.topic}); find its coordinator again")
        if shard.state is ShardState.LOADING:
            raise CoordinatorError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                   f"the coordinator of {self.kind} {key!r} is still loading; retry")
        return shard

    def active_shards(self) -> list[Shard[C]]:
        return [s for s in self._shards.values() if s.state is ShardState.ACTIVE]

    def all_cores(self) -> list[C]:
        return [s.core for s in self.active_shards()]

    def loading(self) -> list[int]:
        """The partitions this broker leads whose shards are still being replayed."""
        return sorted(p for p, s in self._shards.items() if s.state is ShardState.LOADING)

    # -- writing ----------------------------------------------------------------------------------

    async def write(self, shard: Shard[C], records: Iterable[Encodable]) -> ErrorCode:
        """Hand the records to the partition now and wait until they are committed (acks=all)."""
        return await self.completed(shard, self.submit_records(shard, records))

    def submit_records(self, shard: Shard[C], records: Iterable[Encodable]) -> list[Submitted]:
        """Hand the records to the partition's leader now, in batches (acks=all): called in the step that
        decided them, so that the log holds decisions in the order they were made. Each batch's records and
        the future of its answer. A batch the leader refuses at once (NOT_ENOUGH_REPLICAS) fails the ones
        after it unsent; with `reload_after_refused_write` the shard is replayed again at once, before
        anything else is decided on what the log does not hold."""
        submitted: list[Submitted] = []
        refused = ErrorCode.NONE
        for batch_records, data, count in _batches(records):
            if refused != ErrorCode.NONE:
                waiter: asyncio.Future[CompleteProduce] = asyncio.get_running_loop().create_future()
                waiter.set_result(CompleteProduce(None, refused))
            else:
                waiter = self.submit(shard, data, count)
                if waiter.done() and waiter.result().error in NOT_APPENDED:
                    refused = waiter.result().error
            submitted.append((batch_records, waiter))
        if refused != ErrorCode.NONE and self.reload_after_refused_write and self.is_current(shard):
            self.reload(shard, f"a write was refused ({refused.name})")
        return submitted

    async def completed(self, shard: Shard[C], submitted: list[Submitted]) -> ErrorCode:
        """Wait for the submitted batches' answers: NONE, or the first batch's error."""
        error = ErrorCode.NONE
        for _, waiter in submitted:
            completion = await waiter
            if completion.error != ErrorCode.NONE and error == ErrorCode.NONE:
                error = completion.error
        self.write_failed(shard, error)
        return error

    def write_failed(self, shard: Shard[C], error: ErrorCode) -> None:
        """A write of the shard's records failed: counted when the log refused it, and then, with
        `reload_after_refused_write`, the shard is replayed again."""
        if error in NOT_APPENDED:
            metrics.COORDINATOR_WRITES_REFUSED.labels(self.topic, error.name).inc()
            if self.reload_after_refused_write and self.is_current(shard):
                self.reload(shard, f"a write was refused ({error.name})")

    def submit(self, shard: Shard[C], data: bytes, count: int,
               producer: ProducerAppend | None = None) -> asyncio.Future:
        """Hand one batch to the partition's leader now (acks=all); the future of its CompleteProduce."""
        waiters = self._partitions.produce_waiters
        request_id = waiters.new_request_id()
        waiter = waiters.wait(request_id)
        shard.driver.produce(ProduceRequest(request_id, bytearray(data), count, ACKS_ALL, self._write_timeout_ms,
                                            producer=producer), now_ms())
        return waiter


def _batches(records: Iterable[Encodable]) -> list[tuple[list[Encodable], bytes, int]]:
    """The records as record batches of about WRITE_BATCH_BYTES each: each batch's records, bytes and count."""
    batches: list[tuple[list[Encodable], bytes, int]] = []
    batch: list[Encodable] = []
    rows: list[tuple[bytes, bytes | None]] = []
    size = 0
    for record in records:
        key, value = record.encode()
        batch.append(record)
        rows.append((key, value))
        size += len(key) + (len(value) if value is not None else 0)
        if size >= WRITE_BATCH_BYTES:
            batches.append((batch, encode_batch(rows), len(rows)))
            batch, rows, size = [], [], 0
    if rows:
        batches.append((batch, encode_batch(rows), len(rows)))
    return batches


def load_backoff_s(attempt: int) -> float:
    """How long a shard whose load failed `attempt` times waits before loading again."""
    return min(LOAD_RETRY_BACKOFF_S * 2 ** max(attempt - 1, 0), LOAD_RETRY_BACKOFF_MAX_S)


# A transactional write's (TxnOffsetCommit's) refusals, which the producer acts on as they are.
_TRANSACTION_ERRORS = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED,
                                 ErrorCode.INVALID_TXN_STATE, ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                                 ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})


def coordinator_error(error: ErrorCode, kind: str, reason: str = "") -> tuple[ErrorCode, str]:
    """What a failed write of a coordinator's records means to the client (as Kafka maps it); `reason` is
    what the refusal said, when it said more than its error."""
    if error in _TRANSACTION_ERRORS:
        return error, reason or f"the transactional write was refused: {error.name}"
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
        return ErrorCode.NOT_COORDINATOR, f"this broker stopped coordinating the {kind}; find its coordinator again"
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE, "the commit is too large for the offsets topic"
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the {kind}'s records could not be written ({error.name}); retry"
