"""Batch and streaming writes: each task produces its rows with the replog producer (acks=all).

The rows are spark-sql-kafka's: `value` (string or binary) and, optionally,
`key` (string or binary), `topic` (string; the `topic` option wins over it),
`partition` (int; else the key's hash, else the sticky partitioner) and
`headers` (array<struct<key:string,value:binary>>). Each task waits until all
of its records are acknowledged before it reports success, so a write that
succeeded is on every in-sync replica; a task that fails and is tried again
writes its rows again: at least once, like spark-sql-kafka.

Exactly once (`transactional=true`) writes each task's rows in one replog
transaction whose transactional id is named by the query and the task's
partition, and commits it in the task's commit step together with a marker
keyed by the micro-batch id, so that a retried task or micro-batch finds its
rows committed and writes nothing twice. It needs the transactional producer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from replog.client import Producer
from replog.spark.options import OptionError, SinkOptions

log = logging.getLogger("replog.spark")

FLUSH_TIMEOUT_S = 300.0
BYTES_OR_STRING = (BinaryType, StringType)


@dataclass(frozen=True)
class Columns:
    """Which of spark-sql-kafka's sink columns the rows have."""

    key: bool
    topic: bool
    partition: bool
    headers: bool


@dataclass
class WrittenRows(WriterCommitMessage):
    rows: int


def transactions_supported() -> bool:
    """Whether this replog's producer can write transactions (a transactional_id config)."""
    return "transactional_id" in inspect.signature(Producer.__init__).parameters


def transactional_id(query_id: str, partition_id: int) -> str:
    """The transaction of one task of one query: the same across its attempts and restarts, so a new
    attempt fences the old one (init_transactions) and its open transaction is aborted."""
    return f"spark-{query_id}-{partition_id}"


def sink_columns(schema: StructType, options: SinkOptions) -> Columns:
    """The columns to write, checked against spark-sql-kafka's sink schema."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    value = fields.get("value")
    if value is None:
        raise OptionError(f"writing to replog needs a value column (string or binary); the rows have "
                          f"{', '.join(schema.fieldNames()) or 'no columns'}")
    for name in ("key", "value", "topic"):
        wanted = BYTES_OR_STRING if name != "topic" else (StringType,)
        if name in fields and not isinstance(fields[name], wanted):
            kinds = "string or binary" if name != "topic" else "string"
            raise OptionError(f"the {name} column must be {kinds}, not {fields[name].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise OptionError(f"the partition column must be int, not {fields['partition'].simpleString()}")
    if "headers" in fields and not _is_headers(fields["headers"]):
        raise OptionError("the headers column must be array<struct<key:string,value:binary>>, not "
                          f"{fields['headers'].simpleString()}")
    if options.topic is None and "topic" not in fields:
        raise OptionError("say where to write: the topic option, or a topic column in the rows")
    return Columns(key="key" in fields, topic="topic" in fields and options.topic is None,
                   partition="partition" in fields, headers="headers" in fields)


def _is_headers(data_type) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    inner = {f.name: f.dataType for f in data_type.elementType.fields}
    return isinstance(inner.get("key"), StringType) and isinstance(inner.get("value"), BinaryType)


def refuse_exactly_once_until_supported(options: SinkOptions) -> None:
    """transactional=true is refused until the sink writes through the transactional producer."""
    if options.transactional:
        missing = "has no transactions yet" if not transactions_supported() else "is not wired into the sink yet"
        raise OptionError(f"transactional=true (exactly once) needs replog's transactional producer, which "
                          f"{missing}; leave the option out to write at least once")


def write_batches(options: SinkOptions, columns: Columns, batches: Iterator) -> WrittenRows:
    """Produce every row of the Arrow batches and wait until all are acknowledged."""
    rows = 0
    pending = {}
    with Producer(options.bootstrap, acks=options.acks) as producer:
        for batch in batches:
            values = [_as_bytes(v) for v in batch.column("value").to_pylist()]
            rows += len(values)
            topics = batch.column("topic").to_pylist() if columns.topic else None
            if topics is None and not (columns.key or columns.partition or columns.headers):
                future = producer.send_many(options.topic, values)
                pending[id(future)] = future
                continue
            keys = batch.column("key").to_pylist() if columns.key else None
            partitions = batch.column("partition").to_pylist() if columns.partition else None
            headers = batch.column("headers").to_pylist() if columns.headers else None
            for index, value in enumerate(values):
                topic = topics[index] if topics is not None else options.topic
                if topic is None:
                    raise OptionError(f"row {rows - len(values) + index} has a null topic and no topic option is set")
                record = producer.send(
                    topic, value, key=_as_bytes(keys[index]) if keys is not None else None,
                    headers=[(h["key"], h["value"]) for h in headers[index] or ()] if headers is not None else None,
                    partition=partitions[index] if partitions is not None else None)
                pending.setdefault(id(record.batch_future), record.batch_future)
        producer.flush(FLUSH_TIMEOUT_S)
    for future in pending.values():
        error = future.exception(FLUSH_TIMEOUT_S)
        if error is not None:
            raise error
    return WrittenRows(rows)


def _as_bytes(value) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


class _ProducingWriter:
    """What the batch and streaming writers share: each task produces its rows."""

    def __init__(self, options: SinkOptions, columns: Columns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator) -> WrittenRows:
        return write_batches(self.options, self.columns, iterator)


class ReplogBatchWriter(_ProducingWriter, DataSourceArrowWriter):
    def commit(self, messages: list) -> None:
        log.info("wrote %d rows to replog", sum(m.rows for m in messages if m is not None))


class ReplogStreamWriter(_ProducingWriter, DataSourceStreamArrowWriter):
    def commit(self, messages: list, batchId: int) -> None:
        log.info("micro-batch %d: wrote %d rows to replog", batchId, sum(m.rows for m in messages if m is not None))

    def abort(self, messages: list, batchId: int) -> None:
        log.warning("micro-batch %d failed; the rows its finished tasks wrote stay (at least once)", batchId)
