"""Log compaction (cleanup.policy=compact): keep the latest record of each key.

Only closed segments wholly below the offset the broker allows (its HW) are
cleaned. What is kept, record by record:

- the record whose offset is the latest for its key among the cleaned segments;
- a tombstone (null value) while it is younger than delete.retention.ms by its
  own timestamp, so consumers that read from the start still see the delete;
- never a record without a key: the leader refuses them on compacted topics,
  as Kafka does, and any that got in before the policy changed are dropped;
- control batches unchanged (transaction markers, not produced yet).

Offsets never change. A batch whose records all stay is copied byte for byte;
otherwise its survivors are re-encoded into one batch with the same base
offset, epoch, producer fields and compression; a batch left empty goes.

Each segment is rewritten on its own (same base offset, so segments are not
merged) into `<base>.log.cleaned`, then swapped in: flush the new files,
delete the old indexes, rename the new log over the old one, rename the new
indexes. A crash at any step leaves either the old log or the new one, with
its own indexes or none (which recovery rebuilds); `.cleaned` files left over
are deleted on open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from replog.protocol import DecodedBatch, Record, decode_batch, encode_batch, read_header
from replog.storage.config import LogConfig
from replog.storage.files import CLEANED_SUFFIX, fsync_directory
from replog.storage.segment import LogSegment

# Bound on the keys one cleaning round remembers (Kafka bounds its offset map
# by log.cleaner.dedupe.buffer.size); later segments wait for the next round.
OFFSET_MAP_KEYS_MAX = 1_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class CleanerStats:
    segments_rewritten: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def clean(segments: Sequence[LogSegment], config: LogConfig, now_ms: int) -> tuple[list[LogSegment], CleanerStats]:
    """Compact `segments` (consecutive closed segments from the log's start).

    Returns the segments as they now are (rewritten ones replaced) and what changed.
    """
    latest_offsets, covered = _offset_map(segments)
    result = list(segments)
    rewritten = removed = before = after = 0
    for index in range(covered):
        segment = segments[index]
        cleaned, removed_here = _clean_segment(segment, latest_offsets, config, now_ms)
        if cleaned is None:
            continue
        before += segment.size_bytes
        after += cleaned.size_bytes
        _swap(segment, cleaned)
        result[index] = cleaned
        rewritten += 1
        removed += removed_here
    return result, CleanerStats(rewritten, removed, before, after)


def _offset_map(segments: Sequence[LogSegment]) -> tuple[dict[bytes, int], int]:
    """Latest offset of each key, over as many leading segments as the key bound allows."""
    latest: dict[bytes, int] = {}
    covered = 0
    for segment in segments:
        if covered and len(latest) >= OFFSET_MAP_KEYS_MAX:
            break
        for batch in _batches(segment):
            for record in batch.records:
                if record.key is not None:
                    latest[record.key] = record.offset
        covered += 1
    return latest, covered


def _batches(segment: LogSegment):
    for position, header in segment.batches_from(0):
        if not header.is_control:
            yield decode_batch(segment.read_batch(position, header.size))


def _retained(record: Record, latest_offsets: dict[bytes, int], delete_horizon_ms: int) -> bool:
    if record.key is None or latest_offsets.get(record.key) != record.offset:
        return False
    return record.value is not None or record.timestamp >= delete_horizon_ms


def _clean_segment(
    segment: LogSegment, latest_offsets: dict[bytes, int], config: LogConfig, now_ms: int
) -> tuple[LogSegment | None, int]:
    """Write the cleaned copy of `segment`; (None, 0) when cleaning would change nothing."""
    delete_horizon_ms = now_ms - config.delete_retention_ms
    cleaned = LogSegment.create(segment.directory, segment.base_offset, config, now_ms, suffix=CLEANED_SUFFIX)
    removed = 0
    for position, header in segment.batches_from(0):
        raw = segment.read_batch(position, header.size)
        if header.is_control:
            cleaned.append(raw, [read_header(raw)])
            continue
        batch = decode_batch(raw)
        kept = [record for record in batch.records if _retained(record, latest_offsets, delete_horizon_ms)]
        removed += len(batch.records) - len(kept)
        if len(kept) == len(batch.records):
            cleaned.append(raw, [read_header(raw)])
        elif kept:
            encoded = _reencode(batch, kept)
            cleaned.append(encoded, [read_header(encoded)])
    if removed == 0:
        cleaned.delete()
        return None, 0
    return cleaned, removed


def _reencode(batch: DecodedBatch, kept: list[Record]) -> bytes:
    return encode_batch(
        kept,
        base_offset=batch.base_offset,
        base_timestamp_ms=min(record.timestamp for record in kept),
        compression=batch.compression,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=batch.partition_leader_epoch,
        transactional=batch.is_transactional,
    )


def _swap(old: LogSegment, cleaned: LogSegment) -> None:
    """Put the cleaned segment in place of the old one, safe against a crash at any step."""
    cleaned.seal()
    cleaned.flush()
    old.delete_indexes()
    fsync_directory(old.directory)
    cleaned.rename_to_live()
    cleaned.txn_index = old.txn_index  # offsets are kept, so are the aborted transactions
    fsync_directory(old.directory)
    old.close(flush=False)
