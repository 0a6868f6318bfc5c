"""The group coordinators this broker runs: one per partition of `__consumer_offsets` it leads.

The shards' loading, leadership and writes are `CoordinatorShards`'. A group
shard replays every record of its partition; the offsets a transaction commits
(TxnOffsetCommit) are kept pending per producer until a COMMIT marker on the
partition makes them visible, or an ABORT drops them, live and on replay alike.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from replog.broker import metrics
from replog.broker.coordinator_shards import (
    CoordinatorError,
    CoordinatorShards,
    Shard,
    ShardState,
    coordinator_error,
)
from replog.broker.partitions import Partitions, now_ms
from replog.broker.produce import verify
from replog.broker.replicas import wall_ms
from replog.core.errors import ErrorCode
from replog.core.group import records as rec
from replog.core.group.coordinator import GroupCoordinatorShard
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.group.requests import (
    AssignmentChanged,
    Event,
    GroupConfig,
    GroupEpochBumped,
    GroupStable,
    MemberJoined,
    MemberRemoved,
    PartitionError,
    Result,
    TopicsImage,
    TxnCommitRequest,
)
from replog.core.partition_driver import PartitionDriver
from replog.core.producer_state import ProducerAppend, last_sequence, next_sequence
from replog.core.topic_partition import TopicPartition
from replog.core.txn.markers import TxnMarker
from replog.protocol import encode_batch
from replog.protocol.batch import DecodedBatch
from replog.protocol.control import decode_marker
from replog.rpc import logs

log = logging.getLogger("replog.broker")

T = TypeVar("T")

TICK_INTERVAL_S = 0.25

__all__ = ["CoordinatorError", "GroupCoordinators"]


def _transactional_batch(driver: PartitionDriver, request: TxnCommitRequest,
                         records: tuple[rec.GroupRecord, ...]) -> tuple[bytes, ProducerAppend]:
    """The records as one transactional batch of the producer's, numbered after the producer's last batch
    on the partition at this epoch (from 0 at a new epoch), so that the leader's sequence check passes."""
    entry = driver.replica.producer(request.producer_id)
    first = 0
    if entry is not None and entry.epoch == request.producer_epoch and entry.batches:
        first = next_sequence(entry.last_sequence)
    data = encode_batch([record.encode() for record in records], producer_id=request.producer_id,
                        producer_epoch=request.producer_epoch, base_sequence=first, transactional=True)
    return data, ProducerAppend(request.producer_id, request.producer_epoch, first,
                                last_sequence(first, len(records)), transactional=True)


