"""What the log checks in a list of batches before appending it, beyond each batch's own
header, size and CRC (`batches.check_batches`), and the leader epochs the list carries."""

from __future__ import annotations

from collections.abc import Sequence

from replog.protocol import BatchHeader, decode_batch


def offsets_problem(headers: Sequence[BatchHeader], log_end_offset: int) -> str:
    """Why a follower's batches cannot follow the log (empty when they can): the first must start
    at or past the LEO, and each after the one before it."""
    if headers[0].base_offset < log_end_offset:
        return f"the first batch starts at offset {headers[0].base_offset}, below the log end offset {log_end_offset}"
    for previous, header in zip(headers, headers[1:]):
        if header.base_offset <= previous.last_offset:
            return f"a batch at offset {header.base_offset} does not follow the batch ending at {previous.last_offset}"
    return ""


def keyless_record(buf: bytearray, headers: Sequence[BatchHeader]) -> str:
    """Kafka refuses records without a key on compacted topics: the cleaner could not keep them."""
    for header in headers:
        if header.is_control:
            continue
        for record in decode_batch(buf, header.position).records:
            if record.key is None:
                return f"a compacted topic cannot take a record without a key (batch at byte {header.position})"
    return ""


def epoch_starts(headers: Sequence[BatchHeader]) -> tuple[tuple[int, int], ...]:
    """(leader epoch, first offset) wherever the epoch changes among the batches, for the epoch cache."""
    starts: list[tuple[int, int]] = []
    for header in headers:
        if not starts or starts[-1][0] != header.partition_leader_epoch:
            starts.append((header.partition_leader_epoch, header.base_offset))
    return tuple(starts)
