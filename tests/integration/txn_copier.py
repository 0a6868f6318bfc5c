"""A transactional copier as a process of its own, for the exactly-once tests (Kafka's
TransactionalMessageCopier, in replog's client).

It copies one partition of the input topic to the same partition of the output topic in
transactions of about TXN_RECORDS records: read (read_committed), send each value with the
transaction's name appended, send_offsets_to_transaction, commit. Its transactional id is
fixed per input partition, so a restarted copier fences the one before it and the
coordinator aborts what that one left open; the group's committed offset is where it
resumes. It journals each transaction as JSON lines as it begins, what it read and sent
before it commits (so one killed mid-way leaves an undecided transaction), and its outcome. It exits 0 once the
input partition is copied up to END. `--rate` holds it to about that many records/s while
its transactions are open, so that the faults a test injects land in the middle of one.

    python -m tests.integration.txn_copier BOOTSTRAP INPUT OUTPUT PARTITION END GROUP LOG [--rate N]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from replog.client import ClientError, ClientTimeoutError, Consumer, Producer, TopicPartition
from replog.client.errors import TransactionAbortableError

TXN_RECORDS = 750
POLL_MS = 100
COMMIT_ATTEMPTS = 5
COMMIT_TIMEOUT_S = 30.0


class Journal:
    def __init__(self, path: str) -> None:
        self._handle = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process

    def write(self, event: str, **fields: object) -> None:
        self._handle.write(json.dumps({"t": time.monotonic(), "pid": os.getpid(), "event": event, **fields}) + "\n")


def text(value: bytes) -> str:
    return value.decode("latin-1")


class Copier:
    def __init__(self, args: argparse.Namespace, consumer: Consumer, producer: Producer, journal: Journal) -> None:
        self.args = args
        self.source = TopicPartition(args.input, args.partition)
        self.consumer = consumer
        self.producer = producer
        self.journal = journal
        self.transactions = 0
        self.transaction_started = time.monotonic()

    def rewind(self) -> None:
        """Back to the group's committed offset: what an aborted transaction read is read again."""
        committed = self.consumer.committed([self.source])[self.source]
        if committed is None:
            self.consumer.seek_to_beginning([self.source])
        else:
            self.consumer.seek(self.source, committed.offset)

    def copy_one_transaction(self) -> None:
        name = f"{self.args.group}/{os.getpid()}/{self.transactions}"
        self.transactions += 1
        suffix = b"|" + name.encode()
        self.producer.begin_transaction()
        self.transaction_started = time.monotonic()
        self.journal.write("begin", name=name)
        reads, futures = [], []
        while len(reads) < TXN_RECORDS and self.consumer.position(self.source) < self.args.end:
            for record in self.consumer.poll(POLL_MS):
                reads.append([record.offset, text(record.value)])
                futures.append(self.producer.send(self.args.output, record.value + suffix,
                                                  partition=self.args.partition))
            self.pace(len(reads))
        self.journal.write("txn", name=name, reads=reads, writes=[v + text(suffix) for _, v in reads])
        try:
            self.producer.send_offsets_to_transaction({self.source: reads[-1][0] + 1}, self.consumer.group_metadata())
            self.commit()
        except TransactionAbortableError as error:
            self.producer.abort_transaction()
            self.journal.write("aborted", name=name, reason=str(error))
            self.rewind()
            return
        self.journal.write("committed", name=name, offsets=[f.result(0).offset for f in futures])

    def pace(self, reading: int) -> None:
        """Hold to --rate while the transaction is open, so that a kill most likely cuts one short. Each
        transaction keeps the pace from its own start: after a stall (a broker restarting) the copier does
        not rush to catch up, so the faults of a run still find it copying."""
        if self.args.rate:
            time.sleep(max(0.0, self.transaction_started + reading / self.args.rate - time.monotonic()))

    def commit(self) -> None:
        """commit_transaction(), called again after a timeout (a broker restarting), as the client allows."""
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                self.producer.commit_transaction(COMMIT_TIMEOUT_S)
                return
            except ClientTimeoutError as error:
                self.journal.write("commit_timed_out", attempt=attempt, reason=str(error))
        raise ClientTimeoutError(f"commit_transaction() timed out {COMMIT_ATTEMPTS} times")

    def run(self) -> None:
        self.consumer.assign([self.source])
        self.producer.init_transactions()
        self.journal.write("started")
        self.rewind()
        while self.consumer.position(self.source) < self.args.end:
            self.copy_one_transaction()
        self.journal.write("done")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("partition", type=int)
    parser.add_argument("end", type=int)
    parser.add_argument("group")
    parser.add_argument("log")
    parser.add_argument("--rate", type=float, default=0.0, help="records/s at most (default: as fast as it can)")
    args = parser.parse_args()
    journal = Journal(args.log)
    try:
        with Consumer(args.bootstrap, group_id=args.group, isolation_level="read_committed",
                      enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=TXN_RECORDS) as consumer, \
                Producer(args.bootstrap, transactional_id=args.group, linger_ms=2) as producer:
            Copier(args, consumer, producer, journal).run()
    except ClientError as error:
        journal.write("failed", reason=f"{type(error).__name__}: {error}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
