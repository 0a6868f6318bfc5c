"""What the core knows of record batches: their offsets, epoch and size, never their bytes.

The driver reads these fields from each batch header (protocol.read_header)
and hands the bytes through untouched; the core decides with the numbers.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BatchInfo:
    base_offset: int
    last_offset: int
    leader_epoch: int
    size_bytes: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1
