"""The leader epoch cache: which leader epoch wrote which range of the log.

A list of (epoch, start_offset) entries, both strictly increasing: entry i says
that the batches from `start_offset` up to the next entry's start were written
by the leader of `epoch`. It answers OffsetsForLeaderEpoch (KIP-101), which is
how a follower finds where its log diverges from the leader's without trusting
a high watermark, and how a consumer detects a truncation (KIP-320).

Persistence belongs to the storage layer; the replica emits a checkpoint of
`entries` whenever they change.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from .invariant import require

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class EpochEndOffset(NamedTuple):
    """An answer to OffsetsForLeaderEpoch: a known epoch and where it ends (exclusive)."""

    epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        return self.epoch == UNDEFINED_EPOCH or self.end_offset == UNDEFINED_EPOCH_OFFSET


UNDEFINED_EPOCH_END_OFFSET = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._epochs: list[int] = []
        self._start_offsets: list[int] = []
        for entry in entries:
            if self._epochs:
                require(
                    entry.epoch > self._epochs[-1] and entry.start_offset > self._start_offsets[-1],
                    "epoch cache entries must strictly increase: %s after (%d, %d)",
                    entry,
                    self._epochs[-1],
                    self._start_offsets[-1],
                )
            self._append(entry.epoch, entry.start_offset)

    def _append(self, epoch: int, start_offset: int) -> None:
        require(epoch >= 0 and start_offset >= 0, "negative epoch entry (%d, %d)", epoch, start_offset)
        self._epochs.append(epoch)
        self._start_offsets.append(start_offset)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(EpochEntry(e, s) for e, s in zip(self._epochs, self._start_offsets))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True if the entries changed.

        Called with (e, LEO) on becoming leader at epoch e, and with each batch's
        (epoch, base offset) when a follower appends. A later batch of the latest
        epoch changes nothing. A new epoch that starts where the latest one
        starts replaces it: that epoch wrote nothing, and start offsets must stay
        strictly increasing.
        """
        if not self._epochs:
            self._append(epoch, start_offset)
            return True
        latest_epoch, latest_start = self._epochs[-1], self._start_offsets[-1]
        require(epoch >= latest_epoch, "epoch %d assigned after epoch %d", epoch, latest_epoch)
        require(
            start_offset >= latest_start,
            "epoch %d assigned at offset %d, before the latest start offset %d",
            epoch,
            start_offset,
            latest_start,
        )
        if epoch == latest_epoch:
            return False
        if start_offset == latest_start:
            self._epochs.pop()
            self._start_offsets.pop()
        self._append(epoch, start_offset)
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochEndOffset:
        """Kafka's OffsetsForLeaderEpoch answer for `requested_epoch`.

        - the latest epoch ends at the log end offset (it is still being written);
        - an older epoch: the largest epoch <= requested, ending where the next
          higher epoch starts;
        - an epoch below the first entry: the requested epoch, ending at the first
          entry's start offset (the older history is gone, e.g. by retention, and
          the asker must not keep anything past that point);
        - UNDEFINED for an undefined request, an empty cache, or an epoch above
          the latest (which no leader of this log has written).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH_END_OFFSET
        latest_epoch = self._epochs[-1]
        if requested_epoch == latest_epoch:
            return EpochEndOffset(requested_epoch, log_end_offset)
        if requested_epoch > latest_epoch:
            return UNDEFINED_EPOCH_END_OFFSET
        higher = bisect_right(self._epochs, requested_epoch)
        if higher == 0:
            return EpochEndOffset(requested_epoch, self._start_offsets[0])
        return EpochEndOffset(self._epochs[higher - 1], self._start_offsets[higher])

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries that start at or after `end_offset` (the log was truncated there)."""
        keep = bisect_left(self._start_offsets, end_offset)
        if keep == len(self._epochs):
            return False
        del self._epochs[keep:]
        del self._start_offsets[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget history before `start_offset` (the log start moved there).

        The entry covering `start_offset` is kept and now starts there.
        """
        covering = bisect_right(self._start_offsets, start_offset) - 1
        if covering < 0:
            return False
        if covering == 0 and self._start_offsets[0] == start_offset:
            return False
        del self._epochs[:covering]
        del self._start_offsets[:covering]
        self._start_offsets[0] = start_offset
        return True
