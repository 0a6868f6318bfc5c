"""Partition reassignment on a real cluster: a partition moves to other brokers under acks=all load
without losing an acknowledged record; a reassignment in progress is listed and can be cancelled."""

import os
import threading
import time

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
