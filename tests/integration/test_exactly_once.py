"""Exactly once on real processes, as Kafka's transactions_test runs it.

Copiers (one process per input partition, tests/integration/txn_copier.py) copy 100,000
records from topic A to topic B in transactions of 750, committing their input offsets in
the same transactions, while a read_committed consumer reads B. Meanwhile brokers are
SIGKILLed and restarted and the copiers themselves are SIGKILLed and restarted. Then B,
read with read_committed, must be A exactly: no record lost, none twice, each partition in
order; and the histories of the copiers and readers must show none of the anomalies the
checker names (tests/integration/txn_history.py).

A zombie: a transactional producer SIGSTOPped while a new instance with its transactional
id starts, then resumed, has everything it sends afterwards refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from replog.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.integration.cluster import wait_for
from tests.integration.txn_history import ABORTED, COMMITTED, UNKNOWN, Read, Session, Txn, Write, check

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUT, OUTPUT, PARTITIONS, TOTAL = "eos-in", "eos-out", 3, 100_000
FAULTS = ("broker", "copier", "broker", "copier", "broker", "copier")
COPY_RATE = 1_000  # records/s per copier: the copy lasts about half a minute, long enough for every fault
COPY_DEADLINE_S = 420.0
MAX_RESTARTS = 30


def load_input(bootstrap: str) -> dict[int, list[bytes]]:
    values = {p: [b"%d-%06d" % (p, i) for i in range(p, TOTAL, PARTITIONS)] for p in range(PARTITIONS)}
    with Producer(bootstrap) as producer:
        futures = [producer.send_many(INPUT, partition_values, partition=p) for p, partition_values in values.items()]
        producer.flush(120)
        for future in futures:
            future.result(0)
    return values


class Copiers:
    """One copier process per input partition, restarted whenever it dies before it is done."""

    def __init__(self, bootstrap: str, ends: dict[int, int], directory: str) -> None:
        self.bootstrap, self.ends, self.directory = bootstrap, ends, directory
        self.processes: dict[int, subprocess.Popen] = {}
        self.restarts = 0
        for partition in ends:
            self.start(partition)

    def journal(self, partition: int) -> str:
        return os.path.join(self.directory, f"copier-{partition}.jsonl")

    def start(self, partition: int) -> None:
        with open(os.path.join(self.directory, f"copier-{partition}.err"), "ab") as errors:
            self.processes[partition] = subprocess.Popen(
                [sys.executable, "-m", "tests.integration.txn_copier", self.bootstrap, INPUT, OUTPUT, str(partition),
                 str(self.ends[partition]), f"copier-{partition}", self.journal(partition), "--rate", str(COPY_RATE)],
                cwd=REPO, stdout=subprocess.DEVNULL, stderr=errors)

    def last_error(self, partition: int) -> str:
        with open(os.path.join(self.directory, f"copier-{partition}.err"), encoding="utf-8", errors="replace") as errors:
            return errors.read()[-3000:]

    def kill(self, partition: int) -> None:
        process = self.processes[partition]
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(10)

    def supervise(self) -> bool:
        """Restart the copiers that died; True once every one exited having copied its partition."""
        for partition, process in self.processes.items():
            code = process.poll()
            if code is not None and code != 0:
                self.restarts += 1
                assert self.restarts < MAX_RESTARTS, f"copier {partition} keeps dying: {self.last_error(partition)}"
                self.start(partition)
        return all(process.poll() == 0 for process in self.processes.values())

    def stop(self) -> None:
        for partition in self.processes:
            self.kill(partition)


class Reader(threading.Thread):
    """A read_committed consumer of B for the whole run, keeping what it read in order."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.reads: list[Read] = []
        self.positions: dict[int, int] = {}
        self.failure: BaseException | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        tps = [TopicPartition(OUTPUT, p) for p in range(PARTITIONS)]
        try:
            with Consumer(self.bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as consumer:
                consumer.assign(tps)
                while not self.stopping.is_set():
                    self.reads += [Read((OUTPUT, r.partition), r.offset, r.value) for r in consumer.poll(200)]
                    self.positions = {tp.partition: consumer.position(tp) for tp in tps}
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.failure = error


def read_committed_all(bootstrap: str, ends: dict[int, int]) -> list[Read]:
    reads: list[Read] = []
    tps = [TopicPartition(OUTPUT, p) for p in range(PARTITIONS)]
    with Consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)

        def caught_up() -> bool:
            reads.extend(Read((OUTPUT, r.partition), r.offset, r.value) for r in consumer.poll(200))
            return all(consumer.position(tp) >= ends[tp.partition] for tp in tps)

        wait_for(caught_up, 120, "a fresh read_committed consumer reading B to its end", interval_s=0)
    return reads


