"""Control records, as Kafka lays them out: the transaction markers a coordinator writes into partitions.

A marker batch has the control and transactional attribute bits, the
producer's id and epoch, no sequence (-1), and one record:

    key    version int16 (0), type int16 (ABORT=0, COMMIT=1)      Kafka's ControlRecordType key
    value  version int16 (0), coordinator epoch int32             Kafka's EndTransactionMarker

As Kafka does, a reader takes a newer version by its known prefix and refuses
a negative version or bytes too short; a control record of another type (a
KRaft one) is not a transaction marker.
"""

import struct
from collections.abc import Sequence

from replog.core.txn.markers import ControlType, TxnMarker
from replog.core.txn.read_committed import FetchedBatch
from replog.protocol.batch import DecodedBatch, decode_body, encode_batch
from replog.protocol.errors import CorruptBatchError
from replog.protocol.header import BatchHeader
from replog.protocol.records import Record

CONTROL_KEY = struct.Struct(">hh")
MARKER_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
MARKER_VALUE_VERSION = 0


def encode_control_key(control_type: ControlType) -> bytes:
    return CONTROL_KEY.pack(CONTROL_KEY_VERSION, control_type)


def encode_marker_value(coordinator_epoch: int) -> bytes:
    return MARKER_VALUE.pack(MARKER_VALUE_VERSION, coordinator_epoch)


def control_type_id(key: bytes | None) -> int:
    """The type id of a control record's key (any type, KRaft's too); ValueError if the key is not one."""
    return _versioned(CONTROL_KEY, key, "control record key")


def decode_marker_value(value: bytes | None) -> int:
    """The coordinator epoch of an EndTransactionMarker value; ValueError if the value is not one."""
    return _versioned(MARKER_VALUE, value, "transaction marker value")


def _versioned(layout: struct.Struct, data: bytes | None, what: str) -> int:
    """The field after the version of a (version, field) layout, read as Kafka reads it: a newer version
    by its known prefix; too few bytes or a negative version are refused."""
    if data is None or len(data) < layout.size:
        raise ValueError(f"a {what} needs {layout.size} bytes, found {0 if data is None else len(data)}")
    version, field = layout.unpack_from(data)
    if version < 0:
        raise ValueError(f"a {what} has version {version}")
    return field


def marker_batch(marker: TxnMarker, *, timestamp_ms: int, base_offset: int = 0,
                 partition_leader_epoch: int = -1) -> bytes:
    """The control batch that ends `marker.producer_id`'s transaction on a partition."""
    return encode_batch([(encode_control_key(marker.control_type), encode_marker_value(marker.coordinator_epoch))],
                        base_offset=base_offset, base_timestamp_ms=timestamp_ms, producer_id=marker.producer_id,
                        producer_epoch=marker.producer_epoch, partition_leader_epoch=partition_leader_epoch,
                        transactional=True, control=True)


def decode_marker(batch: DecodedBatch) -> TxnMarker | None:
    """The transaction marker a control batch holds; None for another kind of control record (or an empty
    control batch, whose transaction compaction removed). CorruptBatchError when the bytes are no marker."""
    if not batch.is_control:
        raise CorruptBatchError(batch.position, f"batch at offset {batch.base_offset} is not a control batch")
    if not batch.records:
        return None
    record = batch.records[0]
    try:
        type_id = control_type_id(record.key)
        if type_id not in (ControlType.ABORT, ControlType.COMMIT):
            return None
        coordinator_epoch = decode_marker_value(record.value)
    except ValueError as error:
        raise CorruptBatchError(batch.position, f"control batch at offset {batch.base_offset}: {error}") from None
    if not batch.is_transactional:
        raise CorruptBatchError(batch.position, f"transaction marker at offset {batch.base_offset} is not "
                                                f"marked transactional")
    return TxnMarker(batch.producer_id, batch.producer_epoch, coordinator_epoch, type_id == ControlType.COMMIT)


def fetched_batch(batch: DecodedBatch) -> FetchedBatch:
    """What the read_committed rule needs of a decoded batch."""
    if not batch.is_control:
        return FetchedBatch(batch.base_offset, batch.last_offset, batch.producer_id, batch.is_transactional, None,
                            tuple(batch.records))
    return _control_batch(batch, batch.records)


def fetched_header(buf, header: BatchHeader) -> FetchedBatch:
    """What the read_committed rule needs of a batch in `buf`, without its records: only a control batch's
    one record is decoded, for its type."""
    if not header.is_control:
        return FetchedBatch(header.base_offset, header.last_offset, header.producer_id, header.is_transactional,
                            None)
    return _control_batch(header, decode_body(buf, header))


def _control_batch(header: BatchHeader, records: Sequence[Record]) -> FetchedBatch:
    try:
        control_type = control_type_id(records[0].key) if records else ControlType.UNKNOWN
    except ValueError as error:
        raise CorruptBatchError(header.position, f"control batch at offset {header.base_offset}: {error}") from None
    return FetchedBatch(header.base_offset, header.last_offset, header.producer_id, header.is_transactional,
                        control_type, ())
