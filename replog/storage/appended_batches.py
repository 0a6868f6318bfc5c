"""What a partition checks in a list of batches before appending it, beyond each batch's own
header, size and CRC (`batches.check_batches`), and the leader epochs the list carries.

`refused_records` holds what a topic's configs demand of a producer's records. The leader asks it
before its core gives the batches offsets: a batch refused there is answered with Kafka's error and
nothing is appended, where a refusal by the log itself would take the replica offline.
"""

from __future__ import annotations

from collections.abc import Sequence

from replog.core.errors import ErrorCode
from replog.core.log_config import INT64_MAX, LogConfig
from replog.protocol import BatchHeader, CorruptBatchError, decode_section, records_section
from replog.protocol.record_decoding import all_records_pass


def offsets_problem(headers: Sequence[BatchHeader], log_end_offset: int) -> str:
    """Why a follower's batches cannot follow the log (empty when they can): the first must start
    at or past the LEO, and each after the one before it."""
    if headers[0].base_offset < log_end_offset:
        return f"the first batch starts at offset {headers[0].base_offset}, below the log end offset {log_end_offset}"
    for previous, header in zip(headers, headers[1:]):
        if header.base_offset <= previous.last_offset:
            return f"a batch at offset {header.base_offset} does not follow the batch ending at {previous.last_offset}"
    return ""


def refused_records(buf, headers: Sequence[BatchHeader], config: LogConfig,
                    now_ms: int) -> tuple[ErrorCode, str] | None:
    """Why a topic with `config` refuses a producer's batches at the leader's clock `now_ms`, or None.

    - A compacted topic takes no record without a key (INVALID_RECORD): the cleaner could not keep it.
    - A CreateTime topic takes no record timestamped more than message.timestamp.after.max.ms after
      `now_ms` or more than message.timestamp.before.max.ms before it (INVALID_TIMESTAMP, KIP-937);
      a record without a timestamp (-1) passes, and LogAppendTime topics check nothing.

    Records are read only when a rule needs them: on a compacted topic, or when
    message.timestamp.before.max.ms is set (a batch's maxTimestamp settles the other bound); the
    compiled walk reads them without building records, and they are decoded only where it cannot tell
    (a record refused, which the message names, or a section only the decoder can judge).
    """
    checks_time = not config.log_append_time
    latest = now_ms + config.message_timestamp_after_max_ms
    bounded_before = checks_time and config.message_timestamp_before_max_ms < INT64_MAX
    earliest = now_ms - config.message_timestamp_before_max_ms
    for index, header in enumerate(headers):
        if header.is_control:
            continue
        if checks_time and header.max_timestamp > latest:
            return ErrorCode.INVALID_TIMESTAMP, (
                f"batch {index} holds a record timestamped {header.max_timestamp}, more than "
                f"message.timestamp.after.max.ms={config.message_timestamp_after_max_ms} after the broker's "
                f"clock ({now_ms}); the topic takes timestamps up to {latest}")
        if not (config.compacts or bounded_before):
            continue
        try:
            section = records_section(buf, header)
            if all_records_pass(section, header.records_count, header.base_timestamp, config.compacts,
                                earliest if bounded_before else 0):
                continue
            records = decode_section(section, header)
        except CorruptBatchError as error:
            return ErrorCode.CORRUPT_MESSAGE, str(error)
        for number, record in enumerate(records):
            if config.compacts and record.key is None:
                return ErrorCode.INVALID_RECORD, (
                    f"record {number} of batch {index} has no key, and a compacted topic keeps the latest "
                    f"record of each key: give every record a key")
            if bounded_before and 0 <= record.timestamp < earliest:
                return ErrorCode.INVALID_TIMESTAMP, (
                    f"record {number} of batch {index} is timestamped {record.timestamp}, more than "
                    f"message.timestamp.before.max.ms={config.message_timestamp_before_max_ms} before the "
                    f"broker's clock ({now_ms}); the topic takes timestamps from {earliest}")
    return None


def epoch_starts(headers: Sequence[BatchHeader]) -> tuple[tuple[int, int], ...]:
    """(leader epoch, first offset) wherever the epoch changes among the batches, for the epoch cache."""
    starts: list[tuple[int, int]] = []
    for header in headers:
        if not starts or starts[-1][0] != header.partition_leader_epoch:
            starts.append((header.partition_leader_epoch, header.base_offset))
    return tuple(starts)
