"""Exactly-once writes (`transactional=true`): a two-phase commit of one replog transaction per task, and a
marker that says which micro-batch each task has committed.

Phase one, in the task: the transactional id is named by the write (the streaming query's id, which a
restart from the checkpoint keeps, or a batch write's own id) and the task's partition, so every attempt
of the same task, in this run or a later one, has the same id. An attempt first calls
init_transactions(), which fences every earlier attempt and aborts the transaction one may have left
open; from then on no earlier attempt can commit anything. It then asks whether this micro-batch was
committed already: the marker is the committed offset of a consumer group named like the transaction,
`batch id + 1` on `__consumer_offsets-0`, sent with send_offsets_to_transaction() in the same transaction
as the rows, so it exists exactly when they were committed. If it is there the attempt writes nothing;
otherwise it writes every row and the marker and prepares the transaction (every record acknowledged),
leaving it open, and hands Spark a PreparedTransaction as its commit message.

Phase two, on the driver, once every task of the micro-batch succeeded: the writer's commit step ends
each prepared transaction with a commit (EndTxn for its producer id and epoch); its abort step aborts
them. The commit is on the driver, not at the end of the task, because a task cannot tell that its input
was cut short: when an upstream failure ends a task, its Python worker may see a clean end of input, and a
transaction committed there would hold part of the rows and a marker that makes the retry skip the rest.
Spark hands the driver only the messages of tasks that succeeded.

The marker is read with require_stable: an offset a transaction is still committing is waited for, never
read as the older one. See docs/SPARK.md for why a group offset rather than a topic of markers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from replog.client import (
    Admin,
    ClientError,
    OffsetAndMetadata,
    PreparedTransaction,
    Producer,
    ProducerFencedError,
    TransactionAbortedError,
)
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.topic_partition import TopicPartition
from replog.rpc.channels import ClientSecurity

log = logging.getLogger("replog.spark")

# Spark's local properties of a micro-batch's tasks: the query's id (kept across restarts) and the batch id.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
# The key of every task's marker: its own group, on a partition that exists in every cluster, so the
# marker does not depend on which topics the rows go to (a topic column may name several).
MARKER_PARTITION = TopicPartition(OFFSETS_TOPIC, 0)
# A batch write is one "micro-batch" of its own id.
BATCH_WRITE_ID = 0


@dataclass(frozen=True)
class TaskWrite:
    """What names one task's transaction and marker."""

    write_id: str  # the streaming query's id, or the batch write's
    partition_id: int
    batch_id: int

    @property
    def transactional_id(self) -> str:
        return transactional_id(self.write_id, self.partition_id)


def transactional_id(query_id: str, partition_id: int) -> str:
    """The transaction of one task of one query: the same across its attempts and restarts, so a new
    attempt fences the old one (init_transactions) and its open transaction is aborted. It is also the
    name of the consumer group that holds the task's marker."""
    return f"spark-{query_id}-{partition_id}"


def marker(batch_id: int) -> OffsetAndMetadata:
    """The offset committed with a micro-batch's rows: the next batch the task has to write."""
    return OffsetAndMetadata(batch_id + 1, f"spark micro-batch {batch_id} committed")


def already_written(committed: OffsetAndMetadata | None, batch_id: int) -> bool:
    """Whether the marker shows this micro-batch (or a later one) committed."""
    return committed is not None and committed.offset > batch_id


def task_write(write_id: str | None) -> TaskWrite:
    """This task's write: a batch write passes its own id; a streaming task finds its query and
    micro-batch in Spark's local properties."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if write_id is not None:
        return TaskWrite(write_id, context.partitionId(), BATCH_WRITE_ID)
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
    batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
    if not query_id or batch_id is None:
        raise RuntimeError(f"a streaming write task without Spark's {QUERY_ID_PROPERTY} and {BATCH_ID_PROPERTY} "
                           "local properties cannot name its transaction")
    return TaskWrite(query_id, context.partitionId(), int(batch_id))


def prepare(bootstrap: str, transaction_timeout_ms: int, security: ClientSecurity | None, task: TaskWrite,
            send_rows: Callable[[Producer], int],
            skip_rows: Callable[[], None]) -> tuple[int, PreparedTransaction | None]:
    """Phase one: write the task's rows and marker in a transaction left prepared, or nothing if the
    micro-batch was committed already. Returns the rows written and the transaction to commit (None
    when skipped). `send_rows` sends every row with the producer; `skip_rows` drains them unsent."""
    name = task.transactional_id
    with Producer(bootstrap, transactional_id=name, transaction_timeout_ms=transaction_timeout_ms,
                  security=security) as producer:
        producer.init_transactions()
        with Admin(bootstrap, security=security) as admin:
            committed = admin.list_group_offsets(name, [MARKER_PARTITION], require_stable=True)
        if already_written(committed.get(MARKER_PARTITION), task.batch_id):
            log.info("%s: micro-batch %d was committed by an earlier attempt; its rows are not written again",
                     name, task.batch_id)
            skip_rows()
            return 0, None
        producer.begin_transaction()
        rows = send_rows(producer)
        producer.send_offsets_to_transaction({MARKER_PARTITION: marker(task.batch_id)}, name)
        prepared = producer.prepare_transaction()
    log.info("%s: micro-batch %d: %d rows written, transaction prepared", name, task.batch_id, rows)
    return rows, prepared


def end(bootstrap: str, security: ClientSecurity | None, prepared: Iterable[PreparedTransaction], *,
        commit: bool) -> None:
    """Phase two: commit (or abort) every prepared transaction of a micro-batch. A commit that finds its
    transaction fenced fails the micro-batch (which then runs again and writes each row once); an abort
    that fails leaves the transaction to the next attempt's init_transactions() or to its timeout."""
    with Admin(bootstrap, security=security) as admin:
        for transaction in prepared:
            if commit:
                _commit(admin, transaction)
                continue
            try:
                admin.end_transaction(transaction, commit=False)
            except ClientError as error:
                log.warning("%s: not aborted (%s); the task's next attempt or the transaction timeout aborts it",
                            transaction.transactional_id, error)


def _commit(admin: Admin, transaction: PreparedTransaction) -> None:
    try:
        admin.end_transaction(transaction, commit=True)
    except (ProducerFencedError, TransactionAbortedError) as error:
        raise type(error)(
            f"{error}. The task's transaction was aborted before the micro-batch could commit (the task ran "
            "again, e.g. speculatively, or the transaction outlived transactionTimeoutMs); none of its rows are "
            "visible: run the micro-batch again (restart the query), and the tasks that did commit write nothing "
            "twice", error.error_code) from None