def copier_transactions(journal: str, partition: int) -> list[Txn]:
    txns: dict[str, Txn] = {}
    with open(journal, encoding="utf-8") as handle:
        for line in handle:
            entry = json.loads(line)
            if entry["event"] == "begin":
                txns[entry["name"]] = Txn(entry["name"], UNKNOWN)
            elif entry["event"] == "txn":
                txns[entry["name"]] = Txn(
                    entry["name"], UNKNOWN,
                    [Write((OUTPUT, partition), value.encode("latin-1")) for value in entry["writes"]],
                    [Read((INPUT, partition), offset, value.encode("latin-1")) for offset, value in entry["reads"]])
            elif entry["event"] == "committed":
                txn = txns[entry["name"]]
                txn.outcome = COMMITTED
                txn.writes = [Write(w.partition, w.value, offset) for w, offset in zip(txn.writes, entry["offsets"])]
            elif entry["event"] == "aborted":
                txns[entry["name"]].outcome = ABORTED
    return list(txns.values())


def by_partition(reads: list[Read]) -> dict[int, list[bytes]]:
    """What was read of each partition of B, each value without the copier's suffix."""
    values: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for read in reads:
        values[read.partition[1]].append(read.value.split(b"|", 1)[0])
    return values


def test_copiers_under_broker_and_copier_kills_copy_every_record_exactly_once(cluster, bootstrap, tmp_path):
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(INPUT, PARTITIONS, 3), NewTopic(OUTPUT, PARTITIONS, 3)])
        source = load_input(bootstrap)
        ends = {p: len(values) for p, values in source.items()}
        assert admin.list_offsets({TopicPartition(INPUT, p): "latest" for p in ends}) == {
            TopicPartition(INPUT, p): end for p, end in ends.items()}

        reader = Reader(bootstrap)
        reader.start()
        copiers = Copiers(bootstrap, ends, str(tmp_path))
        deadline = time.monotonic() + COPY_DEADLINE_S
        try:
            for step, fault in enumerate(FAULTS):
                wanted = TOTAL * (step + 1) // (len(FAULTS) + 2)
                wait_for(lambda wanted=wanted: copiers.supervise() or len(reader.reads) >= wanted,
                         max(deadline - time.monotonic(), 1), f"{wanted} records copied before fault {step + 1}")
                assert not copiers.supervise(), f"the copy ended before fault {step + 1} ({fault}) could hit it"
                tp = TopicPartition(OUTPUT, step % PARTITIONS)
                if fault == "broker":
                    victim = admin.cluster().leader_of(tp)
                    cluster.signal("broker", victim, "KILL")
                    wait_for(lambda victim=victim: copiers.supervise() or admin.cluster().leader_of(tp)
                             not in (victim, -1), 60, f"a new leader of {tp}")
                    cluster("dev", "start", "broker", str(victim))
                else:
                    copiers.kill(tp.partition)
            wait_for(copiers.supervise, max(deadline - time.monotonic(), 1), "every copier done", interval_s=0.2)
        finally:
            copiers.stop()
        output_ends = admin.list_offsets({TopicPartition(OUTPUT, p): "latest" for p in ends},
                                         isolation_level="read_committed")
        ends_of_b = {tp.partition: offset for tp, offset in output_ends.items()}
        wait_for(lambda: reader.failure or all(reader.positions.get(p, 0) >= end for p, end in ends_of_b.items()),
                 120, "the concurrent reader at the end of B")
        reader.stopping.set()
        reader.join(30)
    assert reader.failure is None, f"the concurrent read_committed consumer failed: {reader.failure!r}"
    final = read_committed_all(bootstrap, ends_of_b)

    for name, reads in (("the concurrent reader", reader.reads), ("a fresh reader", final)):
        copied = by_partition(reads)
        for p in range(PARTITIONS):
            assert copied[p] == source[p], (
                f"{name}: B-{p} is not A-{p}: {len(copied[p])} records for {len(source[p])}, "
                f"{len(set(copied[p]))} distinct, missing {sorted(set(source[p]) - set(copied[p]))[:5]}")

    txns = [Txn("load", COMMITTED, [Write((INPUT, p), v, offset) for p, values in source.items()
                                    for offset, v in enumerate(values)])]
    for p in range(PARTITIONS):
        txns += copier_transactions(copiers.journal(p), p)
    anomalies = check(txns, [Session("concurrent reader", reader.reads), Session("fresh reader", final)])
    assert {name: cases[:5] for name, cases in anomalies.items() if cases} == {}
    assert copiers.restarts >= FAULTS.count("copier"), "each copier kill was followed by a restart"
    outcomes = [txn.outcome for txn in txns[1:]]
    assert UNKNOWN in outcomes, "no copier was killed inside a transaction, so no open transaction was fenced"
    print(f"\n{len(outcomes)} copier transactions: {outcomes.count(COMMITTED)} committed, "
          f"{outcomes.count(ABORTED)} aborted, {outcomes.count(UNKNOWN)} cut short; {copiers.restarts} restarts")


