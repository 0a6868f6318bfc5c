"""Topic administration on a real cluster through the `replog` command: delete and re-create,
add partitions, change and read configs, find under-replicated and unavailable partitions."""

import json
import os

import pytest

from replog.api.common.v1 import common_pb2
from replog.client import Admin, ClientError, Consumer, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.zk import paths
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import FAILOVER_S_MAX, bootstrap, in_zookeeper, metadata, partitions

pytestmark = pytest.mark.slow


def partition_dirs(cluster, topic: str) -> list[str]:
    """Every broker's directories of the topic's partitions."""
    found = []
    for broker in cluster.status()["brokers"]:
        data_dir = broker["data_dir"]
        found += [os.path.join(data_dir, d) for d in os.listdir(data_dir) if d.rsplit("-", 1)[0] == topic]
    return found


def znodes_of(cluster, topic: str) -> list[str]:
    async def read(store):
        return [path for path in (paths.topic(topic), paths.topic_config(topic), paths.topic_deletion(topic))
                if await store.exists(path)]

    return in_zookeeper(cluster, read)


def test_a_deleted_topic_leaves_no_trace_and_its_name_can_be_used_again(cluster):
    cluster("topics", "create", "doomed", "--partitions", "3", "--replication-factor", "3",
            "--config", "retention.ms=60000")
    old_id = metadata(cluster, "doomed").topics[0].topic_id
    with Producer(bootstrap(cluster)) as producer:
        producer.send_many("doomed", [b"old-%d" % i for i in range(300)]).result(30)
    assert len(partition_dirs(cluster, "doomed")) == 9

    assert cluster("topics", "delete", "doomed").stdout == "Deleted topic doomed.\n"
    assert metadata(cluster, "doomed").topics[0].error_code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
    assert znodes_of(cluster, "doomed") == [], "topic, config and deletion mark are gone"
    assert partition_dirs(cluster, "doomed") == [], "every broker removed its replicas' logs"
    assert "doomed" not in cluster("topics", "list").stdout.split()

    cluster("topics", "create", "doomed", "--partitions", "2", "--replication-factor", "2")
    (topic,) = metadata(cluster, "doomed").topics
    assert topic.topic_id != old_id
    assert [p.partition for p in topic.partitions] == [0, 1] and all(p.leader > 0 for p in topic.partitions)
    report = json.loads(cluster("topics", "describe", "doomed", "--json").stdout)
    assert report["topics"][0]["configs"] == {}, "the old topic's configs went with it"
    with Producer(bootstrap(cluster)) as producer:
        producer.send_many("doomed", [b"new-%d" % i for i in range(10)], partition=0).result(30)
    with Consumer(bootstrap(cluster), auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("doomed", 0)])
        values = []
        wait_for(lambda: values.extend(r.value for r in consumer.poll(200)) or len(values) >= 10, 30,
                 "the new topic's records")
    assert values == [b"new-%d" % i for i in range(10)], "the new topic starts empty"


def test_deleting_a_topic_that_does_not_exist_says_so(cluster):
    result = cluster("topics", "delete", "never-was", check=False)
    assert result.returncode == 1 and "never-was" in result.stderr and "UNKNOWN_TOPIC_OR_PARTITION" in result.stderr
    assert "Traceback" not in result.stderr


def test_alter_adds_partitions_that_get_leaders_and_take_records(cluster):
    cluster("topics", "create", "growing", "--partitions", "2", "--replication-factor", "2")
    assert cluster("topics", "alter", "growing", "--partitions", "5").stdout == "Topic growing now has 5 partitions.\n"
    now = partitions(cluster, "growing")
    assert sorted(now) == [0, 1, 2, 3, 4]
    assert all(p.leader == p.replicas[0] and len(p.replicas) == 2 and sorted(p.isr) == sorted(p.replicas)
               for p in now.values())
    assert len({p.replicas[0] for p in now.values()}) == 3, "new leaders continue the round robin"
    with Producer(bootstrap(cluster)) as producer:
        assert producer.send("growing", b"to the new partition", partition=4).result(30).offset == 0

    fewer = cluster("topics", "alter", "growing", "--partitions", "3", check=False)
    assert fewer.returncode == 1 and "INVALID_PARTITIONS" in fewer.stderr and "never removed" in fewer.stderr
    assert "Traceback" not in fewer.stderr
    assert len(partitions(cluster, "growing")) == 5


