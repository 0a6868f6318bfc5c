"""The core's view of its own log: offsets, high watermark and epoch cache.

Every change becomes a log operation or a checkpoint in the outbox, so that
the log on disk and this view move together once the driver applies them.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from .epoch_cache import EpochEntry, LeaderEpochCache
from .invariant import require
from .messages import AppendAsFollower, AppendAsLeader, DeleteRecordsBefore, TruncateFullyAndStartAt, TruncateTo
from .outbox import Outbox
from .producer_state import CompletedTxn, ProducerAppend, ProducerEntry, ProducerStates
from .records import BatchInfo
from .txn.aborted import AbortedTxn
from .txn.markers import TxnMarker


class LocalLog:
    def __init__(
        self,
        outbox: Outbox,
        *,
        log_start_offset: int,
        log_end_offset: int,
        epoch_entries: Iterable[EpochEntry],
        high_watermark: int,
        producer_entries: Iterable[ProducerEntry] = (),
        verify_transactions: bool = True,
    ) -> None:
        require(
            0 <= log_start_offset <= log_end_offset,
            "log start offset %d must lie in [0, log end offset %d]",
            log_start_offset,
            log_end_offset,
        )
        self._outbox = outbox
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_end_offset
        self.epoch_cache = LeaderEpochCache(epoch_entries)
        # After a crash the checkpoint may name epochs whose records were lost.
        if self.epoch_cache.truncate_from_end(log_end_offset):
            outbox.checkpoint_epochs()
        # The HW checkpoint is written lazily and the log may have lost its tail.
        self._high_watermark = min(max(high_watermark, log_start_offset), log_end_offset)
        # Grows with every change of the offsets or the epochs: what a fetch's plan depends on.
        self.version = 0
        self.producers = ProducerStates(producer_entries, verify_transactions=verify_transactions)
        self.producers.truncate(log_end_offset)

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Below it every transaction is decided and replicated: where read_committed reads stop. Never below
        the log start: DeleteRecords may delete the start of a transaction still open (Kafka clamps it too)."""
        return max(self.producers.last_stable_offset(self._high_watermark), self._log_start_offset)

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache.latest_epoch

    @property
    def epoch_entries(self) -> tuple[EpochEntry, ...]:
        return self.epoch_cache.entries

    def start_epoch(self, leader_epoch: int) -> None:
        """On becoming leader: the epoch starts at the log end offset (DESIGN §6)."""
        if self.epoch_cache.assign(leader_epoch, self._log_end_offset):
            self._outbox.checkpoint_epochs()
            self.version += 1

    def append_as_leader(self, records: Any, record_count: int, leader_epoch: int,
                         producer: ProducerAppend | None = None, now_ms: int = 0,
                         marker: TxnMarker | None = None) -> int:
        require(record_count > 0, "an append needs at least one record, got %d", record_count)
        require(
            leader_epoch == self.epoch_cache.latest_epoch,
            "leader appends at epoch %d but the latest epoch is %d",
            leader_epoch,
            self.epoch_cache.latest_epoch,
        )
        base_offset = self._log_end_offset
        last_offset = base_offset + record_count - 1
        aborted = ()
        if marker is not None:
            aborted = _aborted(self.producers.complete(marker, base_offset, now_ms))
        elif producer is not None:
            self.producers.update(producer, base_offset, last_offset, now_ms)
        self._outbox.log_op(AppendAsLeader(records, leader_epoch, base_offset, last_offset, aborted))
        self._log_end_offset = last_offset + 1
        self.version += 1
        return base_offset

    def append_as_follower(self, records: Any, batches: Sequence[BatchInfo], leader_epoch: int,
                           now_ms: int = 0) -> None:
        expected_offset = self._log_end_offset
        aborted: list[AbortedTxn] = []
        for batch in batches:
            # Batches may skip offsets (a compacted leader log), never overlap.
            require(
                batch.base_offset >= expected_offset and batch.last_offset >= batch.base_offset,
                "fetched batch %s does not follow offset %d",
                batch,
                expected_offset,
            )
            require(
                self.epoch_cache.latest_epoch <= batch.leader_epoch <= leader_epoch,
                "fetched batch %s has an epoch outside [%d, %d]",
                batch,
                self.epoch_cache.latest_epoch,
                leader_epoch,
            )
            if self.epoch_cache.assign(batch.leader_epoch, batch.base_offset):
                self._outbox.checkpoint_epochs()
            producer = batch.producer_append
            if batch.marker is not None:
                aborted += _aborted(self.producers.complete(batch.marker, batch.base_offset, now_ms))
            elif producer is not None:
                self.producers.update(producer, batch.base_offset, batch.last_offset, now_ms)
            expected_offset = batch.next_offset
        self._outbox.log_op(AppendAsFollower(records, tuple(batches), tuple(aborted)))
        self._log_end_offset = expected_offset
        self.version += 1

    def truncate_to(self, offset: int) -> bool:
        """Truncate the log to `offset` and forget epochs from there; True if anything changed."""
        changed = False
        if offset < self._log_end_offset:
            self._outbox.log_op(TruncateTo(offset))
            self._log_end_offset = offset
            self.producers.truncate(offset)
            changed = True
        if self.epoch_cache.truncate_from_end(offset):
            self._outbox.checkpoint_epochs()
            changed = True
        if self._high_watermark > self._log_end_offset:
            # Only after an unclean election (or the loss of every ISR member's
            # copy) can a truncation reach below the high watermark.
            self._high_watermark = self._log_end_offset
            self._outbox.checkpoint_high_watermark()
        self.version += 1
        return changed

    def restore_producers(self, entries: Iterable[ProducerEntry], log_end_offset: int) -> None:
        """The producers rebuilt from the log after a truncation, as of `log_end_offset` (ProducerStates.restore)."""
        require(log_end_offset == self._log_end_offset,
                "producers rebuilt as of offset %d, but the log ends at %d", log_end_offset, self._log_end_offset)
        self.producers.restore(entries)
        self.version += 1

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._outbox.log_op(TruncateFullyAndStartAt(offset))
        self._log_start_offset = self._log_end_offset = self._high_watermark = offset
        self.epoch_cache = LeaderEpochCache()
        self.producers.clear()
        self._outbox.checkpoint_epochs()
        self._outbox.checkpoint_high_watermark()
        self.version += 1

    def advance_log_start_offset(self, offset: int) -> None:
        """Retention removed everything before `offset` from the log already."""
        self._move_log_start(offset)

    def delete_records_before(self, offset: int) -> None:
        """DeleteRecords (or a follower taking its leader's log start): the log is to start at `offset`."""
        if offset > self._log_start_offset:
            self._move_log_start(offset)
            self._outbox.log_op(DeleteRecordsBefore(offset))

    def _move_log_start(self, offset: int) -> None:
        require(
            self._log_start_offset <= offset <= self._high_watermark,
            "log start offset may only move forward and below the high watermark: %d -> %d (HW %d)",
            self._log_start_offset,
            offset,
            self._high_watermark,
        )
        self._log_start_offset = offset
        if self.epoch_cache.truncate_from_start(offset):
            self._outbox.checkpoint_epochs()
        self.version += 1

    def advance_high_watermark(self, candidate: int) -> bool:
        """Raise the high watermark to `candidate` if that is higher; it never goes back here."""
        if candidate <= self._high_watermark:
            return False
        require(
            candidate <= self._log_end_offset,
            "high watermark %d beyond the log end offset %d",
            candidate,
            self._log_end_offset,
        )
        self._high_watermark = candidate
        self.producers.forget_stable(candidate)
        self._outbox.checkpoint_high_watermark()
        self.version += 1
        return True


def _aborted(completed: CompletedTxn | None) -> tuple[AbortedTxn, ...]:
    """What a marker adds to its segment's .txnindex: the transaction, when it aborted one."""
    entry = completed.aborted_txn() if completed is not None else None
    return () if entry is None else (entry,)
