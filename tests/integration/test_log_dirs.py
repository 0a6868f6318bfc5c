"""DescribeLogDirs on real processes: each broker's log dir, its room, and the replicas it holds with their sizes."""

import json
import os

import pytest

from replog.client import AdminError, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode


@pytest.fixture(scope="module")
def filled(admin, bootstrap):
    """A topic of 2 partitions with 2 replicas each, 200 records of 1 KB in partition 0."""
    admin.create_topics([NewTopic("sized", 2, 2), NewTopic("other", 1, 3)])
    with Producer(bootstrap, acks="all") as producer:
        producer.send_many("sized", [b"x" * 1024] * 200, partition=0)
    return admin.describe_topics(["sized"])[0]


def test_each_broker_describes_the_replicas_it_holds_with_their_size_and_offsets(cluster, admin, filled):
    described = admin.describe_log_dirs(topics=["sized"])
    status = {b["id"]: b for b in cluster.status()["brokers"]}
    assert sorted(described) == sorted(status)
    for partition in filled.partitions:
        tp = TopicPartition("sized", partition.partition)
        holders = {broker for broker, log_dirs in described.items() for d in log_dirs if tp in d.replicas}
        assert holders == set(partition.replicas)
    for broker, log_dirs in described.items():
        [log_dir] = log_dirs
        assert log_dir.error is ErrorCode.NONE and 0 < log_dir.usable_bytes <= log_dir.total_bytes
        assert os.path.samefile(log_dir.log_dir, status[broker]["data_dir"])
        assert {tp.topic for tp in log_dir.replicas} <= {"sized"}  # the topic asked for, nothing else
        for tp, replica in log_dir.replicas.items():
            on_disk = sum(os.path.getsize(os.path.join(log_dir.log_dir, str(tp), name))
                          for name in os.listdir(os.path.join(log_dir.log_dir, str(tp))) if name.endswith(".log"))
            assert replica.size_bytes == on_disk
            if tp.partition == 0:
                assert replica.size_bytes > 200 * 1024 and replica.log_end_offset == 200
            assert replica.leader == (filled.partitions[tp.partition].leader == broker)


def test_the_command_prints_the_log_dirs_and_refuses_what_is_not_there(cluster, filled):
    shown = json.loads(cluster("log-dirs", "describe", "--topic-list", "sized", "--broker-list", "1",
                               "--json").stdout)
    [broker] = shown["brokers"]
    assert broker["broker"] == 1
    partitions = {p["partition"] for log_dir in broker["logDirs"] for p in log_dir["partitions"]}
    assert partitions == {f"sized-{p.partition}" for p in filled.partitions if 1 in p.replicas}
    text = cluster("log-dirs", "describe").stdout
    assert text.count("Broker: ") == 3 and "other-0" in text and "high watermark: 200" in text
    for args, said in ((("--broker-list", "9"), "broker 9 is not live (live brokers: 1, 2, 3)"),
                       (("--broker-list", "one"), "--broker-list takes broker ids"),
                       (("--topic-list", "nope"), "topic 'nope' does not exist")):
        refused = cluster("log-dirs", "describe", *args, check=False)
        assert refused.returncode == 1 and said in refused.stderr and "Traceback" not in refused.stderr, refused


def test_a_broker_id_that_is_not_live_is_refused_by_the_client(admin):
    with pytest.raises(AdminError, match="broker 7 is not live"):
        admin.describe_log_dirs([7])
