"""The Node.js client, written from proto/ alone, on a real local cluster next to the Python client:
its keyed records land where the Python producer would put them and are read back by the Python
consumer; it shares a consumer group with a Python member so that together they read every record
once; a partition leader SIGKILLed while it produces loses nothing it acknowledged; and a request
refused whole reaches it with the Kafka error name in the status details."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from replog.client import Consumer, NewTopic, PreparedTransaction, Producer, TopicPartition
from replog.client.partitioner import partition_for_key
from tests.clients.node import REPO_ROOT, node_binary, run_node, script, start_node
from tests.integration.cluster import started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """3 brokers and 2 controllers; transactions past their timeout are looked for twice a second."""
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "2",
                       "--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=500")

PRODUCE_DEADLINE_S = 120
READ_DEADLINE_S = 60


def create(admin, name: str, partitions: int, replication_factor: int = 3, **configs: str) -> str:
    admin.create_topics([NewTopic(name, partitions, replication_factor, configs=configs)])
    return name


def read_all(bootstrap: str, topic: str, partitions: int, count: int, isolation_level: str = "read_uncommitted") -> list:
    """Every record of the topic, from the beginning, once `count` of them are there."""
    records = []
    with Consumer(bootstrap, auto_offset_reset="earliest", isolation_level=isolation_level) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])

        def all_read():
            records.extend(consumer.poll(200))
            return len(records) >= count

        wait_for(all_read, READ_DEADLINE_S, f"{count} records of {topic}", interval_s=0)
        records.extend(consumer.poll(500))  # anything beyond `count` would be a duplicate
    return records


def node_produce(bootstrap: str, topic: str, count: int, rate: int, acks_file: Path,
                 batch_size_bytes: int = 65536) -> subprocess.Popen[str]:
    return start_node(script("produce.js"), bootstrap, topic, str(count), str(rate), str(acks_file),
                      str(batch_size_bytes))


def finished(process: subprocess.Popen[str], timeout_s: float) -> dict:
    """The summary line a Node script printed last, once it exited 0 within timeout_s."""
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"the Node script did not finish within {timeout_s:g} s:\n{stderr[-3000:]}") from None
    assert process.returncode == 0, f"the Node script failed ({process.returncode}):\n{stderr[-3000:]}"
    return json.loads(stdout.strip().splitlines()[-1])


def steered(name: str, args: list[str], says: list[str], until: Callable[[], bool], what: str) -> dict:
    """Run a Node script that prints the lines `says`, then waits for a line on stdin: send it once they came
    and `until()` holds; the summary the script printed last."""
    node = subprocess.Popen([node_binary(), script(name), *args], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for expected in says:
            assert node.stdout.readline().strip() == expected, node.stderr.read() if node.poll() is not None else ""
        wait_for(until, READ_DEADLINE_S, what)
        node.stdin.write("go\n")
        node.stdin.flush()
        return finished(node, PRODUCE_DEADLINE_S)
    finally:
        node.kill()


def acknowledged(acks_file: Path) -> dict[int, tuple[int, int]]:
    """Record number -> (partition, offset), as the Node producer's acknowledgements said."""
    acks = {}
    for line in acks_file.read_text().splitlines():
        number, partition, offset = json.loads(line)
        acks[number] = (partition, offset)
    return acks


def test_node_writes_keyed_records_where_the_python_producer_would_and_python_reads_them_all(
        admin, bootstrap, tmp_path):
    topic, partitions, count = create(admin, "node-keyed", 6), 6, 10_000
    summary = finished(node_produce(bootstrap, topic, count, 0, tmp_path / "acks"), PRODUCE_DEADLINE_S)
    assert (summary["acked"], summary["failed"]) == (count, 0), summary["errors"]

    records = read_all(bootstrap, topic, partitions, count)
    assert len(records) == count, "each record once"
    assert {r.value for r in records} == {b"value-%d" % i for i in range(count)}
    misplaced = [(r.key, r.partition) for r in records if r.partition != partition_for_key(r.key, partitions)]
    assert not misplaced, f"{len(misplaced)} keys off Kafka's partition, e.g. {misplaced[:3]}"
    acks = acknowledged(tmp_path / "acks")
    assert {(r.partition, r.offset) for r in records} == set(acks.values())


