"""The partitions this broker hosts, as the rest of the broker sees them.

All state is touched from the broker's asyncio loop only. Each partition's
rules live in its core (`PartitionReplica`) and its I/O order in the core's
`PartitionDriver`; this module composes the parts around them:
`HostedReplicas` (opening logs, finding drivers), the controller's fencing of
LeaderAndIsr and StopReplica, `AnswerWaiters` and `FetchWaiters`, the
`Ticker` (ticks, gauges, checkpoints, log cleanup), and the `PartitionSink`
through which drivers hand over messages, completions and events.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Iterable

from replog.broker import metrics
from replog.broker.checkpoints import write_snapshots
from replog.broker.gauges import update_gauges
from replog.broker.metadata_cache import MetadataCache
from replog.broker.replicas import HostedReplicas, TopicSettings, now_ms, wall_ms
from replog.broker.ticker import Duty, Ticker
from replog.broker.waiters import AnswerWaiters, FetchWaiters
from replog.core.errors import ErrorCode
from replog.core.messages import (
    CompleteDeleteRecords,
    CompleteProduce,
    Completion,
    IsrChanged,
    LogOp,
    PartitionState,
    ProposeIsr,
    SendFetch,
)
from replog.core.partition_driver import LogOpFailed, PartitionDriver
from replog.core.producer_state import ProducerAppend
from replog.core.replica import Role
from replog.core.topic_partition import TopicPartition
from replog.core.txn.markers import TxnMarker
from replog.rpc import logs

log = logging.getLogger("replog.broker")

CHECKPOINT_INTERVAL_S = 5.0
GAUGE_INTERVAL_S = 1.0

__all__ = ["Partitions", "TopicSettings", "now_ms"]

# The produce answer to a transactional batch's verification: its error, and what the error alone does not say.
# (transactional id, producer, partition) -> the produce answer; `producer.leader_add` asks for an add.
VerifyTransaction = Callable[[str, ProducerAppend, TopicPartition], Awaitable[tuple[ErrorCode, str]]]


async def _no_coordinator(transactional_id: str, producer: ProducerAppend,
                          key: TopicPartition) -> tuple[ErrorCode, str]:
    return ErrorCode.NOT_ENOUGH_REPLICAS, "the broker is still starting; retry"  # retriable


class Partitions:
    def __init__(
        self,
        broker_id: int,
        log_dirs: tuple[str, ...],
        topic_settings: Callable[[str], TopicSettings],
        send_fetch: Callable[[PartitionDriver, SendFetch], None],
        propose_isr: Callable[[PartitionDriver, ProposeIsr], None],
        cleanup_interval_ms: int = 300_000,
        # transaction.max.timeout.ms: a transaction open this long past it (and a buffer) is late.
        max_transaction_timeout_ms: int = 900_000,
        # Called when a hosted partition's role or leader epoch changes, or it stops.
        role_changed: Callable[[PartitionDriver], None] = lambda driver: None,
    ) -> None:
        self.broker_id = broker_id
        self._topic_settings = topic_settings
        self._send_fetch = send_fetch
        self._propose_isr = propose_isr
        self._role_changed = role_changed
        self.hosted = HostedReplicas(broker_id, log_dirs, self)
        self.controller_epoch = 0
        self.metadata = MetadataCache()
        # The live brokers UpdateMetadata last named (None before the first): each led partition's low watermark
        # waits for the followers on them.
        self._alive_brokers: frozenset[int] | None = None
        self.produce_waiters: AnswerWaiters[CompleteProduce] = AnswerWaiters(metrics.PRODUCE_PURGATORY)
        self.delete_waiters: AnswerWaiters[CompleteDeleteRecords] = AnswerWaiters(metrics.DELETE_RECORDS_PURGATORY)
        # Asks a transactional id's coordinator whether a partition is in the producer's ongoing
        # transaction (AddPartitionsToTxn, verify-only); the service sets it once it can reach one.
        self.verify_transaction: VerifyTransaction = _no_coordinator
        # Hears every marker a partition led here appended (the group coordinators complete the
        # offsets a transaction committed in __consumer_offsets).
        self.marker_appended: Callable[[PartitionDriver, TxnMarker], None] = lambda driver, marker: None
        self.verifications: dict[tuple[TopicPartition, int, int], asyncio.Future[tuple[ErrorCode, str]]] = {}
        self.fetch_waiters = FetchWaiters()
        self._checkpointing: asyncio.Task[None] | None = None
        # A log start DeleteRecords moved that the checkpoint files do not have yet, and what writes it.
        self._log_starts_moved = False
        self._log_start_writer: asyncio.Task[None] | None = None
        self._ticker = Ticker(self._tick, [
            Duty(GAUGE_INTERVAL_S, lambda: update_gauges(self.broker_id, self.hosted, now_ms(),
                                                         max_transaction_timeout_ms)),
            Duty(CHECKPOINT_INTERVAL_S, self._checkpoint_in_thread, ready=self._checkpoint_done),
            Duty(cleanup_interval_ms / 1000, lambda: self.clean_logs(wall_ms())),
        ])

    @property
    def by_name(self) -> dict[TopicPartition, PartitionDriver]:
        return self.hosted.by_name

    def not_led_here(self, key: TopicPartition) -> tuple[ErrorCode, str] | None:
        """Why a request that only the partition's leader answers gets no answer here; None when this broker
        leads it."""
        driver = self.by_name.get(key)
        if driver is not None and driver.replica.role is Role.LEADER:
            return None
        error = self.metadata.not_hosted(key) if driver is None else ErrorCode.NOT_LEADER_OR_FOLLOWER
        if error is ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return error, f"broker {self.broker_id} is not the leader of {key}"
        return error, f"{key} does not exist"

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self.hosted.start()
        self._ticker.start()

    async def close(self) -> None:
        self._ticker.stop()
        if self._log_start_writer is not None:
            await self._log_start_writer
        if self._checkpointing is not None:
            await self._checkpointing
        # Producers still waiting here (a leadership the controller's LeaderAndIsr has not taken
        # away yet, when the broker stops) are answered NOT_LEADER_OR_FOLLOWER now, and retry
        # with the new leader; left waiting, they held their partition until the server stopped.
        now = now_ms()
        for driver in self.hosted:
            driver.stop(now)
        self.write_checkpoints()
        for driver in self.hosted:
            driver.snapshot_producers()  # a clean restart reads no batch to know its producers
            driver.log.close()
        self.hosted.clear()

    # -- from the controller: fenced by its epoch -----------------------------------------

    def check_controller_epoch(self, controller_epoch: int) -> ErrorCode:
        """Kafka's fencing of controllers: a request from an older controller is refused."""
        if controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.controller_epoch = controller_epoch
        return ErrorCode.NONE

    def leader_and_isr(self, topic: str, partition: int, state: PartitionState) -> ErrorCode:
        key = TopicPartition(topic, partition)
        self.metadata.learn(((key, state.leader),))
        now = now_ms()
        driver = self.hosted.get(key)
        if driver is None:
            driver = self.hosted.open(key, self._topic_settings(topic), now)
            if self._alive_brokers is not None:
                driver.alive_brokers(self._alive_brokers)
        before = (driver.replica.role, driver.replica.leader_epoch)
        error = driver.leader_and_isr(state, now)
        if error != ErrorCode.NONE:
            log.warning("%s: LeaderAndIsr at leader epoch %d refused: %s", driver.name, state.leader_epoch,
                        error.name)
        if (driver.replica.role, driver.replica.leader_epoch) != before:
            self._role_changed(driver)  # who leads what moved: the group coordinators follow
        return error

    def alive_brokers(self, broker_ids: Iterable[int]) -> None:
        """UpdateMetadata's live brokers, told to every hosted partition."""
        alive = frozenset(broker_ids)
        if alive == self._alive_brokers:
            return
        self._alive_brokers = alive
        for driver in self.hosted:
            driver.alive_brokers(alive)

    def stop_replica(self, topic: str, partition: int, delete: bool) -> ErrorCode:
        driver = self.hosted.remove(TopicPartition(topic, partition))
        if driver is None:
            return ErrorCode.NONE
        driver.stop(now_ms())
        self._role_changed(driver)
        driver.log.close()
        if delete:
            shutil.rmtree(driver.log.directory, ignore_errors=True)
        log.info("%s stopped%s", driver.name, " and its log deleted" if delete else "")
        return ErrorCode.NONE

    def reconfigure(self, topic: str, settings: TopicSettings) -> int:
        """Give the topic's hosted partitions its changed config; returns how many there are."""
        drivers = [driver for driver in self.hosted if driver.topic == topic]
        for driver in drivers:
            driver.log.config = settings.log
            driver.reconfigure(settings.replica)
        return len(drivers)

    # -- PartitionSink: what the drivers hand over ------------------------------------------

    def send_fetch(self, driver: PartitionDriver, message: SendFetch) -> None:
        self._send_fetch(driver, message)

    def propose_isr(self, driver: PartitionDriver, message: ProposeIsr) -> None:
        self._propose_isr(driver, message)

    def complete(self, driver: PartitionDriver, completion: Completion) -> None:
        if isinstance(completion, CompleteDeleteRecords):
            self.delete_waiters.complete(completion)
        else:
            self.produce_waiters.complete(completion)

    def data_changed(self, driver: PartitionDriver) -> None:
        self.fetch_waiters.wake(driver.topic_partition)

    def isr_changed(self, driver: PartitionDriver, change: IsrChanged) -> None:
        if change.shrunk:
            metrics.ISR_SHRINKS.inc()
        if change.expanded:
            metrics.ISR_EXPANDS.inc()
        log.info("%s ISR %s -> %s (leader epoch %d, partition epoch %d)", driver.name, list(change.before),
                 list(change.after), driver.replica.leader_epoch, driver.replica.partition_epoch,
                 extra=logs.fields("isr_changed", topic=driver.topic, partition=driver.partition))

    def role_changed(self, driver: PartitionDriver, before: Role, state: PartitionState) -> None:
        log.info("%s: %s -> %s at leader epoch %d (leader %d, ISR %s)", driver.name, before.value,
                 driver.replica.role.value, state.leader_epoch, state.leader, list(state.isr),
                 extra=logs.fields("role_changed", topic=driver.topic, partition=driver.partition))

    def truncated(self, driver: PartitionDriver, op: LogOp, log_end_offset_before: int) -> None:
        log.info("%s truncated (%s) from %d to %d, log start %d (leader epoch %d); producers rebuilt from the log: "
                 "%d, open transactions %d", driver.name, type(op).__name__, log_end_offset_before,
                 driver.log.log_end_offset, driver.log.log_start_offset, driver.replica.leader_epoch,
                 len(driver.replica.producers), len(driver.replica.open_transactions),
                 extra=logs.fields("truncated", topic=driver.topic, partition=driver.partition))

    def storage_failed(self, driver: PartitionDriver, failure: LogOpFailed) -> None:
        log.error("%s: %s; taking the replica offline", driver.name, failure,
                  extra=logs.fields("storage_failed", topic=driver.topic, partition=driver.partition))

    def log_start_moved(self, driver: PartitionDriver) -> None:
        """Checkpointed at once, not at the next round: records DeleteRecords removed from within a segment
        must not come back when the broker crashes. Only log-start-offset-checkpoint is written (one fsync
        a log dir); the other two files wait for their round."""
        self._log_starts_moved = True
        if self._log_start_writer is None or self._log_start_writer.done():
            self._log_start_writer = asyncio.get_running_loop().create_task(self._write_moved_log_starts())

    async def log_starts_written(self) -> None:
        """Wait until every log start moved so far is in the checkpoint files."""
        if self._log_start_writer is not None:
            await asyncio.shield(self._log_start_writer)

    async def _write_moved_log_starts(self) -> None:
        try:
            while self._log_starts_moved:
                while not self._checkpoint_done():
                    await asyncio.shield(self._checkpointing)
                self._log_starts_moved = False
                self._checkpoint_in_thread(log_starts_only=True)
                await asyncio.shield(self._checkpointing)
        except OSError as error:
            log.error("the checkpoint files could not be written after DeleteRecords: %s; the next round tries "
                      "again", error)

    async def wait_for_data(self, watched: Iterable[PartitionDriver], timeout_s: float) -> None:
        """Wait until one of the `watched` partitions changes, or `timeout_s` passes."""
        await self.fetch_waiters.wait((driver.topic_partition for driver in watched), timeout_s)

    # -- periodic duties ------------------------------------------------------------------

    def _tick(self) -> None:
        now = now_ms()
        for driver in self.hosted:
            driver.tick(now)

    def clean_logs(self, wall: int) -> None:
        """Kafka's log retention and cleaner: retention only below the HW, so nothing unreplicated goes;
        the cleaner only below the last stable offset, so no transaction is cleaned before its marker is
        replicated (and its aborted batches are known)."""
        for driver in self.hosted:
            high_watermark = driver.replica.high_watermark
            deleted = driver.log.apply_retention(wall, high_watermark=high_watermark)
            if driver.log.config.compacts:
                stats = driver.log.compact(wall, up_to_offset=driver.replica.last_stable_offset)
                log.debug("%s compacted: %s", driver.name, stats)
            if deleted:
                driver.advance_log_start_offset()
                log.info("%s: retention deleted %d segments; the log now starts at %d", driver.name,
                         deleted, driver.log.log_start_offset)

    def write_checkpoints(self) -> None:
        """The HW, recovery point and log start of every partition, per log dir (Kafka's files)."""
        write_snapshots(self.hosted.snapshots())

    def _checkpoint_in_thread(self, *, log_starts_only: bool = False) -> None:
        # The offsets are taken here, on the loop; the files are written and fsynced in a thread.
        self._checkpointing = asyncio.get_running_loop().create_task(
            asyncio.to_thread(write_snapshots, self.hosted.snapshots(), log_starts_only=log_starts_only))

    def _checkpoint_done(self) -> bool:
        return self._checkpointing is None or self._checkpointing.done()
