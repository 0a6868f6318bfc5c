"""The broker's only writes into a producer's bytes: offsets and leader epoch, and LogAppendTime.

baseOffset and partitionLeaderEpoch lie before the CRC'd range (which starts
at attributes), so the broker assigns offsets and its leader epoch in place
and the producer's CRC stays valid: no re-encoding, no copy. On a topic with
message.timestamp.type=LogAppendTime the leader also marks each batch's
timestamps as its own and sets its maxTimestamp; those lie inside the CRC'd
range, so each batch is hashed again (records are still not re-encoded).
"""

from collections.abc import Iterable

import crc32c

from replog.protocol.header import BatchHeader
from replog.protocol.layout import (
    ATTRIBUTES,
    ATTRIBUTES_OFFSET,
    BASE_OFFSET,
    CRC,
    CRC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
)


def stamp_batches(
    buf: bytearray | memoryview,
    base_offset: int,
    partition_leader_epoch: int,
    headers: Iterable[BatchHeader],
) -> int:
    """Give the batches consecutive offsets from `base_offset`; return the next free offset.

    `headers` come from `validate_batches` over the same buffer. Each batch
    takes lastOffsetDelta + 1 offsets, so the relative offsets inside it hold.
    The headers themselves are not updated (they are frozen); read them again
    for the stamped values.
    """
    next_offset = base_offset
    for header in headers:
        BASE_OFFSET.pack_into(buf, header.position, next_offset)
        PARTITION_LEADER_EPOCH.pack_into(buf, header.position + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
        next_offset += header.last_offset_delta + 1
    return next_offset


def stamp_log_append_time(buf: bytearray, headers: Iterable[BatchHeader], now_ms: int) -> None:
    """Make `now_ms` the time of every record of these batches (LogAppendTime), as Kafka's leader does.

    Each batch gets the timestamp-type bit and maxTimestamp `now_ms`; readers
    give every record of such a batch its maxTimestamp. baseTimestamp and the
    records' deltas stay as the producer wrote them.
    """
    view = memoryview(buf)
    try:
        for header in headers:
            start = header.position
            ATTRIBUTES.pack_into(buf, start + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_BIT)
            TIMESTAMP.pack_into(buf, start + MAX_TIMESTAMP_OFFSET, now_ms)
            CRC.pack_into(buf, start + CRC_OFFSET, crc32c.crc32c(view[start + ATTRIBUTES_OFFSET : header.end]))
    finally:
        view.release()