def test_send_many_hands_over_records_in_bulk_spread_over_the_partitions_in_sticky_runs(admin, bootstrap):
    topic, partitions, count = create(admin, "node-many", 6), 6, 20_000
    summary = json.loads(run_node(script("produce_many.js"), bootstrap, topic, str(count), "1000",
                                  timeout_s=PRODUCE_DEADLINE_S).stdout)
    assert summary["acked"] == count and summary["metrics"]["failedRecords"] == 0
    records = read_all(bootstrap, topic, partitions, count)
    assert sorted(r.value for r in records) == sorted(b"value-%d" % i for i in range(count))
    assert len({r.partition for r in records}) > 1, "16 KB runs moved on to other partitions"

def test_node_transactions_commit_abort_and_fence_and_read_committed_shows_only_the_committed(admin, bootstrap):
    topic, partitions, count = create(admin, "node-txn", 3), 3, 100
    summary = json.loads(run_node(script("transactions.js"), bootstrap, topic, str(partitions), "node-txn-group",
                                  timeout_s=PRODUCE_DEADLINE_S).stdout.splitlines()[-1])
    committed = {f"b-{i}" for i in range(count)} | {f"a-{i}" for i in range(count)} | {"z"}

    node_read = [tuple(r) for r in summary["committed"]]
    assert sorted(v for _, _, v in node_read) == sorted(committed), "each committed record once, nothing else"
    for p in range(partitions):
        offsets = [o for part, o, _ in node_read if part == p]
        assert offsets == sorted(offsets), f"partition {p} in offset order"
    python_read = read_all(bootstrap, topic, partitions, len(committed), isolation_level="read_committed")
    assert sorted(node_read) == sorted((r.partition, r.offset, r.value.decode()) for r in python_read)
    assert summary["abortedRecordsDropped"] >= count + 1

    uncommitted = {v for _, _, v in summary["uncommitted"]}
    assert {f"aborted-{i}" for i in range(count)} | {"fenced"} | committed == uncommitted

    assert summary["sendBeforeInit"] == "TransactionStateError"
    assert summary["sendOutsideTransaction"] == "TransactionStateError"
    assert summary["fencedCommit"] == "ProducerFencedError" and summary["fencedIsProducerFencedError"]
    assert "IN_TRANSACTION" in summary["beginTwice"]
    assert summary["aMetrics"]["transactionsCommitted"] == 1 and summary["aMetrics"]["transactionsAborted"] == 1
    offsets = admin.list_group_offsets("node-txn-group", require_stable=True)
    assert {tp: o.offset for tp, o in offsets.items()} == {TopicPartition(topic, 0): 42}


def test_a_node_transaction_past_its_timeout_is_aborted_and_the_producer_goes_on_after_aborting(admin, bootstrap):
    topic = create(admin, "node-txn-slow", 1)
    summary = steered("txn_timeout.js", [bootstrap, topic], ["written"],
                      lambda: admin.describe_transactions(["node-txn-slow"])[0].state == "CompleteAbort",
                      "the coordinator's abort of the transaction past its 1 s timeout")
    assert (summary["late"]["ok"], summary["late"]["error"]) == (False, "INVALID_PRODUCER_EPOCH")
    assert summary["commit"]["name"] == "TransactionAbortableError"
    assert "coordinator aborted it after transactionTimeoutMs (1000 ms)" in summary["commit"]["message"]
    assert summary["abort"]["ok"] and summary["next"]["ok"], summary
    assert (summary["metrics"]["transactionsAborted"], summary["metrics"]["transactionsCommitted"]) == (1, 1)
    assert [r.value for r in read_all(bootstrap, topic, 1, 1, isolation_level="read_committed")] == [b"next"]


def test_node_two_phase_commits_are_ended_by_an_admin_by_the_producer_or_by_python(admin, bootstrap):
    topic = create(admin, "node-2pc", 1)
    summary = finished(start_node(script("two_phase.js"), bootstrap, topic, "node-2pc"), PRODUCE_DEADLINE_S)
    assert [line.split(":")[0] for line in summary["refused"]] == ["TransactionStateError"] * 2, summary["refused"]
    assert all("refused in state PREPARED" in line for line in summary["refused"])
    assert summary["stale"].startswith("ProducerFencedError"), summary["stale"]

    prepared = summary["prepared"]  # left open by the Node producer, prepared; ended here, in Python
    (open_one,) = admin.describe_transactions(["node-2pc"])
    assert open_one.state == "Ongoing" and open_one.producer_epoch == prepared["producerEpoch"]
    admin.end_transaction(PreparedTransaction(prepared["transactionalId"], prepared["producerId"],
                                              prepared["producerEpoch"]), commit=True)

    expected = [b"%s-%d" % (prefix, i) for prefix in (b"admin-commit", b"self-commit", b"python") for i in range(10)]
    visible = read_all(bootstrap, topic, 1, len(expected), isolation_level="read_committed")
    assert [r.value for r in visible] == expected
    everything = [r.value for r in read_all(bootstrap, topic, 1, 40)]
    assert [v for v in everything if v.startswith(b"admin-abort")] == [b"admin-abort-%d" % i for i in range(10)]


