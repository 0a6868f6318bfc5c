"""The RecordBatch v2 (magic 2) header: field offsets, sizes and attribute bits.

    offset  field                 type
         0  baseOffset            int64
         8  batchLength           int32   bytes after this field
        12  partitionLeaderEpoch  int32
        16  magic                 int8    always 2
        17  crc                   uint32  CRC-32C of bytes 21 .. end of batch
        21  attributes            int16
        23  lastOffsetDelta       int32
        27  baseTimestamp         int64
        35  maxTimestamp          int64
        43  producerId            int64
        51  producerEpoch         int16
        53  baseSequence          int32
        57  recordsCount          int32
        61  records

All integers are big-endian. baseOffset and partitionLeaderEpoch sit before
the CRC'd range so a broker can stamp them without re-hashing the batch.
"""

import struct

MAGIC = 2
HEADER_SIZE = 61

BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

# batchLength counts the bytes after itself: size of a batch = LOG_OVERHEAD + batchLength.
LOG_OVERHEAD = BATCH_LENGTH_OFFSET + 4
BATCH_LENGTH_MIN = HEADER_SIZE - LOG_OVERHEAD

# Smallest record: length, attributes, timestampDelta, offsetDelta, keyLength,
# valueLength and headers count, one byte each.
RECORD_SIZE_MIN = 7

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # set: LogAppendTime, clear: CreateTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# Set: baseTimestamp is the batch's delete horizon, not its first record's time (KIP-534); the cleaner
# stamps it on a transaction marker it may remove once that time has passed.
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

HEADER = struct.Struct(">qiibIhiqqqhii")
# The part ahead of the CRC and the CRC'd part, packed apart by the encoder.
PREFIX = struct.Struct(">qiibI")
CRC_FIELDS = struct.Struct(">hiqqqhii")
BASE_OFFSET = struct.Struct(">q")
BATCH_LENGTH = struct.Struct(">i")
PARTITION_LEADER_EPOCH = struct.Struct(">i")
CRC = struct.Struct(">I")
ATTRIBUTES = struct.Struct(">h")
TIMESTAMP = struct.Struct(">q")

if HEADER.size != HEADER_SIZE or PREFIX.size != ATTRIBUTES_OFFSET:
    raise RuntimeError("the batch header structs disagree with the v2 layout")