class GroupCoordinators(CoordinatorShards[GroupCoordinatorShard]):
    topic = OFFSETS_TOPIC
    kind = "group"

    def __init__(self, partitions: Partitions, config: GroupConfig, retention_check_interval_ms: int,
                 commit_timeout_ms: int) -> None:
        super().__init__(partitions, commit_timeout_ms, TICK_INTERVAL_S)
        self.config = config
        self._retention_check_interval_s = retention_check_interval_ms / 1000
        self._last_retention_check = time.monotonic()
        self._epoch_bumped_at: dict[str, float] = {}

    # -- CoordinatorShards ------------------------------------------------------------------------

    def new_core(self, driver: PartitionDriver) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(self.config)

    def replay_batch(self, shard: Shard[GroupCoordinatorShard], batch: DecodedBatch) -> int:
        if batch.is_control:
            marker = decode_marker(batch)
            if marker is not None:
                shard.core.complete_transaction(marker.producer_id, marker.commit)
            return 0
        applied = 0
        for record in batch.records:
            if record.key is None:
                continue
            try:
                decoded = rec.decode(record.key, record.value)
            except rec.RecordError as error:
                log.error("%s: skipping a record that is not a group record: %s", shard.driver.name, error)
                continue
            if batch.is_transactional:
                shard.core.replay_transactional(batch.producer_id, decoded)
            else:
                shard.core.replay(decoded)
            applied += 1
        return applied

    def loaded(self, shard: Shard[GroupCoordinatorShard]) -> None:
        shard.core.loaded(now_ms(), wall_ms())

    def describe(self, shard: Shard[GroupCoordinatorShard]) -> str:
        return f"{len(shard.core.groups)} groups"

    # -- operations -------------------------------------------------------------------------------

    async def run(self, group_id: str, operation: Callable[[GroupCoordinatorShard], Result[T]]) -> T:
        """Run an operation on the group's shard and answer once its records are committed."""
        shard = self.shard_of(group_id)
        result = operation(shard.core)
        self._report(result.events)
        error = await self.write(shard, result.records)
        if error != ErrorCode.NONE:
            raise CoordinatorError(*coordinator_error(error, self.kind))
        return result.response

    def read(self, group_id: str, query: Callable[[GroupCoordinatorShard], T]) -> T:
        return query(self.shard_of(group_id).core)

    # -- offsets committed in transactions ------------------------------------------------------------

    async def commit_transactional(self, request: TxnCommitRequest,
                                   topics: TopicsImage) -> dict[TopicPartition, PartitionError]:
        """TxnOffsetCommit: the offsets go into the group's partition as one transactional batch of the
        producer's (verified with the transaction coordinator first, KIP-890, like any transactional write),
        pending until the transaction's marker lands here. Answered once the batch is committed."""
        shard = self.shard_of(request.group_id)
        result = shard.core.commit_transactional_offsets(request, topics, wall_ms())
        if not result.records:
            return result.response
        driver = shard.driver
        producer = ProducerAppend(request.producer_id, request.producer_epoch, 0, 0, transactional=True)
        if driver.replica.needs_verification(producer):
            error, reason = await verify(self._partitions, driver, request.transactional_id, producer)
            if error != ErrorCode.NONE:
                raise CoordinatorError(*coordinator_error(error, self.kind, reason))
            shard = self.shard_of(request.group_id)  # still this broker's, after the wait?
            driver = shard.driver
        data, producer = _transactional_batch(driver, request, result.records)
        log_end_offset = driver.log.log_end_offset
        waiter = self.submit(shard, data, len(result.records), producer)
        if driver.log.log_end_offset > log_end_offset:  # appended: the leader appends at once, or refuses
            for record in result.records:
                shard.core.replay_transactional(request.producer_id, record)
            log.info("group %s: %d offsets pending in transactional id %r (producer %d epoch %d)", request.group_id,
                     len(result.records), request.transactional_id, request.producer_id, request.producer_epoch,
                     extra=logs.fields("txn_offsets_pending", group=request.group_id,
                                       transactional_id=request.transactional_id, producer_id=request.producer_id,
                                       producer_epoch=request.producer_epoch))
        completion = await waiter
        if completion.error != ErrorCode.NONE:
            raise CoordinatorError(*coordinator_error(completion.error, self.kind, completion.message))
        return result.response

    def marker_appended(self, driver: PartitionDriver, marker: TxnMarker) -> None:
        """A marker landed on a partition led here: on an offsets partition, it ends the producer's pending
        offsets (a shard still loading reads the marker from the log instead)."""
        if driver.topic != OFFSETS_TOPIC:
            return
        shard = self._shards.get(driver.partition)
        if shard is None or shard.driver is not driver or shard.state is not ShardState.ACTIVE:
            return
        count = shard.core.complete_transaction(marker.producer_id, marker.commit)
        if count:
            log.info("%s: producer %d's transaction %s: %d pending offsets %s", driver.name, marker.producer_id,
                     "committed" if marker.commit else "aborted", count,
                     "committed" if marker.commit else "dropped",
                     extra=logs.fields("txn_offsets_completed", topic=driver.topic, partition=driver.partition,
                                       producer_id=marker.producer_id))

    # -- time ---------------------------------------------------------------------------------

    def tick(self) -> None:
        expire = time.monotonic() - self._last_retention_check >= self._retention_check_interval_s
        if expire:
            self._last_retention_check = time.monotonic()
        for shard in self.active_shards():
            result = shard.core.tick(now_ms(), wall_ms())
            if expire:
                expired = shard.core.expire_offsets(wall_ms())
                result = Result(None, result.records + expired.records, result.events + expired.events)
            if result.records:
                self._report(result.events)
                # Handed to the partition now, in the step that decided them; only the wait is a task.
                submitted = self.submit_records(shard, result.records)
                asyncio.get_running_loop().create_task(self.completed(shard, submitted))
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
        for core in self.all_cores():
            for group in core.groups.values():
                members[group.group_id] = len(group.members)
                states[group.group_id] = int(group.state)
        metrics.set_group_gauges(members, states)


def _names(partitions) -> str:
    return "[" + ", ".join(str(tp) for tp in sorted(partitions)) + "]" if partitions else "[]"
