"""Names of the files and directories of a log directory (Kafka's `log.dirs` layout).

    <log_dir>/replication-offset-checkpoint        HW per partition
    <log_dir>/recovery-point-offset-checkpoint     recovery point per partition
    <log_dir>/log-start-offset-checkpoint          log start offset per partition
    <log_dir>/<topic>-<partition>/
        00000000000000000000.log                   segment: record batches
        00000000000000000000.index                 sparse offset -> position
        00000000000000000000.timeindex             sparse timestamp -> offset
        leader-epoch-checkpoint                    (epoch, start offset) pairs
        .clean-shutdown                            present while the log is closed cleanly
"""

from __future__ import annotations

import os
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
# A segment being rewritten by the cleaner; never read, deleted when found on open.
CLEANED_SUFFIX = ".cleaned"
TEMP_SUFFIX = ".tmp"

# Left by a clean close, removed by the next open: the active segment needs no scan.
CLEAN_SHUTDOWN = ".clean-shutdown"

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

OFFSET_DIGITS = 20


def partition_directory(log_dir: str | os.PathLike, topic: str, partition: int) -> Path:
    return Path(log_dir) / f"{topic}-{partition}"


def parse_partition_directory(name: str) -> tuple[str, int] | None:
    """(topic, partition) from a directory name such as `orders-3`, or None if it is not one."""
    topic, dash, number = name.rpartition("-")
    if not dash or not topic or not number.isdigit():
        return None
    return topic, int(number)


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:0{OFFSET_DIGITS}d}{suffix}"


def parse_segment_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) of a segment file name, or None for other files."""
    stem, dot, extension = name.partition(".")
    if not dot or len(stem) != OFFSET_DIGITS or not stem.isdigit():
        return None
    return int(stem), "." + extension


def fsync_directory(directory: Path) -> None:
    """Make creations, renames and deletions in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
