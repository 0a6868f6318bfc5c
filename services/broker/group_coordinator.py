"""The group coordinators this broker runs: one per partition of `__consumer_offsets` it leads.

When this broker becomes leader of an offsets partition it replays the
partition into a new `GroupCoordinatorShard` (LOADING: requests for its groups
are answered COORDINATOR_LOAD_IN_PROGRESS), then serves them (ACTIVE); when it
stops leading it drops the shard, and its groups' requests are answered
NOT_COORDINATOR. Every operation runs on the broker's loop: the shard decides
and applies at once, then its records are appended to the partition with
acks=all, and the answer goes out once they are committed. A write that the
log refused leaves memory ahead of the log: the shard is replayed again.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from replog.broker import metrics
from replog.broker.partitions import Partitions, now_ms
from replog.broker.replicas import wall_ms
from replog.core.errors import ErrorCode
from replog.core.group import records as rec
from replog.core.group.coordinator import GroupCoordinatorShard
from replog.core.group.placement import OFFSETS_TOPIC, partition_for
from replog.core.group.requests import (
    AssignmentChanged,
    Event,
    GroupConfig,
    GroupEpochBumped,
    GroupStable,
    MemberJoined,
    MemberRemoved,
    Result,
)
from replog.core.messages import ACKS_ALL, ProduceRequest
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.protocol import encode_batch, iter_batches
from replog.rpc import logs

log = logging.getLogger("replog.broker")

T = TypeVar("T")

TICK_INTERVAL_S = 0.25
LOAD_READ_BYTES = 1 << 20
# Records of one operation are written in batches of about this size (the topic's
# max.message.bytes is 1 MiB).
WRITE_BATCH_BYTES = 512 * 1024
# Errors of an append that left nothing in the log: the shard's memory is ahead of it.
NOT_APPENDED = frozenset({ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.CORRUPT_MESSAGE,
                          ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


class ShardState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass
class _Shard:
    partition: int
    driver: PartitionDriver
    leader_epoch: int
    state: ShardState
    core: GroupCoordinatorShard
    loader: asyncio.Task[None] | None = None


class CoordinatorError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class GroupCoordinators:
    def __init__(self, partitions: Partitions, config: GroupConfig, retention_check_interval_ms: int,
                 commit_timeout_ms: int) -> None:
        self._partitions = partitions
        self.config = config
        self._retention_check_interval_s = retention_check_interval_ms / 1000
        self._commit_timeout_ms = commit_timeout_ms
        self._shards: dict[int, _Shard] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._epoch_bumped_at: dict[str, float] = {}

    def start(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        for shard in list(self._shards.values()):
            self._unload(shard, "the broker stops")

    # -- leadership of the offsets partitions ---------------------------------------------------

    def leadership_changed(self, driver: PartitionDriver) -> None:
        """A partition of __consumer_offsets changed role here: load it as its new leader, or unload."""
        shard = self._shards.get(driver.partition)
        if shard is not None and (shard.driver is not driver or not driver.is_leader
                                  or shard.leader_epoch != driver.replica.leader_epoch):
            self._unload(shard, "its partition's leadership changed")
            shard = None
        if shard is None and driver.is_leader:
            self._load(driver)

    def _load(self, driver: PartitionDriver) -> None:
        shard = _Shard(driver.partition, driver, driver.replica.leader_epoch, ShardState.LOADING,
                       GroupCoordinatorShard(self.config))
        self._shards[driver.partition] = shard
        shard.loader = asyncio.get_running_loop().create_task(self._replay(shard))

    async def _replay(self, shard: _Shard) -> None:
        started = time.monotonic()
        log_ = shard.driver.log
        offset, end, records = log_.log_start_offset, log_.log_end_offset, 0
        while offset < end:
            read = log_.read(offset, LOAD_READ_BYTES, max_offset=end)
            if read.error != ErrorCode.NONE or not read.records:
                log.error("%s: group coordinator could not read offset %d (%s); it stays unloaded",
                          shard.driver.name, offset, read.error.name)
                return
            for batch in iter_batches(read.records):
                for record in batch.records:
                    records += self._replay_record(shard, record.key, record.value)
                offset = batch.last_offset + 1
            await asyncio.sleep(0)  # a large partition does not hold the broker's loop
            if self._shards.get(shard.partition) is not shard:
                return  # unloaded meanwhile
        shard.core.loaded(now_ms(), wall_ms())
        shard.state = ShardState.ACTIVE
        log.info("%s: group coordinator loaded %d records, %d groups, in %.3f s (leader epoch %d)",
                 shard.driver.name, records, len(shard.core.list_groups()), time.monotonic() - started,
                 shard.leader_epoch)

    @staticmethod
    def _replay_record(shard: _Shard, key: bytes | None, value: bytes | None) -> int:
        if key is None:
            return 0
        try:
            shard.core.replay(rec.decode(key, value))
        except rec.RecordError as error:
            log.error("%s: skipping a record that is not a group record: %s", shard.driver.name, error)
            return 0
        return 1

    def _unload(self, shard: _Shard, why: str) -> None:
        if self._shards.get(shard.partition) is shard:
            del self._shards[shard.partition]
        if shard.loader is not None:
            shard.loader.cancel()
        log.info("%s: group coordinator unloaded (%s): its %d groups go to the partition's new leader",
                 shard.driver.name, why, len(shard.core.groups))

    def _reload(self, shard: _Shard, why: str) -> None:
        log.warning("%s: group coordinator replays its partition again: %s", shard.driver.name, why)
        self._unload(shard, why)
        if shard.driver.is_leader:
            self._load(shard.driver)

    # -- operations -------------------------------------------------------------------------------

    def partition_of(self, group_id: str) -> int:
        count = self._partitions.metadata.partition_counts.get(OFFSETS_TOPIC, 0)
        return partition_for(group_id, count) if count else -1

    def shard_of(self, group_id: str) -> _Shard:
        """The active shard coordinating the group here; CoordinatorError when there is none."""
        partition = self.partition_of(group_id)
        shard = self._shards.get(partition)
        if shard is not None:
            driver = self._partitions.by_name.get(TopicPartition(OFFSETS_TOPIC, partition))
            if driver is not shard.driver or not driver.is_leader or driver.replica.leader_epoch != shard.leader_epoch:
                self._unload(shard, "its partition is led elsewhere now")
                shard = None
        if shard is None:
            raise CoordinatorError(ErrorCode.NOT_COORDINATOR,
                                   f"this broker does not coordinate group {group_id!r} (partition {partition} of "
                                   f"{OFFSETS_TOPIC}); find its coordinator again")
        if shard.state is ShardState.LOADING:
            raise CoordinatorError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                   f"the coordinator of group {group_id!r} is still loading; retry")
        return shard

    async def run(self, group_id: str, operation: Callable[[GroupCoordinatorShard], Result[T]]) -> T:
        """Run an operation on the group's shard and answer once its records are committed."""
        shard = self.shard_of(group_id)
        result = operation(shard.core)
        self._report(result.events)
        error = await self._write(shard, result.records)
        if error != ErrorCode.NONE:
            raise CoordinatorError(*_coordinator_error(error))
        return result.response

    def read(self, group_id: str, query: Callable[[GroupCoordinatorShard], T]) -> T:
        return query(self.shard_of(group_id).core)

    def all_shards(self) -> list[GroupCoordinatorShard]:
        return [s.core for s in self._shards.values() if s.state is ShardState.ACTIVE]

    def loading(self) -> list[int]:
        """The offsets partitions this broker leads whose groups are still being replayed."""
        return sorted(p for p, s in self._shards.items() if s.state is ShardState.LOADING)

    async def _write(self, shard: _Shard, records: tuple[rec.GroupRecord, ...]) -> ErrorCode:
        if not records:
            return ErrorCode.NONE
        waiters = self._partitions.produce_waiters
        pending = []
        for data, count in _batches(records):
            request_id = waiters.new_request_id()
            waiter = waiters.wait(request_id)
            shard.driver.produce(ProduceRequest(request_id, bytearray(data), count, ACKS_ALL, self._commit_timeout_ms),
                                 now_ms())
            pending.append(waiter)
        error = ErrorCode.NONE
        for waiter in pending:
            completion = await waiter
            if completion.error != ErrorCode.NONE and error == ErrorCode.NONE:
                error = completion.error
        if error in NOT_APPENDED and self._shards.get(shard.partition) is shard:
            self._reload(shard, f"a write was refused ({error.name})")
        return error

    # -- time ---------------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        last_retention_check = time.monotonic()
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            expire = time.monotonic() - last_retention_check >= self._retention_check_interval_s
            if expire:
                last_retention_check = time.monotonic()
            for shard in [s for s in self._shards.values() if s.state is ShardState.ACTIVE]:
                result = shard.core.tick(now_ms(), wall_ms())
                if expire:
                    expired = shard.core.expire_offsets(wall_ms())
                    result = Result(None, result.records + expired.records, result.events + expired.events)
                if result.records:
                    self._report(result.events)
                    asyncio.get_running_loop().create_task(self._write(shard, result.records))
            self._update_gauges()

    # -- logs and metrics -------------------------------------------------------------------------

    def _report(self, events: tuple[Event, ...]) -> None:
        for event in events:
            if isinstance(event, AssignmentChanged):
                log.info("group %s: member %s at epoch %d gets %s, revokes %s, releases %s", event.group_id,
                         event.member_id, event.member_epoch, _names(event.gained), _names(event.revoking),
                         _names(event.released), extra=logs.fields("assignment_changed", group=event.group_id))
            elif isinstance(event, MemberJoined):
                log.info("group %s: member %s joined%s", event.group_id, event.member_id,
                         f" (instance {event.instance_id})" if event.instance_id else "",
                         extra=logs.fields("member_joined", group=event.group_id))
            elif isinstance(event, MemberRemoved):
                log.info("group %s: member %s removed: %s", event.group_id, event.member_id, event.reason,
                         extra=logs.fields("member_removed", group=event.group_id))
            elif isinstance(event, GroupEpochBumped):
                log.info("group %s: epoch %d (%s)", event.group_id, event.group_epoch, event.reason,
                         extra=logs.fields("rebalance_started", group=event.group_id))
                metrics.GROUP_REBALANCES.labels(event.group_id).inc()
                self._epoch_bumped_at.setdefault(event.group_id, time.monotonic())
            elif isinstance(event, GroupStable):
                started = self._epoch_bumped_at.pop(event.group_id, None)
                took = f" in {time.monotonic() - started:.3f} s" if started is not None else ""
                if started is not None:
                    metrics.GROUP_REBALANCE_SECONDS.observe(time.monotonic() - started)
                log.info("group %s: stable at epoch %d%s", event.group_id, event.group_epoch, took,
                         extra=logs.fields("group_stable", group=event.group_id))

    def _update_gauges(self) -> None:
        members: dict[str, int] = {}
        states: dict[str, int] = {}
        for core in self.all_shards():
            for group in core.groups.values():
                members[group.group_id] = len(group.members)
                states[group.group_id] = int(group.state)
        metrics.set_group_gauges(members, states)


def _batches(records: tuple[rec.GroupRecord, ...]) -> list[tuple[bytes, int]]:
    """The records encoded as record batches of about WRITE_BATCH_BYTES each."""
    batches, rows, size = [], [], 0
    for record in records:
        key, value = record.encode()
        rows.append((key, value))
        size += len(key) + (len(value) if value is not None else 0)
        if size >= WRITE_BATCH_BYTES:
            batches.append((encode_batch(rows), len(rows)))
            rows, size = [], 0
    if rows:
        batches.append((encode_batch(rows), len(rows)))
    return batches


def _coordinator_error(error: ErrorCode) -> tuple[ErrorCode, str]:
    """What a failed write means to the client (as Kafka maps it)."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
        return ErrorCode.NOT_COORDINATOR, "this broker stopped coordinating the group; find its coordinator again"
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE, "the commit is too large for the offsets topic"
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, f"the group's records could not be written ({error.name}); retry"


def _names(partitions) -> str:
    return "[" + ", ".join(str(tp) for tp in sorted(partitions)) + "]" if partitions else "[]"
