"""Helpers for the partition log tests: small segments, batches made with the protocol codec."""

from pathlib import Path

import pytest

from replog.protocol import Record, encode_batch, iter_batches
from replog.storage import LogConfig, PartitionLog

START_MS = 1_700_000_000_000


def batch(
    count: int = 1, *, key: bytes | None = b"k", value_bytes: int = 40, timestamp_ms: int = START_MS, tag: int = 0
) -> bytes:
    """One batch of `count` records; values carry `tag` so tests can tell batches apart."""
    value = f"{tag}:".encode().ljust(value_bytes, b".")
    return encode_batch([(key, value)] * count, base_timestamp_ms=timestamp_ms)


def keyed_batch(items: list[tuple[bytes, bytes | None]], timestamp_ms: int = START_MS) -> bytes:
    return encode_batch(items, base_timestamp_ms=timestamp_ms)


def records_of(data: bytes) -> list[Record]:
    return [record for b in iter_batches(data) for record in b.records]


def offsets_of(data: bytes) -> list[int]:
    return [record.offset for record in records_of(data)]


def small_config(**overrides) -> LogConfig:
    values = {"segment_bytes": 1024, "index_interval_bytes": 128, "segment_index_bytes": 4096}
    values.update(overrides)
    return LogConfig(**values)


@pytest.fixture
def partition_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture
def open_log(partition_dir: Path):
    """open_log(**config) opens the partition log at `partition_dir`; every log is closed afterwards."""
    opened: list[PartitionLog] = []

    def _open(config: LogConfig | None = None, **kwargs) -> PartitionLog:
        kwargs.setdefault("now_ms", START_MS)
        log = PartitionLog.open(partition_dir, config or small_config(), **kwargs)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close(flush=False)
