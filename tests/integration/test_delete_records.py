"""DeleteRecords on real processes: the records before an offset are gone from every replica, stay gone
through a leader's SIGKILL (its log start checkpointed before it answered), and consumers move past them;
bad requests are refused with what is wrong."""

import json
import os

import pytest

from replog.broker.checkpoints import LOG_START_CHECKPOINT
from replog.client import AdminError, Consumer, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.dev.cluster_file import Cluster
from replog.storage import OffsetCheckpointFile
from tests.integration.cluster import read_partition, wait_for

SESSION_TIMEOUT_S = 6


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    with Producer(bootstrap, acks="all") as producer:
        for i in range(count):
            producer.send(topic, b"record-%04d" % i, partition=partition)


def test_records_before_the_offset_are_gone_from_every_replica_and_stay_gone_after_a_leader_sigkill(
        cluster, admin, bootstrap):
    topic = "deleted-head"
    admin.create_topics([NewTopic(topic, 1, 3)])
    produce(bootstrap, topic, 100)
    tp = TopicPartition(topic, 0)
    assert admin.delete_records({tp: 40}) == {tp: 40}
    assert admin.list_offsets({tp: "earliest"}) == {tp: 40}
    assert [r.offset for r in read_partition(bootstrap, tp, 100)] == list(range(40, 100))

    leader = admin.describe_topics([topic])[0].partitions[0].leader
    cluster.signal("broker", leader, "KILL")
    log_dir = Cluster.load(cluster.data_dir).broker_log_dir(leader)
    log_starts = OffsetCheckpointFile(os.path.join(log_dir, LOG_START_CHECKPOINT)).read()
    assert log_starts.get((topic, 0)) == 40, "the leader answered before its log start was on disk"
    try:
        wait_for(lambda: admin.describe_topics([topic])[0].partitions[0].leader not in (-1, leader),
                 SESSION_TIMEOUT_S + 20, "a new leader")
        # The followers had taken the log start before the answer came: the new leader starts there too.
        assert admin.list_offsets({tp: "earliest"}) == {tp: 40}
        assert [r.offset for r in read_partition(bootstrap, tp, 100)] == list(range(40, 100))
    finally:
        cluster("dev", "start", "broker", str(leader))
    wait_for(lambda: len(admin.describe_topics([topic])[0].partitions[0].isr) == 3, 60, "the broker to rejoin")
    assert admin.delete_records({tp: -1}) == {tp: 100}  # -1: up to the high watermark
    assert admin.list_offsets({tp: "earliest"}) == {tp: 100}


def test_a_consumer_whose_position_was_deleted_goes_on_from_the_log_start(admin, bootstrap):
    topic = "deleted-under-a-consumer"
    admin.create_topics([NewTopic(topic, 1, 3)])
    produce(bootstrap, topic, 30)
    tp = TopicPartition(topic, 0)
    consumer = Consumer(bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        admin.delete_records({tp: 20})
        consumer.seek(tp, 5)  # a position below the log start: the fetch there is out of range
        records = []
        wait_for(lambda: records.extend(consumer.poll(timeout_ms=200)) or consumer.position(tp) >= 30,
                 30, "the consumer to reach the end")
        assert [r.offset for r in records] == list(range(20, 30))
    finally:
        consumer.close()


def test_bad_requests_are_refused_naming_what_is_wrong_and_delete_nothing(admin, bootstrap):
    topic = "not-deleted"
    admin.create_topics([NewTopic(topic, 2, 3), NewTopic("compacted-only", 1, 3,
                                                         configs={"cleanup.policy": "compact"})])
    produce(bootstrap, topic, 10)
    tp = TopicPartition(topic, 0)
    with pytest.raises(AdminError, match="outside the partition's records: they run from 0 to its high watermark 10"):
        admin.delete_records({tp: 11})
    with pytest.raises(AdminError, match="an offset of 0 or more, or -1"):
        admin.delete_records({tp: -2})
    with pytest.raises(AdminError, match="has partitions 0..1, not 5"):
        admin.delete_records({TopicPartition(topic, 5): 1})
    with pytest.raises(AdminError) as refused:
        admin.delete_records({TopicPartition("compacted-only", 0): 0})
    assert refused.value.error_code is ErrorCode.POLICY_VIOLATION
    assert "not deleted by offset" in str(refused.value)
    assert admin.list_offsets({tp: "earliest"}) == {tp: 0}


def test_the_command_deletes_every_partition_of_a_topic_and_says_what_is_wrong(cluster, admin, bootstrap, tmp_path):
    topic = "deleted-by-command"
    admin.create_topics([NewTopic(topic, 2, 3)])
    for partition in (0, 1):
        produce(bootstrap, topic, 10, partition)
    done = cluster("delete-records", "--topic", topic, "--offset", "4", "--json")
    assert json.loads(done.stdout) == {"partitions": [{"topic": topic, "partition": 0, "low_watermark": 4},
                                                      {"topic": topic, "partition": 1, "low_watermark": 4}]}
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 1, "offset": 7}], "version": 1}))
    done = cluster("delete-records", "--offset-json-file", str(offsets))
    assert done.stdout.splitlines() == ["Records delete operation completed:",
                                        f"partition: {topic}-1\tlow_watermark: 7"]
    offsets.write_text(json.dumps({"partitions": [{"topic": topic, "partition": "1", "offset": 7}]}))
    for args, said in (
        (("--offset-json-file", str(offsets)), "partitions[0] needs a topic name and a whole number"),
        (("--offset-json-file", str(tmp_path / "missing.json")), "cannot read --offset-json-file"),
        (("--topic", topic), "--topic needs --offset"),
        (("--topic", topic, "--offset", "99"), "outside the partition's records"),
        ((), "give --topic T --offset O"),
    ):
        refused = cluster("delete-records", *args, check=False)
        assert refused.returncode == 1 and said in refused.stderr and "Traceback" not in refused.stderr, refused
    assert admin.list_offsets({TopicPartition(topic, 0): "earliest", TopicPartition(topic, 1): "earliest"}) == {
        TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 7}


def test_a_timeout_out_of_range_is_refused_as_an_invalid_argument(cluster, admin, bootstrap):
    import grpc

    from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
    from replog.rpc.channels import channel

    leader = admin.describe_topics(["not-deleted"])[0].partitions[0].leader
    address = next(b["address"] for b in cluster.status()["brokers"] if b["id"] == leader)
    request = broker_pb2.DeleteRecordsRequest(timeout_ms=-5, topics=[broker_pb2.DeleteRecordsTopic(
        topic="not-deleted", partitions=[broker_pb2.DeleteRecordsPartition(partition=0, offset=1)])])
    with channel(address) as opened:
        with pytest.raises(grpc.RpcError) as refused:
            broker_pb2_grpc.BrokerServiceStub(opened).DeleteRecords(request, timeout=10)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "timeout_ms -5 is out of range" in refused.value.details()
    assert admin.list_offsets({TopicPartition("not-deleted", 0): "earliest"}) == {TopicPartition("not-deleted", 0): 0}
