"""The records of `__transaction_state`: one transactional id's metadata, keyed by the id.

The topic is compacted: the latest record of an id is its state, and a
tombstone (no value) forgets an id whose transactional.id.expiration.ms passed.
The coordinator writes a record before it answers, and rebuilds its state by
replaying the records, live and after a failover alike.

    key    version int16 (0), transactional id string
    value  version int16 (0), producer id int64, previous producer id int64,
           next producer id int64, producer epoch int16, last producer epoch int16,
           transaction timeout ms int32, state int8 (TxnState),
           partitions [topic string, [partition int32]], last update timestamp ms int64,
           transaction start timestamp ms int64

The fields are those of Kafka's TransactionLogValue (its previous and next
producer ids are tagged fields there, plain ones here); the encoding is
record_codec's. Decoding is strict: bytes that are not such a record raise
RecordError with one sentence.
"""

from dataclasses import dataclass

from ..invariant import InvariantViolation
from ..record_codec import Reader, Writer
from ..topic_partition import TopicPartition
from .metadata import TransactionMetadata
from .state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
_WHAT = "__transaction_state record"
# States a record may hold: PREPARE_EPOCH_FENCE is never written, DEAD is a tombstone.
_WRITTEN_STATES = frozenset(TxnState) - {TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD}


class RecordError(ValueError):
    """Bytes in __transaction_state that are not a record this coordinator writes."""


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One record: the transactional id (the key) and its metadata (None: a tombstone)."""

    transactional_id: str
    metadata: TransactionMetadata | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.transactional_id), None if self.metadata is None else encode_value(self.metadata)


def encode_key(transactional_id: str) -> bytes:
    writer = Writer(_WHAT)
    writer.int16(KEY_VERSION)
    writer.string(transactional_id)
    return writer.bytes()


def encode_value(metadata: TransactionMetadata) -> bytes:
    writer = Writer(_WHAT)
    writer.int16(VALUE_VERSION)
    writer.int64(metadata.producer_id)
    writer.int64(metadata.previous_producer_id)
    writer.int64(metadata.next_producer_id)
    writer.int16(metadata.producer_epoch)
    writer.int16(metadata.last_producer_epoch)
    writer.int32(metadata.timeout_ms)
    writer.int8(metadata.state)
    topics: dict[str, set[int]] = {}
    for topic, partition in metadata.partitions:
        topics.setdefault(topic, set()).add(partition)
    writer.partitions({topic: frozenset(indexes) for topic, indexes in topics.items()})
    writer.int64(metadata.last_update_timestamp_ms)
    writer.int64(metadata.start_timestamp_ms)
    return writer.bytes()


def decode(key: bytes, value: bytes | None) -> TxnRecord:
    """A record from its key and value bytes; RecordError for anything else."""
    reader = Reader(key, RecordError, _WHAT)
    version = reader.int16()
    if version != KEY_VERSION:
        raise RecordError(f"a {_WHAT} has key version {version}; this build reads {KEY_VERSION}")
    transactional_id = reader.text()
    reader.done()
    return TxnRecord(transactional_id, None if value is None else _decode_value(transactional_id, value))


def _decode_value(transactional_id: str, data: bytes) -> TransactionMetadata:
    reader = Reader(data, RecordError, _WHAT)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise RecordError(f"the {_WHAT} of {transactional_id!r} has value version {version}; this build reads "
                          f"{VALUE_VERSION}")
    producer_id, previous_producer_id, next_producer_id = reader.int64(), reader.int64(), reader.int64()
    producer_epoch, last_producer_epoch, timeout_ms = reader.int16(), reader.int16(), reader.int32()
    state_id = reader.int8()
    if state_id not in {int(state) for state in _WRITTEN_STATES}:
        raise RecordError(f"the {_WHAT} of {transactional_id!r} has state {state_id}, which is never written")
    partitions = frozenset(TopicPartition(topic, index) for topic, indexes in reader.partitions().items()
                           for index in indexes)
    last_update_timestamp_ms, start_timestamp_ms = reader.int64(), reader.int64()
    reader.done()
    try:
        return TransactionMetadata(transactional_id, producer_id, producer_epoch, timeout_ms, TxnState(state_id),
                                   last_update_timestamp_ms, partitions, start_timestamp_ms, last_producer_epoch,
                                   previous_producer_id, next_producer_id)
    except InvariantViolation as error:
        raise RecordError(f"the {_WHAT} of {transactional_id!r} does not hold together: {error}") from None
