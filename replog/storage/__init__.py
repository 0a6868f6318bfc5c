"""The on-disk partition log in Kafka's layout: segments, sparse indexes, checkpoints.

Synchronous file I/O only; the broker's driver calls it from its loop.
"""

from replog.storage.checkpoint import CorruptCheckpointError, LeaderEpochCheckpointFile, OffsetCheckpointFile
from replog.storage.cleaner import CleanerStats
from replog.storage.config import LogConfig, LogConfigError
from replog.storage.files import partition_directory
from replog.core.storage import AppendInfo, ReadResult
from replog.storage.log import PartitionLog
from replog.storage.segment import SegmentInfo

__all__ = [
    "AppendInfo",
    "CleanerStats",
    "CorruptCheckpointError",
    "LeaderEpochCheckpointFile",
    "LogConfig",
    "LogConfigError",
    "OffsetCheckpointFile",
    "PartitionLog",
    "ReadResult",
    "SegmentInfo",
    "partition_directory",
]
