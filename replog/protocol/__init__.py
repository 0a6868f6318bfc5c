"""Kafka's RecordBatch v2 codec: varints, CRC-32C, compression, validation, stamping.

Imports nothing of replog but `replog.core`. The public API lives in
`replog.protocol.batch` and is repeated here.
"""

from replog.protocol.batch import (
    BatchHeader,
    Compression,
    CorruptBatchError,
    DecodedBatch,
    Record,
    ValidationResult,
    decode_batch,
    decode_body,
    decode_section,
    encode_batch,
    iter_batches,
    iter_headers,
    iter_records,
    read_header,
    recompress_batches,
    records_section,
    stamp_batches,
    stamp_log_append_time,
    validate_batches,
)

__all__ = [
    "BatchHeader",
    "Compression",
    "CorruptBatchError",
    "DecodedBatch",
    "Record",
    "ValidationResult",
    "decode_batch",
    "decode_body",
    "decode_section",
    "encode_batch",
    "iter_batches",
    "iter_headers",
    "iter_records",
    "read_header",
    "recompress_batches",
    "records_section",
    "stamp_batches",
    "stamp_log_append_time",
    "validate_batches",
]
