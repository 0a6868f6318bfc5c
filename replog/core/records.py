"""What the core knows of record batches: their offsets, epoch and size, never their bytes.

The driver reads these fields from each batch header (protocol.read_header)
and hands the bytes through untouched; the core decides with the numbers.
"""

from dataclasses import dataclass

from .producer_state import NO_PRODUCER_ID, ProducerAppend, last_sequence
from .txn.markers import TxnMarker


@dataclass(frozen=True, slots=True)
class BatchInfo:
    base_offset: int
    last_offset: int
    leader_epoch: int
    size_bytes: int
    # An idempotent producer's batch carries its id, epoch and first sequence (else -1).
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: bool = False
    marker: TxnMarker | None = None  # a control batch's transaction marker, as the driver read it
    max_timestamp: int = -1

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def producer_append(self) -> ProducerAppend | None:
        """The producer's part of the batch, when an idempotent producer wrote it."""
        if self.producer_id == NO_PRODUCER_ID or self.control:
            return None
        return ProducerAppend(self.producer_id, self.producer_epoch, self.base_sequence,
                              last_sequence(self.base_sequence, self.last_offset - self.base_offset + 1),
                              self.transactional, max_timestamp=self.max_timestamp)
