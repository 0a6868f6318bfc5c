"""Partition reassignment on a real cluster: a partition moves to other brokers under acks=all load
without losing an acknowledged record; a reassignment in progress is listed and can be cancelled; a
generated plan moves a new broker's share onto it."""

import json
import os
import threading
import time
from collections import Counter

import pytest

from replog.client import Admin, Consumer, Producer, TopicPartition
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import bootstrap, partitions

pytestmark = pytest.mark.slow


def test_a_partition_moves_under_acks_all_load_without_losing_an_acknowledged_record(cluster):
    cluster("topics", "create", "moving", "--replica-assignment", "1:2", "--config", "min.insync.replicas=2")
    acked: list[tuple[bytes, int]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer(bootstrap(cluster), acks="all", linger_ms=2, retry_backoff_ms=50) as producer:
            i = 0
            while not stop.is_set():
                value = b"r%07d" % i
                producer.send("moving", value, partition=0).add_done_callback(
                    lambda f, v=value: failed.append(f.exception()) if f.exception()
                    else acked.append((v, f.result().offset)))
                i += 1
                time.sleep(0.0005)  # a steady load, not a flood
            producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        wait_for(lambda: len(acked) > 1000, 30, "records before the move")
        out = cluster("reassign", "--topic", "moving", "--partition", "0", "--replicas", "3,2", "--wait").stdout
        during = len(acked)
        wait_for(lambda: len(acked) > during + 1000, 30, "records after the move")
    finally:
        stop.set()
        writer.join(90)
    assert "Reassignment of moving-0 from 1,2 to 3,2 started: adding 3, removing 1." in out
    assert out.splitlines()[-2].endswith("done"), out
    assert out.splitlines()[-1].startswith("Topic: moving  Partition: 0  Leader: 3  Replicas: 3,2  Isr: ")

    moved = partitions(cluster, "moving")[0]
    assert (moved.leader, list(moved.replicas), sorted(moved.isr)) == (3, [3, 2], [2, 3])
    with Admin(bootstrap(cluster)) as admin:
        assert admin.list_partition_reassignments() == {}
    broker_1 = next(b for b in cluster.status()["brokers"] if b["id"] == 1)
    wait_for(lambda: not os.path.exists(os.path.join(broker_1["data_dir"], "moving-0")), 10,
             "broker 1 to delete the replica it no longer has")

    assert not failed, failed[:3]
    by_offset: dict[int, bytes] = {}
    with Consumer(bootstrap(cluster), auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("moving", 0)])
        last = max(offset for _, offset in acked)
        wait_for(lambda: by_offset.update((r.offset, r.value) for r in consumer.poll(200)) or last in by_offset,
                 60, "every acknowledged record to be read back")
    lost = [(value, offset) for value, offset in acked if by_offset.get(offset) != value]
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged records were lost, e.g. {lost[:3]}"


def test_a_reassignment_in_progress_is_listed_and_a_cancel_restores_the_original_replicas(cluster):
    cluster("topics", "create", "undo", "--replica-assignment", "1:2")
    tp = TopicPartition("undo", 0)
    cluster.signal("broker", 3, "STOP")  # broker 3 cannot catch up while paused
    try:
        with Admin(bootstrap(cluster)) as admin:
            admin.alter_partition_reassignments({tp: [1, 2, 3]})
            ongoing = admin.list_partition_reassignments()
            assert list(ongoing) == [tp]
            assert (ongoing[tp].replicas, ongoing[tp].adding_replicas, ongoing[tp].removing_replicas) \
                == ((1, 2, 3), (3,), ())
            assert list(wait_for(lambda: len(partitions(cluster, "undo")[0].replicas) == 3
                                 and partitions(cluster, "undo")[0], 10, "the growing replica set").replicas) \
                == [1, 2, 3]
            out = cluster("reassign", "--topic", "undo", "--partition", "0", "--cancel").stdout
            assert out == "Cancelled the reassignment of undo-0: its replicas are 1,2 again.\n"
            assert admin.list_partition_reassignments() == {}
    finally:
        cluster.signal("broker", 3, "CONT")
    restored = partitions(cluster, "undo")[0]
    assert (restored.leader, list(restored.replicas), sorted(restored.isr)) == (1, [1, 2], [1, 2])

    nothing = cluster("reassign", "--topic", "undo", "--partition", "0", "--cancel", check=False)
    assert nothing.returncode == 1 and "NO_REASSIGNMENT_IN_PROGRESS" in nothing.stderr
    nowhere = cluster("reassign", "--topic", "undo", "--partition", "0", "--replicas", "1,9", check=False)
    assert nowhere.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in nowhere.stderr and "[9]" in nowhere.stderr
    assert "Traceback" not in nothing.stderr + nowhere.stderr


def test_a_generated_plan_moves_a_new_brokers_share_onto_it_and_nothing_is_lost(cluster, tmp_path):
    """As after broker 3 joins a cluster whose topics live on brokers 1 and 2: --generate proposes moving
    its share of the replicas to it and no more, --execute --wait carries the plan out, --verify agrees."""
    cluster("topics", "create", "spread-a", "--replica-assignment", "1:2,2:1,1:2,2:1")
    cluster("topics", "create", "spread-b", "--replica-assignment", "1:2,2:1")
    with Producer(bootstrap(cluster), acks="all") as producer:
        sent = {(topic, p): [producer.send(topic, b"%s-%d-%d" % (topic.encode(), p, i), partition=p)
                             for i in range(20)] for topic, count in (("spread-a", 4), ("spread-b", 2))
                for p in range(count)}
        sent = {tp: [f.result(30).offset for f in futures] for tp, futures in sent.items()}
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "spread-a"}, {"topic": "spread-b"}]}))

    out = cluster("reassign", "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,3").stdout
    lines = out.splitlines()
    current = json.loads(lines[lines.index("Current partition replica assignment") + 1])
    proposed = json.loads(lines[lines.index("Proposed partition reassignment configuration") + 1])
    assert len(current["partitions"]) == 6 and lines[0] == "4 of 6 partitions change; 4 replicas move to other brokers."
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))
    early = cluster("reassign", "--verify", "--reassignment-json-file", str(plan), check=False)
    assert early.returncode == 1 and "There is no active reassignment of partition" in early.stdout

    out = cluster("reassign", "--execute", "--reassignment-json-file", str(plan), "--wait").stdout
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "4 of 4 partitions moved" in out and out.count("is completed.") == 4, out
    verified = cluster("reassign", "--verify", "--reassignment-json-file", str(plan))
    assert verified.stdout.count("is completed.") == 4

    after = {(topic, p): list(info.replicas) for topic in ("spread-a", "spread-b")
             for p, info in partitions(cluster, topic).items()}
    load = Counter(b for replicas in after.values() for b in replicas)
    assert sorted(load.values()) == [4, 4, 4] and load[3] == 4
    with Consumer(bootstrap(cluster), auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(*tp) for tp in sent])
        read = {}
        wait_for(lambda: read.update(((r.topic, r.partition, r.offset), r.value) for r in consumer.poll(200))
                 or len(read) == 120, 30, "every record back after the moves")
    assert sorted(read) == sorted((topic, p, offset) for (topic, p), offsets in sent.items() for offset in offsets)

    for argv, said in ((("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,9"),
                        "--broker-list names broker 9, which is not live"),
                       (("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1"),
                        "has 2 replicas but the broker list names only 1 brokers")):
        refused = cluster("reassign", *argv, check=False)
        assert refused.returncode == 1 and said in refused.stderr and "Traceback" not in refused.stderr, refused
