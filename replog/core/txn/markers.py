"""Transaction markers as partitions see them: a control batch of one record that ends a producer's
transaction on the partition, COMMIT or ABORT.

The batch carries the producer's id and epoch (the epoch after the end's bump,
KIP-890) and both the transactional and the control attribute bits; its record
has Kafka's ControlRecord key (version int16, type int16) and
EndTransactionMarker value (version int16, coordinator epoch int32).
replog.protocol.control encodes and decodes them; the core sees `TxnMarker`.
"""

import enum
from dataclasses import dataclass


class ControlType(enum.IntEnum):
    """Kafka's ControlRecordType ids; the others (LEADER_CHANGE=2, SNAPSHOT_*) are KRaft's."""

    UNKNOWN = -1  # an empty control batch (compaction removed its record)
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool

    @property
    def control_type(self) -> ControlType:
        return ControlType.COMMIT if self.commit else ControlType.ABORT
