"""Transactions through the Python client on a real cluster: a transactional producer commits and aborts,
read_committed consumers see exactly what was committed and read_uncommitted ones everything written but
never a marker, offsets sent to a transaction count only when it commits, and a second producer with the
same transactional id fences the first."""

from __future__ import annotations

import json

import pytest

from replog.client import (
    Admin,
    Consumer,
    NewTopic,
    Producer,
    ProducerFencedError,
    TopicPartition,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionStateError,
)
from replog.core.errors import ErrorCode
from tests.integration.cluster import replog as cluster_command
from tests.integration.cluster import started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WAIT_S = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three brokers; timed-out transactions are looked for twice a second; small internal topics start
    faster."""
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "2",
                       "--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
                       "--config", "transaction.state.log.num.partitions=10",
                       "--config", "offsets.topic.num.partitions=10")


def create(bootstrap, name, partitions):
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, 3, configs={"min.insync.replicas": "2"})])
        wait_for(lambda: all(p.leader >= 0 for p in admin.describe_topics([name])[0].partitions), WAIT_S,
                 f"leaders of {name}")
    return [TopicPartition(name, p) for p in range(partitions)]


def read_all(bootstrap, tps, isolation_level, expected_count, extra_polls=5):
    """Every record of the partitions, polled until `expected_count` arrived and a few polls more brought nothing."""
    with Consumer(bootstrap, auto_offset_reset="earliest", isolation_level=isolation_level) as consumer:
        consumer.assign(tps)
        records = []
        wait_for(lambda: records.extend(consumer.poll(200)) or len(records) >= expected_count, WAIT_S,
                 f"{expected_count} records under {isolation_level}")
        for _ in range(extra_polls):
            records += consumer.poll(100)
        return records


def test_read_committed_sees_exactly_the_committed_transactions_and_read_uncommitted_never_a_marker(bootstrap):
    tps = create(bootstrap, "txn-orders", 2)
    with Producer(bootstrap, transactional_id="orders-writer", linger_ms=1) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(6):
            producer.send("txn-orders", b"committed-%d" % i, partition=i % 2)
        producer.commit_transaction()

        producer.begin_transaction()
        futures = [producer.send("txn-orders", b"aborted-%d" % i, partition=i % 2) for i in range(4)]
        producer.flush(30)  # written to the partitions, then aborted
        assert all(f.exception() is None for f in futures)
        producer.abort_transaction()

        producer.begin_transaction()
        producer.send("txn-orders", b"committed-later", partition=0)
        producer.commit_transaction()

    committed = read_all(bootstrap, tps, "read_committed", 7)
    assert sorted(r.value for r in committed) == sorted([b"committed-%d" % i for i in range(6)] + [b"committed-later"])
    everything = read_all(bootstrap, tps, "read_uncommitted", 11)
    values = sorted(r.value for r in everything)
    assert values == sorted([b"committed-%d" % i for i in range(6)] + [b"aborted-%d" % i for i in range(4)]
                            + [b"committed-later"])  # the markers (one per partition per end) never come out


def test_an_open_transaction_holds_read_committed_readers_and_their_latest_offset_below_it(bootstrap):
    tps = create(bootstrap, "txn-open", 1)
    with Producer(bootstrap, transactional_id="open-writer", linger_ms=1) as producer, \
            Consumer(bootstrap, auto_offset_reset="earliest", isolation_level="read_committed") as committed, \
            Consumer(bootstrap, isolation_level="read_uncommitted") as uncommitted:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-open", b"open", partition=0)
        producer.flush(30)
        assert committed.end_offsets(tps)[tps[0]] == 0  # the last stable offset
        assert uncommitted.end_offsets(tps)[tps[0]] == 1  # the high watermark
        committed.assign(tps)
        assert committed.poll(1000) == []
        producer.commit_transaction()
        got = wait_for(lambda: committed.poll(200), WAIT_S, "the record once committed")
        assert [r.value for r in got] == [b"open"]
        assert committed.position(tps[0]) == 2  # past the COMMIT marker
        assert committed.end_offsets(tps)[tps[0]] == 2


def test_offsets_sent_to_a_transaction_are_committed_with_it_and_never_by_an_abort(bootstrap):
    source = create(bootstrap, "txn-source", 1)
    create(bootstrap, "txn-sink", 1)
    with Producer(bootstrap) as plain:
        for i in range(10):
            plain.send("txn-source", b"in-%d" % i, partition=0)
        plain.flush(30)
    with Consumer(bootstrap, group_id="copier", auto_offset_reset="earliest", enable_auto_commit=False,
                  isolation_level="read_committed") as consumer, \
            Producer(bootstrap, transactional_id="copier-0", linger_ms=1) as producer:
        consumer.subscribe(["txn-source"])
        producer.init_transactions()
        records = []
        wait_for(lambda: records.extend(consumer.poll(200)) or len(records) >= 10, WAIT_S, "the input")
        metadata = consumer.group_metadata()
        assert metadata.group_id == "copier" and metadata.generation_id > 0 and metadata.member_id

        producer.begin_transaction()
        for record in records[:4]:
            producer.send("txn-sink", record.value, partition=0)
        producer.send_offsets_to_transaction({source[0]: records[3].offset + 1}, metadata)
        producer.abort_transaction()
        assert consumer.committed(source)[source[0]] is None

        producer.begin_transaction()
        for record in records[:6]:
            producer.send("txn-sink", record.value, partition=0)
        producer.send_offsets_to_transaction({source[0]: records[5].offset + 1}, consumer.group_metadata())
        producer.commit_transaction()
        wait_for(lambda: (consumer.committed(source)[source[0]] or (None,))[0] == 6, WAIT_S,
                 "the offsets committed with the transaction")
    sunk = read_all(bootstrap, [TopicPartition("txn-sink", 0)], "read_committed", 6)
    assert [r.value for r in sunk] == [b"in-%d" % i for i in range(6)]


def test_a_stable_offset_lookup_waits_for_the_transaction_that_commits_it(bootstrap):
    source = create(bootstrap, "stable-source", 1)
    create(bootstrap, "stable-sink", 1)
    with Producer(bootstrap, transactional_id="stable-writer", linger_ms=1) as producer, \
            Admin(bootstrap, request_timeout_ms=2_000) as admin:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("stable-sink", b"row", partition=0)
        producer.send_offsets_to_transaction({source[0]: 5}, "stable-reader")
        assert admin.list_group_offsets("stable-reader", source) == {}  # the offset before the transaction
        with pytest.raises(Exception, match="UNSTABLE_OFFSET_COMMIT"):
            admin.list_group_offsets("stable-reader", source, require_stable=True)
        producer.commit_transaction()
        assert admin.list_group_offsets("stable-reader", source, require_stable=True)[source[0]].offset == 5


def wait_timed_out(admin: Admin, transactional_id: str) -> None:
    wait_for(lambda: admin.describe_transactions([transactional_id])[0].state == "CompleteAbort", WAIT_S,
             f"the coordinator's abort of {transactional_id}'s transaction past its timeout")


def test_a_prepared_transaction_outlives_its_producer_until_another_process_ends_it(bootstrap):
    tps = create(bootstrap, "txn-prepared", 1)
    with Producer(bootstrap, transactional_id="prepared-writer", linger_ms=1) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send("txn-prepared", b"p-%d" % i, partition=0)
        prepared = producer.prepare_transaction()
        with pytest.raises(TransactionStateError, match="the transaction is prepared"):
            producer.send("txn-prepared", b"too late", partition=0)
    assert read_all(bootstrap, tps, "read_committed", 0) == []  # closed, and still open
    with Consumer(bootstrap, isolation_level="read_committed") as committed:
        assert committed.end_offsets(tps)[tps[0]] == 0  # the prepared transaction holds the last stable offset
    with Admin(bootstrap) as admin:
        admin.end_transaction(prepared, commit=True)
        admin.end_transaction(prepared, commit=True)  # sent again: the same answer
    assert [r.value for r in read_all(bootstrap, tps, "read_committed", 3)] == [b"p-0", b"p-1", b"p-2"]

    with Producer(bootstrap, transactional_id="prepared-writer", linger_ms=1) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-prepared", b"fenced", partition=0)
        prepared = producer.prepare_transaction()
    with Producer(bootstrap, transactional_id="prepared-writer") as successor:
        successor.init_transactions()  # fences the prepared transaction's producer and aborts it
    with Admin(bootstrap) as admin, pytest.raises(ProducerFencedError, match="fenced it"):
        admin.end_transaction(prepared, commit=True)
    assert len(read_all(bootstrap, tps, "read_committed", 3)) == 3
    assert read_all(bootstrap, tps, "read_uncommitted", 4)[-1].value == b"fenced"

    with Producer(bootstrap, transactional_id="prepared-writer", linger_ms=1,
                  transaction_timeout_ms=1_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-prepared", b"timed out", partition=0)
        prepared = producer.prepare_transaction()
    with Admin(bootstrap) as admin:
        wait_timed_out(admin, "prepared-writer")
        with pytest.raises(TransactionAbortedError, match="transaction.timeout.ms"):
            admin.end_transaction(prepared, commit=True)
    assert len(read_all(bootstrap, tps, "read_committed", 3)) == 3


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(bootstrap):
    tps = create(bootstrap, "txn-fenced", 1)
    first = Producer(bootstrap, transactional_id="fenced-writer", linger_ms=1)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send("txn-fenced", b"zombie", partition=0)
        first.flush(30)
        with Producer(bootstrap, transactional_id="fenced-writer", linger_ms=1) as second:
            second.init_transactions()  # aborts the first one's open transaction
            with pytest.raises(ProducerFencedError, match="fenced"):
                first.commit_transaction()
            with pytest.raises(ProducerFencedError):
                first.send("txn-fenced", b"after the fence", partition=0)
            with pytest.raises(ProducerFencedError):
                first.begin_transaction()
            second.begin_transaction()
            second.send("txn-fenced", b"successor", partition=0)
            second.commit_transaction()
    finally:
        first.close(10)
    assert [r.value for r in read_all(bootstrap, tps, "read_committed", 1)] == [b"successor"]


def test_a_producer_whose_transaction_timed_out_aborts_and_goes_on_without_being_fenced(bootstrap):
    """KIP-588: a pause longer than transaction_timeout_ms costs the open transaction, not the producer."""
    tps = create(bootstrap, "txn-paused", 1)
    txn = "paused-writer"
    with (Admin(bootstrap) as admin,
          Producer(bootstrap, transactional_id=txn, linger_ms=1, transaction_timeout_ms=1_000) as producer):

        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-paused", b"timed-out-1", partition=0).result(30)
        wait_timed_out(admin, txn)
        late = producer.send("txn-paused", b"late", partition=0)  # written with the old epoch: refused
        with pytest.raises(TransactionAbortableError, match=r"transaction_timeout_ms \(1000 ms\)"):
            producer.commit_transaction()
        assert late.exception(30).error_code is ErrorCode.INVALID_PRODUCER_EPOCH
        producer.abort_transaction()

        producer.begin_transaction()
        producer.send("txn-paused", b"timed-out-2", partition=0).result(30)
        wait_timed_out(admin, txn)
        with pytest.raises(TransactionAbortableError, match=r"transaction.timeout.ms \(1000 ms\)"):
            producer.commit_transaction()  # found by the commit itself this time
        producer.abort_transaction()

        producer.begin_transaction()
        producer.send("txn-paused", b"after", partition=0)
        producer.commit_transaction()

    assert [r.value for r in read_all(bootstrap, tps, "read_committed", 1)] == [b"after"]


def test_calls_out_of_order_are_refused_with_what_to_do(bootstrap):
    create(bootstrap, "txn-misuse", 1)
    with Producer(bootstrap) as plain:
        with pytest.raises(TransactionStateError, match="transactional_id"):
            plain.begin_transaction()
    with Producer(bootstrap, transactional_id="misuse-writer", linger_ms=10_000) as producer:
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.send("txn-misuse", b"x")
        producer.init_transactions()
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.send("txn-misuse", b"x")
        with pytest.raises(TransactionStateError, match="no transaction is open"):
            producer.commit_transaction()
        producer.begin_transaction()
        with pytest.raises(TransactionStateError, match="a transaction is open"):
            producer.begin_transaction()
        lingering = producer.send("txn-misuse", b"never sent", partition=0)
        producer.abort_transaction()
        error = lingering.exception(10)
        assert error is None or isinstance(error, TransactionAbortedError)  # given up, unless already on its way


# -- the command line -------------------------------------------------------------------------------


def replog(bootstrap, *args, check=True):
    return cluster_command(*args, "--bootstrap", bootstrap, check=check)


def test_the_cli_lists_and_describes_a_transaction_and_the_producers_of_its_partition(bootstrap):
    create(bootstrap, "txn-cli", 1)
    with Producer(bootstrap, transactional_id="cli-writer", linger_ms=1) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("txn-cli", b"open", partition=0)
        producer.flush(30)

        listed = json.loads(replog(bootstrap, "transactions", "list", "--json").stdout)["transactions"]
        [mine] = [t for t in listed if t["transactional_id"] == "cli-writer"]
        assert mine["state"] == "Ongoing" and mine["producer_id"] >= 0
        assert "cli-writer" in replog(bootstrap, "transactions", "list").stdout
        [described] = json.loads(replog(bootstrap, "transactions", "describe", "cli-writer", "--json").stdout
                                 )["transactions"]
        assert described["state"] == "Ongoing" and described["producer_id"] == mine["producer_id"]
        assert described["partitions"] == [{"topic": "txn-cli", "partition": 0}]
        assert described["transaction_timeout_ms"] == 60_000 and described["transaction_start_time_ms"] > 0
        text = replog(bootstrap, "transactions", "describe", "cli-writer").stdout.splitlines()
        assert text[0].split()[:3] == ["COORDINATOR-ID", "TRANSACTIONAL-ID", "PRODUCER-ID"]
        assert "txn-cli-0" in text[1] and "Ongoing" in text[1]

        report = json.loads(replog(bootstrap, "producers", "--topic", "txn-cli", "--partition", "0", "--json").stdout)
        [active] = [p for p in report["producers"] if p["producer_id"] == mine["producer_id"]]
        assert active["current_transaction_start_offset"] == 0 and active["last_sequence"] == 0
        assert active["last_timestamp_ms"] > 0
        producer.commit_transaction()

    [ended] = json.loads(replog(bootstrap, "transactions", "describe", "cli-writer", "--json").stdout)["transactions"]
    assert ended["state"] == "CompleteCommit" and ended["partitions"] == []
    report = json.loads(replog(bootstrap, "producers", "--topic", "txn-cli", "--partition", "0", "--json").stdout)
    [active] = [p for p in report["producers"] if p["producer_id"] == mine["producer_id"]]
    assert active["current_transaction_start_offset"] is None and active["coordinator_epoch"] is not None
    assert replog(bootstrap, "producers", "--topic", "txn-cli", "--partition", "0").stdout.startswith("PRODUCER-ID")


def test_consume_reads_committed_or_everything_as_asked(bootstrap):
    create(bootstrap, "txn-console", 1)
    with Producer(bootstrap, transactional_id="console-writer", linger_ms=1) as producer:
        producer.init_transactions()
        for value, commit in ((b"kept", True), (b"dropped", False), (b"kept too", True)):
            producer.begin_transaction()
            producer.send("txn-console", value, partition=0)
            producer.flush(30)
            producer.commit_transaction() if commit else producer.abort_transaction()

    def consumed(level):
        return replog(bootstrap, "consume", "txn-console", "--from-beginning", "--timeout-ms", "3000",
                      "--isolation-level", level).stdout.splitlines()

    assert consumed("read_committed") == ["kept", "kept too"]
    assert consumed("read_uncommitted") == ["kept", "dropped", "kept too"]


@pytest.mark.parametrize("args, says", [
    (("transactions", "describe", "no-such-writer"), "transactional id 'no-such-writer' does not exist"),
    (("producers", "--topic", "no-such-topic", "--partition", "0"), "topic 'no-such-topic' does not exist"),
    (("producers", "--topic", "txn-orders", "--partition", "7"), "has partitions 0..1, not 7"),
])
def test_the_cli_says_in_one_sentence_what_does_not_exist(bootstrap, args, says):
    create_once(bootstrap, "txn-orders", 2)
    result = replog(bootstrap, *args, check=False)
    assert result.returncode == 1 and says in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1 and result.stdout == ""


def create_once(bootstrap, name, partitions):
    with Admin(bootstrap) as admin:
        if name not in admin.list_topics():
            create(bootstrap, name, partitions)
