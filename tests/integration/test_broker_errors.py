"""The errors a client author meets at a broker, named as Kafka names them, and what the CLI says.

- acks other than 0, 1 and -1 is INVALID_REQUIRED_ACKS, before any record is looked at;
- a topic the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION, while a partition that exists
  but is led elsewhere is NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata for either);
- `replog consume --partition P --offset O` past the end says where the log ends.
"""

import grpc
import pytest

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.client import NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.protocol import encode_batch
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow


def stub_of(cluster, broker_id):
    address = next(b["address"] for b in cluster.status()["brokers"] if b["id"] == broker_id)
    return grpc.insecure_channel(address), address


def produce(channel, topic, records, acks=-1, partition=0):
    request = broker_pb2.ProduceRequest(acks=acks, timeout_ms=5_000)
    request.topics.add(topic=topic).partitions.add(partition=partition, records=records)
    answer = broker_pb2_grpc.BrokerServiceStub(channel).Produce(request, timeout=10)
    return answer.topics[0].partitions[0]


def fetch(channel, topic, partition=0):
    request = broker_pb2.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20)
    request.topics.add(topic=topic).partitions.add(partition=partition, fetch_offset=0, current_leader_epoch=-1,
                                                   last_fetched_epoch=-1, partition_max_bytes=1 << 20)
    return broker_pb2_grpc.BrokerServiceStub(channel).Fetch(request, timeout=10).topics[0].partitions[0]


def list_offsets(channel, topic, partition=0):
    request = broker_pb2.ListOffsetsRequest(replica_id=-1)
    request.topics.add(topic=topic).partitions.add(partition=partition, timestamp_ms=-1, current_leader_epoch=-1)
    return broker_pb2_grpc.BrokerServiceStub(channel).ListOffsets(request, timeout=10).topics[0].partitions[0]


def test_an_invalid_acks_is_refused_before_the_records_are_looked_at(cluster, admin):
    admin.create_topics([NewTopic("acks-checked", 1, 3)])
    leader = wait_for(lambda: admin.cluster().leader_of(TopicPartition("acks-checked", 0)), 30, "a leader")
    channel, _ = stub_of(cluster, leader)
    with channel:
        garbage = produce(channel, "acks-checked", b"not a record batch", acks=2)
        assert (garbage.error_code, garbage.base_offset) == (ErrorCode.INVALID_REQUIRED_ACKS, -1)
        assert "acks must be 0, 1 or -1" in garbage.error_message
        valid = produce(channel, "acks-checked", encode_batch([(None, b"v")]), acks=7)
        assert valid.error_code == ErrorCode.INVALID_REQUIRED_ACKS
        assert produce(channel, "acks-checked", encode_batch([(None, b"v")]), acks=1).error_code == ErrorCode.NONE
        assert produce(channel, "acks-checked", b"not a record batch", acks=1).error_code == ErrorCode.CORRUPT_MESSAGE


def test_a_topic_the_cluster_lacks_is_unknown_and_one_led_elsewhere_is_not_led_here(cluster, admin):
    admin.create_topics([NewTopic("led-elsewhere", 1, 1)])
    tp = TopicPartition("led-elsewhere", 0)
    leader = wait_for(lambda: admin.cluster().leader_of(tp), 30, "a leader")
    other = next(b["id"] for b in cluster.status()["brokers"] if b["id"] != leader)
    channel, address = stub_of(cluster, other)
    with channel:
        # The controller's UpdateMetadata reaches every broker shortly after the topic is created.
        wait_for(lambda: fetch(channel, "led-elsewhere").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, 30,
                 f"broker {other} at {address} to know of led-elsewhere")
        records = encode_batch([(None, b"v")])
        assert produce(channel, "led-elsewhere", records).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert list_offsets(channel, "led-elsewhere").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert produce(channel, "never-created", records).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(channel, "never-created").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert list_offsets(channel, "never-created").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(channel, "led-elsewhere", partition=5).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_deleted_topic_is_unknown_to_every_broker(cluster, admin):
    admin.create_topics([NewTopic("soon-gone", 1, 1)])
    leader = wait_for(lambda: admin.cluster().leader_of(TopicPartition("soon-gone", 0)), 30, "a leader")
    other = next(b["id"] for b in cluster.status()["brokers"] if b["id"] != leader)
    channel, address = stub_of(cluster, other)
    with channel:
        wait_for(lambda: fetch(channel, "soon-gone").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, 30,
                 f"broker {other} at {address} to know of soon-gone")
        admin.delete_topics(["soon-gone"])
        wait_for(lambda: fetch(channel, "soon-gone").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 30,
                 f"broker {other}, which never hosted soon-gone, to forget it")


def test_consuming_from_an_offset_past_the_end_says_where_the_log_ends(cluster, admin, bootstrap):
    admin.create_topics([NewTopic("short-log", 1, 3)])
    with Producer(bootstrap) as producer:
        producer.send_many("short-log", [b"a", b"b", b"c"], partition=0).result(30)
    result = cluster("consume", "short-log", "--partition", "0", "--offset", "50", "--timeout-ms", "10000",
                     check=False)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "offset 50 is outside short-log-0, which holds offsets 0 to 2" in result.stderr, result.stderr
    at_end = cluster("consume", "short-log", "--partition", "0", "--offset", "3", "--timeout-ms", "1000")
    assert at_end.returncode == 0 and at_end.stdout == ""
