"""The partitions this broker hosts, and how the controller's requests change them.

All state is touched from the broker's asyncio loop only. Each partition's
rules live in its `PartitionReplica` (replog.core); this module opens logs,
applies LeaderAndIsr / StopReplica with controller-epoch fencing, drives the
ticks, writes the per-log-dir checkpoints, and wakes long-polling fetches.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from replog.broker import metrics
from replog.broker.partition import PartitionDriver, StorageFailure, epoch_entries_from
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import CompleteProduce, PartitionState, ProposeIsr, SendFetch
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition
from replog.storage import LogConfig, OffsetCheckpointFile, PartitionLog, partition_directory

log = logging.getLogger("replog.broker")

TICK_INTERVAL_S = 0.05
CHECKPOINT_INTERVAL_S = 5.0
GAUGE_INTERVAL_S = 1.0
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


def now_ms() -> int:
    """Monotonic milliseconds, for the cores: their time may never go back."""
    return time.monotonic_ns() // 1_000_000


def wall_ms() -> int:
    """Unix-clock milliseconds, for the logs: segment.ms and retention.ms compare record timestamps."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class TopicSettings:
    log: LogConfig
    replica: ReplicaConfig


class Partitions:
    def __init__(
        self,
        broker_id: int,
        log_dirs: tuple[str, ...],
        topic_settings: Callable[[str], TopicSettings],
        send_fetch: Callable[[PartitionDriver, SendFetch], None],
        propose_isr: Callable[[PartitionDriver, ProposeIsr], None],
        cleanup_interval_ms: int = 300_000,
    ) -> None:
        self.broker_id = broker_id
        self._log_dirs = log_dirs
        self._topic_settings = topic_settings
        self._send_fetch = send_fetch
        self._propose_isr = propose_isr
        self.by_name: dict[TopicPartition, PartitionDriver] = {}
        # How many of by_name live in each log dir: a LeaderAndIsr opening a thousand partitions
        # must not count the hosted ones a thousand times over (it held the loop for seconds).
        self._hosted_per_log_dir: Counter[str] = Counter()
        self.controller_epoch = 0
        self.produce_waiters: dict[int, asyncio.Future[CompleteProduce]] = {}
        self._next_request_id = 0
        self._ticker: asyncio.Task[None] | None = None
        self._checkpoints: dict[str, _Checkpoints] = {}
        self._cleanup_interval_s = cleanup_interval_ms / 1000
        self._checkpointing: asyncio.Task[None] | None = None

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> None:
        """Read the checkpoints (the log dirs exist by now) and start ticking."""
        self._checkpoints = {d: _Checkpoints(d) for d in self._log_dirs}
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def close(self) -> None:
        if self._ticker:
            self._ticker.cancel()
        if self._checkpointing is not None:
            await self._checkpointing
        # Producers still waiting here (a leadership the controller's LeaderAndIsr has not taken
        # away yet, when the broker stops) are answered NOT_LEADER_OR_FOLLOWER now, and retry
        # with the new leader; left waiting, they held their partition until the server stopped.
        now = now_ms()
        for driver in self.by_name.values():
            driver.replica.stop(now)
            self.apply(driver, now)
        self.write_checkpoints()
        for driver in self.by_name.values():
            driver.log.close()
        self.by_name.clear()
        self._hosted_per_log_dir.clear()

    # -- Sink for PartitionDriver -------------------------------------------------------

    def send_fetch(self, partition: PartitionDriver, message: SendFetch) -> None:
        self._send_fetch(partition, message)

    def propose_isr(self, partition: PartitionDriver, message: ProposeIsr) -> None:
        self._propose_isr(partition, message)

    def complete_produce(self, completion: CompleteProduce) -> None:
        waiter = self.produce_waiters.pop(completion.request_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(completion)
        metrics.PRODUCE_PURGATORY.set(len(self.produce_waiters))

    def data_changed(self, partition: PartitionDriver) -> None:
        """Wake the long-polling fetches that read `partition`: its log end offset or HW moved."""
        partition.changes += 1
        for waiter in partition.fetch_waiters:
            _wake(waiter)

    async def wait_for_data(self, watched: Iterable[PartitionDriver], timeout_s: float) -> None:
        """Wait until one of the `watched` partitions changes, or `timeout_s` passes."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        watched = tuple(watched)
        for partition in watched:
            partition.fetch_waiters.add(waiter)
        timer = loop.call_later(timeout_s, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            for partition in watched:
                partition.fetch_waiters.discard(waiter)

    def new_request_id(self) -> int:
        self._next_request_id += 1
        return self._next_request_id

    # -- from the controller -------------------------------------------------------------

    def check_controller_epoch(self, controller_epoch: int) -> ErrorCode:
        """Kafka's fencing of controllers: a request from an older controller is refused."""
        if controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.controller_epoch = controller_epoch
        return ErrorCode.NONE

    def leader_and_isr(self, topic: str, partition: int, state: PartitionState) -> ErrorCode:
        now = now_ms()
        driver = self.by_name.get((topic, partition))
        try:
            if driver is None:
                driver = self._open(topic, partition, now)
            before = driver.replica.role
            error = driver.replica.handle_leader_and_isr(state, now)
            self._apply(driver, now)
        except StorageFailure as failure:
            log.error("%s", failure)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if error == ErrorCode.NONE and driver.replica.role is not before:
            self.data_changed(driver)  # fetches held on the old role answer now, with the new one's error
            log.info("%s-%d: %s -> %s at leader epoch %d (leader %d, ISR %s)", topic, partition, before.value,
                     driver.replica.role.value, state.leader_epoch, state.leader, list(state.isr))
        elif error != ErrorCode.NONE:
            log.warning("%s-%d: LeaderAndIsr at leader epoch %d refused: %s", topic, partition,
                        state.leader_epoch, error.name)
        return error

    def stop_replica(self, topic: str, partition: int, delete: bool) -> ErrorCode:
        driver = self.by_name.pop((topic, partition), None)
        if driver is None:
            return ErrorCode.NONE
        self._hosted_per_log_dir[str(driver.log.directory.parent)] -= 1
        now = now_ms()
        driver.replica.stop(now)
        self._apply(driver, now)
        self.data_changed(driver)
        driver.log.close()
        if delete:
            shutil.rmtree(driver.log.directory, ignore_errors=True)
        log.info("%s stopped%s", driver.name, " and its log deleted" if delete else "")
        return ErrorCode.NONE

    def reconfigure(self, topic: str, settings: TopicSettings) -> int:
        """Give the topic's hosted partitions its changed config; returns how many there are."""
        now = now_ms()
        drivers = [driver for driver in self.by_name.values() if driver.topic == topic]
        for driver in drivers:
            driver.log.config = settings.log
            driver.replica.reconfigure(settings.replica)
            self.apply(driver, now)  # producers the new min.insync.replicas fails are answered
        return len(drivers)

    def _open(self, topic: str, partition: int, now: int) -> PartitionDriver:
        log_dir = self._log_dir_for(topic, partition)
        settings = self._topic_settings(topic)
        checkpoints = self._checkpoints[log_dir]
        key = (topic, partition)
        partition_log = PartitionLog.open(
            partition_directory(log_dir, topic, partition), settings.log,
            recovery_point=checkpoints.recovery_points.get(key, 0),
            log_start_offset=checkpoints.log_starts.get(key, 0), now_ms=wall_ms(),
        )
        entries = epoch_entries_from(partition_log.leader_epoch_checkpoint.read())
        high_watermark = min(checkpoints.high_watermarks.get(key, 0), partition_log.log_end_offset)
        replica = PartitionReplica(
            self.broker_id, settings.replica, log_start_offset=partition_log.log_start_offset,
            log_end_offset=partition_log.log_end_offset, epoch_entries=entries,
            high_watermark=max(high_watermark, partition_log.log_start_offset), now_ms=now,
        )
        driver = PartitionDriver(topic, partition, replica, partition_log, self)
        self.by_name[key] = driver
        self._hosted_per_log_dir[log_dir] += 1
        log.info("%s opened in %s: log %d..%d, high watermark %d", driver.name, log_dir,
                 partition_log.log_start_offset, partition_log.log_end_offset, replica.high_watermark)
        return driver

    def _log_dir_for(self, topic: str, partition: int) -> str:
        """The log dir already holding the partition, else the one with the fewest partitions."""
        for log_dir in self._log_dirs:
            if os.path.isdir(partition_directory(log_dir, topic, partition)):
                return log_dir
        return min(self._log_dirs, key=lambda d: self._hosted_per_log_dir[d])

    # -- driving the cores ------------------------------------------------------------------

    def apply(self, driver: PartitionDriver, now: int) -> None:
        try:
            self._apply(driver, now)
        except StorageFailure as failure:
            log.error("%s; taking the replica offline", failure)
            driver.replica.stop(now, ErrorCode.KAFKA_STORAGE_ERROR)
            driver.apply_ready()

    def _apply(self, driver: PartitionDriver, now: int) -> None:
        driver.apply_ready()

    async def _tick_forever(self) -> None:
        last_checkpoint = last_cleanup = last_gauges = time.monotonic()
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            now, wall = now_ms(), wall_ms()
            for driver in list(self.by_name.values()):
                driver.replica.tick(now)
                self.apply(driver, now)
                driver.log.maybe_flush(wall)
            if time.monotonic() - last_gauges >= GAUGE_INTERVAL_S:
                self._update_gauges()
                last_gauges = time.monotonic()
            if time.monotonic() - last_checkpoint >= CHECKPOINT_INTERVAL_S and self._checkpoint_done():
                # The offsets are taken here, on the loop; the files are written and fsynced in a
                # thread, so a slow disk never stalls produce and fetch.
                self._checkpointing = asyncio.get_running_loop().create_task(
                    asyncio.to_thread(self._write_snapshots, self._snapshots()))
                last_checkpoint = time.monotonic()
            if time.monotonic() - last_cleanup >= self._cleanup_interval_s:
                self.clean_logs(wall)
                last_cleanup = time.monotonic()

    def clean_logs(self, wall: int) -> None:
        """Kafka's log retention and cleaner: only below the HW, so nothing unreplicated goes."""
        for driver in list(self.by_name.values()):
            high_watermark = driver.replica.high_watermark
            deleted = driver.log.apply_retention(wall, high_watermark=high_watermark)
            if driver.log.config.compacts:
                stats = driver.log.compact(wall, up_to_offset=high_watermark)
                log.debug("%s compacted: %s", driver.name, stats)
            if deleted:
                driver.replica.advance_log_start_offset(driver.log.log_start_offset)
                log.info("%s: retention deleted %d segments; the log now starts at %d", driver.name,
                         deleted, driver.log.log_start_offset)

    def write_checkpoints(self) -> None:
        """The HW, recovery point and log start of every partition, per log dir (Kafka's files)."""
        self._write_snapshots(self._snapshots())

    def _checkpoint_done(self) -> bool:
        return self._checkpointing is None or self._checkpointing.done()

    def _snapshots(self) -> list[tuple[_Checkpoints, _Snapshot]]:
        snapshots = []
        for log_dir, checkpoints in self._checkpoints.items():
            hosted = [d for d in self.by_name.values() if str(d.log.directory.parent) == log_dir]
            snapshots.append((checkpoints, _Snapshot.of(hosted)))
        return snapshots

    @staticmethod
    def _write_snapshots(snapshots: list[tuple[_Checkpoints, _Snapshot]]) -> None:
        for checkpoints, snapshot in snapshots:
            checkpoints.write(snapshot)

    def _update_gauges(self) -> None:
        drivers = list(self.by_name.values())
        metrics.PARTITION_COUNT.set(len(drivers))
        metrics.LEADER_COUNT.set(sum(1 for d in drivers if d.is_leader))
        metrics.UNDER_REPLICATED.set(sum(1 for d in drivers if d.replica.under_replicated))
        metrics.UNDER_MIN_ISR.set(sum(1 for d in drivers if d.replica.under_min_isr))
        for driver in drivers:
            metrics.LOG_SIZE.labels(driver.topic, str(driver.partition)).set(driver.log.size_bytes)
            leadership = driver.replica.leadership
            if leadership is None:
                continue
            for replica in leadership.replicas:
                if replica != self.broker_id:
                    lag = driver.replica.log_end_offset - leadership.follower_log_end_offset(replica)
                    metrics.REPLICA_LAG.labels(driver.topic, str(driver.partition), str(replica)).set(lag)

    def leaders(self) -> Iterable[PartitionDriver]:
        return (d for d in self.by_name.values() if d.is_leader)


class _Checkpoints:
    """The three per-log-dir checkpoint files, read once at start and rewritten periodically."""

    def __init__(self, log_dir: str) -> None:
        os.makedirs(log_dir, exist_ok=True)
        self._high_watermark_file = OffsetCheckpointFile(os.path.join(log_dir, HIGH_WATERMARK_CHECKPOINT))
        self._recovery_file = OffsetCheckpointFile(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
        self._log_start_file = OffsetCheckpointFile(os.path.join(log_dir, LOG_START_CHECKPOINT))
        self.high_watermarks = _read_or_empty(self._high_watermark_file)
        self.recovery_points = _read_or_empty(self._recovery_file)
        self.log_starts = _read_or_empty(self._log_start_file)

    def write(self, snapshot: _Snapshot) -> None:
        self._high_watermark_file.write(snapshot.high_watermarks)
        self._recovery_file.write(snapshot.recovery_points)
        self._log_start_file.write(snapshot.log_starts)


@dataclass(frozen=True)
class _Snapshot:
    high_watermarks: dict[TopicPartition, int]
    recovery_points: dict[TopicPartition, int]
    log_starts: dict[TopicPartition, int]

    @classmethod
    def of(cls, drivers: list[PartitionDriver]) -> _Snapshot:
        return cls(
            {(d.topic, d.partition): d.replica.high_watermark for d in drivers},
            {(d.topic, d.partition): d.log.recovery_point for d in drivers},
            {(d.topic, d.partition): d.log.log_start_offset for d in drivers},
        )


def _read_or_empty(checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
    if not checkpoint.path.exists():
        return {}
    return checkpoint.read()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
