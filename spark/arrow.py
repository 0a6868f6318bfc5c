"""Fetched record batches as Arrow record batches, in spark-sql-kafka's row layout.

This is where the reader's speed comes from: the compiled decoder
(`replog.protocol._records.decode_columns`) writes the records of all batches
of one fetch answer straight into Arrow's buffers (offsets, timestamps, key
and value with their validity bitmaps), and Spark takes the Arrow batch as it
is. Records with headers (when asked for), batches the compiled decoder
declines and installs without it take the record decoder and `pa.array`.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from replog.core.txn.read_committed import AbortedFilter
from replog.protocol import decode_section, iter_headers, records_section
from replog.protocol.control import fetched_header
from replog.protocol.header import BatchHeader

try:
    from replog.protocol._records import decode_columns
except ImportError:  # installed without a C compiler
    decode_columns = None

CREATE_TIME, LOG_APPEND_TIME = 0, 1  # spark-sql-kafka's timestampType values

SPARK_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                "timestampType int")
SPARK_HEADERS = ", headers array<struct<key:string,value:binary>>"
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
# Spark compares the schema of the batches a Python source returns with to_arrow_schema(schema,
# timezone="UTC"): these are those fields (tests/spark checks that they still are).
ARROW_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
ARROW_SCHEMA = pa.schema(ARROW_FIELDS)
ARROW_SCHEMA_WITH_HEADERS = pa.schema(ARROW_FIELDS + [pa.field("headers", HEADERS_TYPE)])


def spark_schema(include_headers: bool) -> str:
    return SPARK_SCHEMA + (SPARK_HEADERS if include_headers else "")


def arrow_schema(include_headers: bool) -> pa.Schema:
    return ARROW_SCHEMA_WITH_HEADERS if include_headers else ARROW_SCHEMA


def visible_batches(view: memoryview, headers: Iterable[BatchHeader], *, read_committed_lso: int | None,
                    aborted: Iterable[tuple[int, int]] = ()) -> list[BatchHeader]:
    """The data batches a reader is given: all of them, or under read_committed those the consumer's
    rule keeps (below the last stable offset, not of an aborted transaction)."""
    if read_committed_lso is None:
        return [h for h in headers if not h.is_control]
    kept = AbortedFilter(aborted)
    visible = []
    for header in headers:
        if header.base_offset >= read_committed_lso:
            break
        if kept.keeps(fetched_header(view, header)):
            visible.append(header)
    return visible


class ColumnBuilder:
    """Builds one partition's Arrow batches from fetched record bytes."""

    def __init__(self, topic: str, partition: int, *, include_headers: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.schema = arrow_schema(include_headers)

    def build(self, view: memoryview, headers: list[BatchHeader], first: int, until: int) -> pa.RecordBatch | None:
        """The records of `headers` (batches in `view`) with offsets in [first, until); None if none."""
        headers = [h for h in headers if h.next_offset > first and h.base_offset < until]
        if not headers:
            return None
        sections = [records_section(view, h) for h in headers]
        segments = [(section, h.records_count, h.base_offset, h.base_timestamp,
                     h.max_timestamp if h.is_log_append_time else None,
                     LOG_APPEND_TIME if h.is_log_append_time else CREATE_TIME) for section, h in zip(sections, headers)]
        columns = decode_columns(segments, first, until) if decode_columns is not None else None
        if columns is not None and not (self.include_headers and columns[6]):
            return self._from_buffers(columns)
        return self._from_records(sections, headers, first, until)

    def _from_buffers(self, columns) -> pa.RecordBatch | None:
        rows, offsets, timestamps, types, key, value, _has_headers = columns
        if rows == 0:
            return None
        arrays = [_binary(rows, key), _binary(rows, value), *self._constants(rows),
                  pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(offsets)]),
                  pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), rows, [None, pa.py_buffer(timestamps)]),
                  pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(types)])]
        if self.include_headers:
            arrays.append(pa.array([[]] * rows, HEADERS_TYPE))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _from_records(self, sections: list, headers: list[BatchHeader], first: int,
                      until: int) -> pa.RecordBatch | None:
        """The records decoded one by one (records with headers, or no compiled decoder); `sections` are
        the batches' records sections, inflated once for both ways."""
        keys, values, offsets, timestamps, types, record_headers = [], [], [], [], [], []
        for section, header in zip(sections, headers):
            kind = LOG_APPEND_TIME if header.is_log_append_time else CREATE_TIME
            for record in decode_section(section, header):
                if first <= record.offset < until:
                    keys.append(record.key)
                    values.append(record.value)
                    offsets.append(record.offset)
                    timestamps.append(record.timestamp * 1000)
                    types.append(kind)
                    record_headers.append([{"key": k, "value": v} for k, v in record.headers])
        rows = len(offsets)
        if rows == 0:
            return None
        arrays = [pa.array(keys, pa.binary()), pa.array(values, pa.binary()), *self._constants(rows),
                  pa.array(offsets, pa.int64()), pa.array(timestamps, pa.timestamp("us", tz="UTC")),
                  pa.array(types, pa.int32())]
        if self.include_headers:
            arrays.append(pa.array(record_headers, HEADERS_TYPE))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _constants(self, rows: int) -> list[pa.Array]:
        return [pa.repeat(pa.scalar(self.topic, pa.string()), rows),
                pa.repeat(pa.scalar(self.partition, pa.int32()), rows)]


def _binary(rows: int, column) -> pa.Array:
    validity, offsets, data, nulls = column
    return pa.Array.from_buffers(pa.binary(), rows, [None if validity is None else pa.py_buffer(validity),
                                                     pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def checked_headers(view: memoryview) -> list[BatchHeader]:
    """The checked header of each whole batch in a fetch answer (a cut-off last batch is left out)."""
    return list(iter_headers(view))
