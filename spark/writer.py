"""Batch and streaming writes: each task produces its rows with the replog producer (acks=all).

The rows are spark-sql-kafka's: `value` (string or binary) and, optionally,
`key` (string or binary), `topic` (string; the `topic` option wins over it),
`partition` (int; else the key's hash, else the sticky partitioner) and
`headers` (array<struct<key:string,value:binary>>). Each task waits until all
of its records are acknowledged before it reports success, so a write that
succeeded is on every in-sync replica; a task that fails and is tried again
writes its rows again: at least once, like spark-sql-kafka.

Exactly once (`transactional=true`) writes each task's rows in one replog
transaction with a marker of its micro-batch and leaves it prepared; the
driver's commit step commits them all once every task succeeded, and a task
writes nothing when its micro-batch was committed already (`exactly_once.py`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from replog.client import PreparedTransaction, Producer, UnknownTopicError
from replog.spark import exactly_once
from replog.spark.offsets import no_such_topic
from replog.spark.options import OptionError, SinkOptions

log = logging.getLogger("replog.spark")

FLUSH_TIMEOUT_S = 300.0
# How long a task waits for a topic its rows name that the metadata does not know: a topic created just
# before the write reaches the metadata service within this, and a missing one fails the task with its
# name rather than after the producer's max_block_ms (60 s).
TOPIC_LOOKUP_TIMEOUT_S = 5.0
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
    # Exactly once: the task's transaction, for the driver to commit; None when the micro-batch had
    # been committed already and the task wrote nothing.
    prepared: PreparedTransaction | None = None


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


def write_batches(options: SinkOptions, columns: Columns, batches: Iterator) -> WrittenRows:
    """Produce every row of the Arrow batches and wait until all are acknowledged (at least once)."""
    with Producer(options.bootstrap, acks=options.acks, security=options.security.client_security()) as producer:
        rows, pending = send_rows(producer, options, columns, batches)
        producer.flush(FLUSH_TIMEOUT_S)
    for future in pending:
        error = future.exception(FLUSH_TIMEOUT_S)
        if error is not None:
            raise error
    return WrittenRows(rows)


def write_batches_exactly_once(options: SinkOptions, columns: Columns, batches: Iterator,
                               write_id: str | None) -> WrittenRows:
    """Produce every row in the task's transaction and leave it prepared for the driver to commit, unless
    the micro-batch was committed already."""
    rows, prepared = exactly_once.prepare(options.bootstrap, options.transaction_timeout_ms,
                                          options.security.client_security(), exactly_once.task_write(write_id),
                                          lambda producer: send_rows(producer, options, columns, batches)[0],
                                          lambda: _drain(batches))
    return WrittenRows(rows, prepared)


def send_rows(producer: Producer, options: SinkOptions, columns: Columns, batches: Iterator) -> tuple[int, list]:
    """Send every row of the Arrow batches; returns the row count and the batch futures to wait for."""
    rows = 0
    pending = {}
    known_topics: set[str] = set()
    for batch in batches:
        values = _bytes_of(batch, "value")
        rows += len(values)
        topics = batch.column("topic").to_pylist() if columns.topic else None
        if topics is None and not (columns.key or columns.partition or columns.headers):
            future = producer.send_many(options.topic, values)
            pending[id(future)] = future
            continue
        keys = _bytes_of(batch, "key") if columns.key else None
        partitions = batch.column("partition").to_pylist() if columns.partition else None
        headers = batch.column("headers").to_pylist() if columns.headers else None
        for index, value in enumerate(values):
            topic = topics[index] if topics is not None else options.topic
            if topic not in known_topics:
                _check_row_topic(producer, topic, rows - len(values) + index)
                known_topics.add(topic)
            record = producer.send(
                topic, value, key=keys[index] if keys is not None else None,
                headers=[(h["key"], h["value"]) for h in headers[index] or ()] if headers is not None else None,
                partition=partitions[index] if partitions is not None else None)
            pending.setdefault(id(record.batch_future), record.batch_future)
    return rows, list(pending.values())


def _check_row_topic(producer: Producer, topic: str | None, row: int) -> None:
    """Refuse a row whose topic column is empty or names a topic the cluster does not have."""
    if not topic:
        raise OptionError(f"row {row} has a null or empty topic and no topic option is set")
    try:
        producer.partitions_for(topic, TOPIC_LOOKUP_TIMEOUT_S)
    except UnknownTopicError:
        raise no_such_topic(topic, f"the topic column of row {row}") from None


def _drain(batches: Iterator) -> None:
    """Read the task's input to its end without writing it, so Spark's Python worker stays reusable."""
    for _ in batches:
        pass


def _bytes_of(batch, column: str) -> list[bytes | None]:
    """A string or binary column as bytes: Arrow reinterprets a string's UTF-8 without copying."""
    return batch.column(column).cast(pa.binary()).to_pylist()


class _ProducingWriter:
    """What the batch and streaming writers share: each task produces its rows."""

    def __init__(self, options: SinkOptions, columns: Columns, write_id: str | None = None) -> None:
        self.options = options
        self.columns = columns
        self.write_id = write_id

    def write(self, iterator: Iterator) -> WrittenRows:
        if self.options.transactional:
            return write_batches_exactly_once(self.options, self.columns, iterator, self.write_id)
        return write_batches(self.options, self.columns, iterator)


class ReplogBatchWriter(_ProducingWriter, DataSourceArrowWriter):
    """A batch write. With transactional=true it gets an id of its own when it is planned, shared by its
    tasks and their attempts: a task tried again never writes its rows twice; a second save() is a new
    write."""

    def __init__(self, options: SinkOptions, columns: Columns) -> None:
        super().__init__(options, columns, uuid.uuid4().hex if options.transactional else None)

    def commit(self, messages: list) -> None:
        _end_transactions(self.options, messages, commit=True)
        log.info("wrote %s to replog", _summary(self.options, messages))

    def abort(self, messages: list) -> None:
        _end_transactions(self.options, messages, commit=False)
        log.warning("the write to replog failed; %s", _left_behind(self.options))


class ReplogStreamWriter(_ProducingWriter, DataSourceStreamArrowWriter):
    """A streaming write; with transactional=true each task names its transaction by the query's id (kept
    across restarts from the checkpoint) and its partition, and marks it with the micro-batch id."""

    def commit(self, messages: list, batchId: int) -> None:
        _end_transactions(self.options, messages, commit=True)
        log.info("micro-batch %d: wrote %s to replog", batchId, _summary(self.options, messages))

    def abort(self, messages: list, batchId: int) -> None:
        _end_transactions(self.options, messages, commit=False)
        log.warning("micro-batch %d failed; %s", batchId, _left_behind(self.options))


def _end_transactions(options: SinkOptions, messages: list, *, commit: bool) -> None:
    prepared = [m.prepared for m in messages if m is not None and m.prepared is not None]
    if prepared:
        exactly_once.end(options.bootstrap, options.security.client_security(), prepared, commit=commit)


def _summary(options: SinkOptions, messages: list) -> str:
    written = [m for m in messages if m is not None]
    rows = f"{sum(m.rows for m in written)} rows"
    if not options.transactional:
        return rows
    skipped = sum(1 for m in written if m.prepared is None)
    committed = f"{rows} in {len(written) - skipped} transactions"
    return committed if not skipped else f"{committed} ({skipped} tasks found their micro-batch committed already)"


def _left_behind(options: SinkOptions) -> str:
    if options.transactional:
        return "its tasks' transactions are aborted and none of their rows are visible to read_committed readers"
    return "the rows its finished tasks wrote stay (at least once)"