ZOMBIE = """
import sys
from replog.client import Producer, ProducerFencedError, TransactionAbortableError
bootstrap, topic, name = sys.argv[1:4]
with Producer(bootstrap, transactional_id=name, linger_ms=0) as producer:
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(100):
        producer.send(topic, b"zombie-before-%d" % i, partition=0)
    producer.flush(60)
    print("sent", flush=True)
    sys.stdin.readline()
    outcome = "committed"
    try:
        for i in range(100):
            producer.send(topic, b"zombie-after-%d" % i, partition=0)
        producer.commit_transaction(60)
    except ProducerFencedError as error:
        outcome = "fenced: " + str(error)
    except TransactionAbortableError:
        # Kafka's loop: abort after an abortable error; the abort finds out whether this producer was fenced.
        try:
            producer.abort_transaction(60)
            outcome = "aborted, and free to go on"
        except ProducerFencedError as error:
            outcome = "fenced: " + str(error)
    except Exception as error:
        outcome = type(error).__name__ + ": " + str(error)
    print(outcome, flush=True)
"""


def test_a_zombie_producer_resumed_after_a_new_instance_started_is_fenced_and_nothing_of_it_is_read(bootstrap):
    topic, name = "zombie", "zombie-id"
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)])
    zombie = subprocess.Popen([sys.executable, "-c", ZOMBIE, bootstrap, topic, name], cwd=REPO, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert zombie.stdout.readline().strip() == "sent", zombie.stderr.read()
        zombie.send_signal(signal.SIGSTOP)
        with Producer(bootstrap, transactional_id=name) as successor:
            successor.init_transactions()
            successor.begin_transaction()
            for i in range(100):
                successor.send(topic, b"successor-%d" % i, partition=0)
            successor.commit_transaction(60)
        zombie.send_signal(signal.SIGCONT)
        zombie.stdin.write("go\n")
        zombie.stdin.flush()
        outcome, errors = zombie.communicate(timeout=120)
    finally:
        if zombie.poll() is None:
            zombie.kill()
    assert outcome.strip().startswith("fenced"), f"the zombie's commit: {outcome!r} {errors[-2000:]}"

    with Admin(bootstrap) as admin:
        end = admin.list_offsets({tp: "latest"})[tp]
    seen: dict[str, list[bytes]] = {}
    for isolation in ("read_committed", "read_uncommitted"):
        values: list[bytes] = []
        with Consumer(bootstrap, isolation_level=isolation, auto_offset_reset="earliest") as consumer:
            consumer.assign([tp])
            wait_for(lambda: values.extend(r.value for r in consumer.poll(200)) or consumer.position(tp) >= end, 60,
                     f"{topic} read to its end under {isolation}", interval_s=0)
        seen[isolation] = values
    assert seen["read_committed"] == [b"successor-%d" % i for i in range(100)]
    assert not [v for v in seen["read_uncommitted"] if v.startswith(b"zombie-after")], \
        "a write the zombie sent after it was fenced reached the log"