def test_the_readme_copier_moves_every_record_once_with_its_offsets_in_the_same_transactions(admin, bootstrap):
    source, sink, partitions, count = create(admin, "node-copy-in", 3), create(admin, "node-copy-out", 3), 3, 3000
    with Producer(bootstrap) as producer:
        for i in range(count):
            producer.send(source, b"record-%d" % i, partition=i % partitions)
        producer.flush()
    summary = finished(start_node(script("copier.js"), bootstrap, source, sink, "node-copier", str(count)),
                       PRODUCE_DEADLINE_S)
    assert summary["copied"] == count and summary["transactions"] >= 1
    assert summary["groupMetadata"]["memberEpoch"] > 0, "the offsets went with the member's id and epoch"

    copied = read_all(bootstrap, sink, partitions, count, isolation_level="read_committed")
    for p in range(partitions):
        assert [r.value for r in copied if r.partition == p] == [b"record-%d" % i for i in range(p, count, partitions)]
    offsets = admin.list_group_offsets("node-copier", require_stable=True)
    assert {tp.partition: o.offset for tp, o in offsets.items()} == {p: count // partitions for p in range(partitions)}


def test_a_node_member_subscribed_to_a_regex_reads_the_topics_it_matches_whole_and_no_other(admin, bootstrap):
    topics = [create(admin, name, 2) for name in ("node-rx-a", "node-rx-b", "node-rx-bc")]
    with Producer(bootstrap) as producer:
        for topic in topics:
            for i in range(20):
                producer.send(topic, f"{topic}/{i}".encode())
        producer.flush()
    read = run_node(script("regex.js"), bootstrap, "node-rx", "node-rx-[ab]", "40", timeout_s=PRODUCE_DEADLINE_S)
    got = sorted(tuple(pair) for pair in json.loads(read.stdout.splitlines()[-1])["read"])
    assert got == sorted((t, f"{t}/{i}") for t in ("node-rx-a", "node-rx-b") for i in range(20))


def test_a_node_member_that_stops_polling_leaves_its_group_and_joins_again_when_it_polls(admin, bootstrap):
    topic = create(admin, "node-stuck", 2)
    summary = steered("stuck_member.js", [bootstrap, "node-stuck", topic], ["holding", "left"],
                      lambda: not admin.describe_groups(["node-stuck"])[0].members, "the stuck member to have left the group")
    assert summary == {"held": [0, 1], "lost": [0, 1], "heldAgain": [0, 1]}


class Member:
    """A group member process (Python's tests/integration/group_member.py or Node's twin) and its journal."""

    def __init__(self, command: list[str], log: Path, cwd: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def holds(self) -> set[int]:
        held: set[int] = set()
        for event in self.events():
            if event["event"] == "assigned":
                held |= set(event["partitions"])
            elif event["event"] in ("revoked", "lost"):
                held -= set(event["partitions"])
        return held

    def read(self) -> list[tuple[int, int]]:
        return [tuple(pair) for e in self.events() if e["event"] == "records" for pair in e["read"]]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, stderr = self.process.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"member {self.log.name} did not close within 40 s") from None
        assert self.process.returncode == 0, f"member {self.log.name} failed:\n{stderr[-3000:]}"


def test_a_node_member_and_a_python_member_share_a_group_and_read_every_record_once(admin, bootstrap, tmp_path):
    topic, partitions, count, group = create(admin, "node-shared", 6, 2), 6, 10_000, "node-and-python"
    python = Member([sys.executable, "-m", "tests.integration.group_member", bootstrap, group, topic,
                     str(tmp_path / "python.log")], tmp_path / "python.log", REPO_ROOT)
    node = None
    try:
        wait_for(lambda: python.holds() == set(range(partitions)), 30, "the Python member to hold every partition")
        node = Member([node_binary(), script("group_member.js"), bootstrap, group, topic, str(tmp_path / "node.log")],
                      tmp_path / "node.log", REPO_ROOT)
        wait_for(lambda: node.holds() and python.holds() and not node.holds() & python.holds()
                 and node.holds() | python.holds() == set(range(partitions)), 30,
                 "the two members to share the partitions")
        with Producer(bootstrap) as producer:
            for i in range(count):
                producer.send(topic, b"value-%d" % i, key=b"key-%d" % i)
            producer.flush(60)
        wait_for(lambda: len(set(python.read()) | set(node.read())) >= count, READ_DEADLINE_S,
                 f"the two members to read {count} records")
    finally:
        for member in (node, python):
            if member is not None:
                member.stop()
    python_read, node_read = python.read(), node.read()
    both = python_read + node_read
    assert len(both) == len(set(both)) == count, "every record read once, by one of the two"
    assert python_read and node_read, "each member read some"
    assert {p for p, _ in node_read}.isdisjoint({p for p, _ in python_read})
    assert not [e for e in python.events() + node.events() if e["event"] in ("error", "commit_failed", "lost")]


def test_a_leader_sigkilled_while_node_produces_loses_nothing_node_acknowledged_and_keeps_order(
        cluster, admin, bootstrap, tmp_path):
    # Batches of 512 bytes at 10,000 records/s fill several times per round trip, so each partition has
    # up to five in flight on its leader's stream when the leader dies, and they come back to be retried.
    topic, partitions, count = create(admin, "node-failover", 6, 3, **{"min.insync.replicas": "2"}), 6, 30_000
    acks_file = tmp_path / "acks"
    producer = node_produce(bootstrap, topic, count, 10_000, acks_file, batch_size_bytes=512)
    victim = admin.cluster().leader_of(TopicPartition(topic, 0))
    wait_for(lambda: acks_file.exists() and len(acks_file.read_text().splitlines()) >= count // 4, 60,
             "a quarter of the records acknowledged")
    cluster.signal("broker", victim, "KILL")
    try:
        summary = finished(producer, PRODUCE_DEADLINE_S)
    finally:
        cluster("dev", "start", "broker", str(victim))
    acks = acknowledged(acks_file)
    assert summary["acked"] == len(acks) and summary["acked"] + summary["failed"] == count
    assert summary["acked"] >= count * 0.99, f"retries carried the writes through: {summary['errors']}"
    assert summary["metrics"]["retries"] > 0, "the leader's death was seen and retried"

    records = read_all(bootstrap, topic, partitions, len(acks))
    at = {(r.partition, r.offset): r.value for r in records}
    lost = [n for n, where in acks.items() if at.get(where) != b"value-%d" % n]
    assert not lost, f"{len(lost)} acknowledged records are not where their acknowledgement said"
    values = [r.value for r in records]
    assert len(values) == len(set(values)), "idempotence wrote each record once"
    for partition in range(partitions):
        sent = [int(r.value.split(b"-")[1]) for r in sorted(records, key=lambda r: r.offset) if r.partition == partition]
        assert sent == sorted(sent), f"partition {partition} holds records out of the order they were sent"


def test_node_records_keep_their_timestamps_are_found_by_time_and_a_paused_partition_waits(admin, bootstrap):
    topic = create(admin, "node-by-time", 2)
    answer = json.loads(run_node(script("by_time.js"), bootstrap, topic, timeout_s=PRODUCE_DEADLINE_S).stdout)
    assert sorted(answer["whilePaused"]) == [[1, 0, 5000], [1, 1, 6000]]  # nothing of the paused partition
    assert answer["afterResume"] == [[0, 0, 1000], [0, 1, 3000], [0, 2, 2000]]
    assert answer["found"] == [
        {"topic": topic, "partition": 0, "offset": 1, "timestamp": 3000, "leaderEpoch": 0},
        {"topic": topic, "partition": 1, "offset": 0, "timestamp": 5000, "leaderEpoch": 0},
        None,  # no record of partition 0 at or after 3001
    ]
    read = read_all(bootstrap, topic, 2, 5)  # Python reads the same timestamps
    assert sorted((r.partition, r.offset, r.timestamp) for r in read) == [
        (0, 0, 1000), (0, 1, 3000), (0, 2, 2000), (1, 0, 5000), (1, 1, 6000)]


def test_a_request_refused_whole_names_its_kafka_error_to_a_node_client(bootstrap):
    answer = json.loads(run_node(script("refused.js"), bootstrap).stdout)
    assert answer["refused"] and answer["grpcCode"] == 3  # INVALID_ARGUMENT
    assert answer["error"] == "INVALID_REQUEST" and not answer["retriable"]
    assert "has no op" in answer["message"]



def test_the_readme_example_writes_three_records_and_reads_them_back_in_a_group(admin, bootstrap):
    topic = create(admin, "node-example", 3)
    out = run_node("examples/produce-consume.js", bootstrap, topic, timeout_s=60).stdout
    assert out.count("written to") == 3 and out.count("read ") == 3, out
