"""The partition replicas this broker hosts: opening each from its log dir, and finding them.

A replica is opened when a LeaderAndIsr first names it here: its log is
recovered from the log dir that already holds it (else the log dir hosting the
fewest partitions), and its core starts from what the log and the checkpoints
say. Each is driven by the core's `PartitionDriver`, the same one the
simulator runs.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from replog.broker.checkpoints import LogDirCheckpoints, Snapshot
from replog.core.config import ReplicaConfig
from replog.core.epoch_cache import EpochEntry
from replog.core.partition_driver import PartitionDriver, PartitionSink, load_producers
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition
from replog.storage import LogConfig, PartitionLog, partition_directory

log = logging.getLogger("replog.broker")


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


class HostedReplicas:
    """The drivers of the hosted partitions, by name, and the log dirs they live in."""

    def __init__(self, broker_id: int, log_dirs: tuple[str, ...], sink: PartitionSink) -> None:
        self.broker_id = broker_id
        self._log_dirs = log_dirs
        self._sink = sink
        self.by_name: dict[TopicPartition, PartitionDriver] = {}
        # How many of by_name live in each log dir: a LeaderAndIsr opening a thousand partitions
        # must not count the hosted ones a thousand times over (it held the loop for seconds).
        self._hosted_per_log_dir: Counter[str] = Counter()
        self._log_dir_of: dict[TopicPartition, str] = {}
        self._checkpoints: dict[str, LogDirCheckpoints] = {}

    def start(self) -> None:
        """Read the checkpoints (the log dirs exist by now)."""
        self._checkpoints = {d: LogDirCheckpoints(d) for d in self._log_dirs}

    def __iter__(self) -> Iterator[PartitionDriver]:
        return iter(list(self.by_name.values()))

    def __len__(self) -> int:
        return len(self.by_name)

    def get(self, key: TopicPartition) -> PartitionDriver | None:
        return self.by_name.get(key)

    @property
    def log_dirs(self) -> tuple[str, ...]:
        return self._log_dirs

    def log_dir_of(self, key: TopicPartition) -> str:
        """The log dir a hosted partition lives in."""
        return self._log_dir_of[key]

    def open(self, key: TopicPartition, settings: TopicSettings, now: int) -> PartitionDriver:
        log_dir = self._log_dir_for(key)
        checkpoints = self._checkpoints[log_dir]
        partition_log = PartitionLog.open(
            partition_directory(log_dir, key.topic, key.partition), settings.log,
            recovery_point=checkpoints.recovery_points.get(key, 0),
            log_start_offset=checkpoints.log_starts.get(key, 0), now_ms=wall_ms(),
        )
        entries = tuple(EpochEntry(epoch, start) for epoch, start in partition_log.leader_epoch_checkpoint.read())
        high_watermark = min(checkpoints.high_watermarks.get(key, 0), partition_log.log_end_offset)
        producers = load_producers(partition_log, now)
        replica = PartitionReplica(
            self.broker_id, settings.replica, log_start_offset=partition_log.log_start_offset,
            log_end_offset=partition_log.log_end_offset, epoch_entries=entries,
            high_watermark=max(high_watermark, partition_log.log_start_offset), now_ms=now,
            producer_entries=producers,
        )
        driver = PartitionDriver(
            key, replica, partition_log,
            write_epoch_entries=lambda entries: partition_log.leader_epoch_checkpoint.write(
                (entry.epoch, entry.start_offset) for entry in entries),
            wall_clock_ms=wall_ms, sink=self._sink,
        )
        self.by_name[key] = driver
        self._log_dir_of[key] = log_dir
        self._hosted_per_log_dir[log_dir] += 1
        log.info("%s opened in %s: log %d..%d, high watermark %d", driver.name, log_dir,
                 partition_log.log_start_offset, partition_log.log_end_offset, replica.high_watermark)
        return driver

    def remove(self, key: TopicPartition) -> PartitionDriver | None:
        driver = self.by_name.pop(key, None)
        if driver is not None:
            self._hosted_per_log_dir[self._log_dir_of.pop(key)] -= 1
        return driver

    def clear(self) -> None:
        self.by_name.clear()
        self._log_dir_of.clear()
        self._hosted_per_log_dir.clear()

    def _log_dir_for(self, key: TopicPartition) -> str:
        """The log dir already holding the partition, else the one with the fewest partitions."""
        for log_dir in self._log_dirs:
            if os.path.isdir(partition_directory(log_dir, key.topic, key.partition)):
                return log_dir
        return min(self._log_dirs, key=lambda d: self._hosted_per_log_dir[d])

    def snapshots(self) -> list[tuple[LogDirCheckpoints, Snapshot]]:
        """Each log dir's offsets to checkpoint, taken now (on the loop)."""
        by_dir: dict[str, list[PartitionDriver]] = {d: [] for d in self._checkpoints}
        for key, driver in self.by_name.items():
            by_dir[self._log_dir_of[key]].append(driver)
        return [(checkpoints, Snapshot.of(by_dir[log_dir])) for log_dir, checkpoints in self._checkpoints.items()]
