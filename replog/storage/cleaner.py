"""Log compaction (cleanup.policy=compact): keep the latest record of each key.

Only closed segments wholly below the offset the broker allows (its last
stable offset: never a transaction not yet decided and replicated) are
cleaned. What is kept, record by record:

- the record whose offset is the latest for its key among the cleaned segments,
  records of aborted transactions not counting (an aborted write never shadows
  a committed one);
- a tombstone (null value) while it is younger than delete.retention.ms by its
  own timestamp, so consumers that read from the start still see the delete;
- never a record without a key: the leader refuses them on compacted topics,
  as Kafka does, and any that got in before the policy changed are dropped;
- never a batch of an aborted transaction (known from the `.txnindex`);
- transaction markers until their transactions have no batch left, then
  delete.retention.ms more (core.txn.cleaning); the `.txnindex` keeps the
  entries of the ABORT markers kept for their batches.

Offsets never change. A batch whose records all stay is copied byte for byte;
otherwise its survivors are re-encoded into one batch with the same base
offset, epoch, producer fields and compression; a batch left empty goes. A
marker whose transaction is gone is re-encoded once, with its delete horizon.

Each segment is rewritten on its own (same base offset, so segments are not
merged) into `<base>.log.cleaned`, then swapped in: flush the new files, put
the new `.txnindex` in place of the old one, delete the old indexes, rename
the new log over the old one, rename the new indexes. A crash at any step
leaves either the old log or the new one, with its own indexes or none (which
recovery rebuilds); either `.txnindex` names every aborted transaction with a
batch in either log. `.cleaned` files left over are deleted on open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.cleaning import CleanedTransactions, MarkerFate, marker_fate
from replog.protocol import BatchHeader, DecodedBatch, Record, decode_batch, encode_batch, read_header
from replog.protocol.control import decode_marker
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
    aborted_records_removed: int = 0
    markers_removed: int = 0


@dataclasses.dataclass(slots=True)
class _SegmentCleaning:
    """What cleaning one segment changed."""

    records_removed: int = 0
    aborted_records_removed: int = 0
    markers_removed: int = 0
    markers_stamped: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.records_removed or self.markers_removed or self.markers_stamped)


def clean(segments: Sequence[LogSegment], config: LogConfig, now_ms: int,
          aborted: Sequence[AbortedTxn] = ()) -> tuple[list[LogSegment], CleanerStats]:
    """Compact `segments` (consecutive closed segments from the log's start); `aborted` are the log's
    aborted transactions that begin in them.

    Returns the segments as they now are (rewritten ones replaced) and what changed.
    """
    latest_offsets, covered = _offset_map(segments, aborted)
    transactions = CleanedTransactions(aborted)
    result = list(segments)
    totals = _SegmentCleaning()
    rewritten = before = after = 0
    for index in range(covered):
        segment = segments[index]
        cleaned, done = _clean_segment(segment, latest_offsets, transactions, config, now_ms)
        totals.records_removed += done.records_removed
        totals.aborted_records_removed += done.aborted_records_removed
        totals.markers_removed += done.markers_removed
        if cleaned is None:
            continue
        before += segment.size_bytes
        after += cleaned.size_bytes
        _swap(segment, cleaned)
        result[index] = cleaned
        rewritten += 1
    return result, CleanerStats(rewritten, totals.records_removed, before, after, totals.aborted_records_removed,
                                totals.markers_removed)


def _offset_map(segments: Sequence[LogSegment], aborted: Sequence[AbortedTxn]) -> tuple[dict[bytes, int], int]:
    """Latest offset of each key outside aborted transactions, over as many leading segments as the key
    bound allows."""
    latest: dict[bytes, int] = {}
    transactions = CleanedTransactions(aborted)
    covered = 0
    for segment in segments:
        if covered and len(latest) >= OFFSET_MAP_KEYS_MAX:
            break
        for header, raw in _batches(segment):
            if header.is_control:
                _marker_verdict(transactions, header, raw)
            elif not transactions.data_batch(header.producer_id, header.is_transactional, header.last_offset):
                for record in decode_batch(raw).records:
                    if record.key is not None:
                        latest[record.key] = record.offset
        covered += 1
    return latest, covered


def _batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in segment.batches_from(0):
        raw = segment.read_batch(position, header.size)
        yield read_header(raw), raw


def _marker_verdict(transactions: CleanedTransactions, header: BatchHeader, raw: bytes):
    """The rule's verdict on a control batch; None for one that is no transaction marker (kept)."""
    marker = decode_marker(decode_batch(raw))
    if marker is None:
        return None
    return transactions.marker(header.producer_id, not marker.commit, header.base_offset)


def _retained(record: Record, latest_offsets: dict[bytes, int], delete_horizon_ms: int) -> bool:
    if record.key is None or latest_offsets.get(record.key) != record.offset:
        return False
    return record.value is not None or record.timestamp >= delete_horizon_ms


def _clean_segment(
    segment: LogSegment, latest_offsets: dict[bytes, int], transactions: CleanedTransactions, config: LogConfig,
    now_ms: int,
) -> tuple[LogSegment | None, _SegmentCleaning]:
    """Write the cleaned copy of `segment`; None when cleaning would change nothing."""
    tombstone_horizon_ms = now_ms - config.delete_retention_ms
    cleaned = LogSegment.create(segment.directory, segment.base_offset, config, now_ms, suffix=CLEANED_SUFFIX)
    done = _SegmentCleaning()
    kept_entries: list[AbortedTxn] = []
    for header, raw in _batches(segment):
        original = raw
        if header.is_control:
            raw = _clean_marker(header, raw, transactions, now_ms, config.delete_retention_ms, done, kept_entries)
        elif transactions.data_batch(header.producer_id, header.is_transactional, header.last_offset):
            done.records_removed += header.records_count
            done.aborted_records_removed += header.records_count
            raw = None
        else:
            batch = decode_batch(raw)
            kept = [record for record in batch.records if _retained(record, latest_offsets, tombstone_horizon_ms)]
            done.records_removed += len(batch.records) - len(kept)
            if not kept:
                raw = None
            elif len(kept) < len(batch.records):
                raw = _reencode(batch, kept)
        if raw is not None:
            cleaned.append(raw, [header if raw is original else read_header(raw)])
    if not done.changed:
        cleaned.delete()
        return None, done
    for entry in kept_entries:
        cleaned.txn_index.append(entry)
    return cleaned, done


def _clean_marker(header: BatchHeader, raw: bytes, transactions: CleanedTransactions, now_ms: int,
                  delete_retention_ms: int, done: _SegmentCleaning, kept_entries: list[AbortedTxn]) -> bytes | None:
    """The marker's bytes as the cleaned segment keeps them (None: removed)."""
    verdict = _marker_verdict(transactions, header, raw)
    if verdict is None:
        return raw
    if verdict.index_entry is not None:
        kept_entries.append(verdict.index_entry)
    fate = marker_fate(verdict, header.delete_horizon_ms, now_ms)
    if fate is MarkerFate.DROP:
        done.markers_removed += 1
        return None
    if fate is MarkerFate.STAMP:
        done.markers_stamped += 1
        batch = decode_batch(raw)
        return _reencode(batch, batch.records, delete_horizon_ms=now_ms + delete_retention_ms)
    return raw


def _reencode(batch: DecodedBatch, kept: list[Record], *, delete_horizon_ms: int | None = None) -> bytes:
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
        control=batch.is_control,
        delete_horizon_ms=delete_horizon_ms,
        log_append_time=batch.is_log_append_time,
    )


def _swap(old: LogSegment, cleaned: LogSegment) -> None:
    """Put the cleaned segment in place of the old one, safe against a crash at any step."""
    cleaned.seal()
    cleaned.flush()
    # The `.txnindex` first, in one rename: the new one lacks only transactions with no batch in either log,
    # so whichever index a crash leaves fits whichever log it leaves.
    cleaned.txn_index.replace(old.txn_index.path)
    old.delete_indexes()
    fsync_directory(old.directory)
    cleaned.rename_to_live()
    fsync_directory(old.directory)
    old.close(flush=False)