def test_configs_alter_then_describe(cluster):
    cluster("topics", "create", "tuned", "--partitions", "1", "--replication-factor", "3")
    assert cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "tuned", "--add-config",
                   "min.insync.replicas=2,cleanup.policy=[compact,delete]").stdout \
        == "Completed updating config for topic tuned.\n"
    cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "tuned", "--add-config", "retention.ms=5000")
    described = cluster("configs", "describe", "--entity-type", "topics", "--entity-name", "tuned").stdout
    assert described.splitlines() == [
        "Dynamic configs for topic tuned are:",
        "  cleanup.policy=compact,delete source=DYNAMIC_TOPIC_CONFIG",
        "  min.insync.replicas=2 source=DYNAMIC_TOPIC_CONFIG",
        "  retention.ms=5000 source=DYNAMIC_TOPIC_CONFIG",
    ]
    cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "tuned", "--delete-config", "retention.ms")
    everything = cluster("configs", "describe", "--entity-type", "topics", "--entity-name", "tuned", "--all").stdout
    assert "  retention.ms=604800000 source=DEFAULT_CONFIG" in everything.splitlines()
    report = json.loads(cluster("topics", "describe", "tuned", "--json").stdout)
    assert report["topics"][0]["configs"] == {"cleanup.policy": "compact,delete", "min.insync.replicas": "2"}

    bad = cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "tuned", "--add-config",
                  "segment.bytes=3", check=False)
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr and "segment.bytes" in bad.stderr
    unknown = cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "tuned", "--add-config",
                      "retention.days=7", check=False)
    assert unknown.returncode == 1 and "retention.days" in unknown.stderr
    assert "Traceback" not in bad.stderr + unknown.stderr
    with Admin(bootstrap(cluster)) as admin:
        assert admin.describe_configs(["tuned"])["tuned"] == {"cleanup.policy": "compact,delete",
                                                             "min.insync.replicas": "2"}, "nothing half-applied"


def test_a_changed_topic_config_holds_on_the_brokers_at_once(cluster):
    topic = "live-tuned"
    cluster("topics", "create", topic, "--partitions", "1", "--replication-factor", "2")

    def alter(*args: str) -> None:
        cluster("configs", "alter", "--entity-type", "topics", "--entity-name", topic, *args)

    def outcome(producer: Producer, value: bytes) -> ErrorCode:
        try:
            producer.send(topic, value).result(10)
        except ClientError as error:
            return error.error_code
        return ErrorCode.NONE

    with Producer(bootstrap(cluster), acks="all", retries=0) as producer:
        assert outcome(producer, b"before") == ErrorCode.NONE
        alter("--add-config", "min.insync.replicas=3")  # more than the replicas: acks=all is refused
        wait_for(lambda: outcome(producer, b"x") == ErrorCode.NOT_ENOUGH_REPLICAS, 10,
                 "acks=all refused under min.insync.replicas=3")
        alter("--delete-config", "min.insync.replicas")
        wait_for(lambda: outcome(producer, b"x") == ErrorCode.NONE, 10, "acks=all accepted again")

        alter("--add-config", "max.message.bytes=300")  # the log's side of a topic's config
        wait_for(lambda: outcome(producer, b"y" * 1000) == ErrorCode.MESSAGE_TOO_LARGE, 10,
                 "a 1 KB record refused under max.message.bytes=300")
        assert outcome(producer, b"small") == ErrorCode.NONE


def test_broker_configs_are_described_and_read_only(cluster):
    broker = cluster.status()["brokers"][0]
    described = cluster("configs", "describe", "--entity-type", "brokers", "--entity-name", str(broker["id"])).stdout
    assert f"  advertised.listeners={broker['address']} source=STATIC_BROKER_CONFIG read-only" in described
    refused = cluster("configs", "alter", "--entity-type", "brokers", "--entity-name", str(broker["id"]),
                      "--add-config", "log.retention.ms=1", check=False)
    assert refused.returncode == 1 and "restart" in refused.stderr and "Traceback" not in refused.stderr


def test_describe_finds_under_replicated_and_unavailable_partitions(cluster):
    cluster("topics", "create", "spread", "--replica-assignment", "1:3,2:3")
    cluster("topics", "create", "alone", "--replica-assignment", "3")
    cluster.signal("broker", 3, "KILL")
    try:
        wait_for(lambda: partitions(cluster, "alone")[0].leader == -1 and all(
            3 not in p.isr for p in partitions(cluster, "spread").values()), FAILOVER_S_MAX, "broker 3 to be gone")
        under = cluster("topics", "describe", "--under-replicated-partitions").stdout.splitlines()
        assert "Topic: spread  Partition: 0  Leader: 1  Replicas: 1,3  Isr: 1  Offline: 3" in under
        assert "Topic: spread  Partition: 1  Leader: 2  Replicas: 2,3  Isr: 2  Offline: 3" in under
        unavailable = cluster("topics", "describe", "--unavailable-partitions").stdout.splitlines()
        assert unavailable == ["Topic: alone  Partition: 0  Leader: none  Replicas: 3  Isr: 3  Offline: 3"]
    finally:
        cluster("dev", "start", "broker", "3")
    wait_for(lambda: cluster("topics", "describe", "--unavailable-partitions").stdout == "", 20,
             "every partition to have a leader again")
