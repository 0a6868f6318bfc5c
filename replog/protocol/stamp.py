"""stamp_batches: the broker's only write into a producer's bytes.

baseOffset and partitionLeaderEpoch lie before the CRC'd range (which starts
at attributes), so the broker assigns offsets and its leader epoch in place
and the producer's CRC stays valid: no re-encoding, no copy.
"""

from collections.abc import Iterable

from replog.protocol.header import BatchHeader
from replog.protocol.layout import BASE_OFFSET, PARTITION_LEADER_EPOCH, PARTITION_LEADER_EPOCH_OFFSET


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
