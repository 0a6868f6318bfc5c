"""The per-log-dir checkpoint files (Kafka's): high watermarks, recovery points and log start offsets.

Each is read once when the broker starts and rewritten periodically from a
snapshot taken on the broker's loop; the files are written and fsynced in a
thread, so that a slow disk never stalls produce and fetch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.storage import OffsetCheckpointFile

HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


@dataclass(frozen=True)
class Snapshot:
    """One log dir's checkpointed offsets, taken from its hosted partitions."""

    high_watermarks: dict[TopicPartition, int]
    recovery_points: dict[TopicPartition, int]
    log_starts: dict[TopicPartition, int]

    @classmethod
    def of(cls, drivers: Iterable[PartitionDriver]) -> Snapshot:
        drivers = list(drivers)
        return cls(
            {d.topic_partition: d.replica.high_watermark for d in drivers},
            {d.topic_partition: d.log.recovery_point for d in drivers},
            {d.topic_partition: d.log.log_start_offset for d in drivers},
        )


class LogDirCheckpoints:
    """The three checkpoint files of one log dir, as read at start."""

    def __init__(self, log_dir: str) -> None:
        os.makedirs(log_dir, exist_ok=True)
        self.log_dir = log_dir
        self._high_watermark_file = OffsetCheckpointFile(os.path.join(log_dir, HIGH_WATERMARK_CHECKPOINT))
        self._recovery_file = OffsetCheckpointFile(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
        self._log_start_file = OffsetCheckpointFile(os.path.join(log_dir, LOG_START_CHECKPOINT))
        self.high_watermarks = _read_or_empty(self._high_watermark_file)
        self.recovery_points = _read_or_empty(self._recovery_file)
        self.log_starts = _read_or_empty(self._log_start_file)

    def write(self, snapshot: Snapshot) -> None:
        self._high_watermark_file.write(snapshot.high_watermarks)
        self._recovery_file.write(snapshot.recovery_points)
        self._log_start_file.write(snapshot.log_starts)

    def write_log_starts(self, snapshot: Snapshot) -> None:
        self._log_start_file.write(snapshot.log_starts)


def write_snapshots(snapshots: list[tuple[LogDirCheckpoints, Snapshot]], *, log_starts_only: bool = False) -> None:
    """Every file of each log dir, or (after DeleteRecords) its log start offsets alone."""
    for checkpoints, snapshot in snapshots:
        if log_starts_only:
            checkpoints.write_log_starts(snapshot)
        else:
            checkpoints.write(snapshot)


def _read_or_empty(checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
    if not checkpoint.path.exists():
        return {}
    return {TopicPartition(*key): offset for key, offset in checkpoint.read().items()}
