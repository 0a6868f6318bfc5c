"""The broker's per-partition gauges: a broker serves a leader's figures (LSO lag, producer ids,
replica lag) only while it leads the partition, and a partition's only while it hosts it, so a
dashboard or an alert never reads a former leader's last figures as current."""

import asyncio

from prometheus_client import REGISTRY

from replog.api.broker.v1 import broker_pb2
from replog.broker.gauges import update_gauges
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.produce import handle_produce
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.core.topic_partition import TopicPartition
from replog.core.txn.hanging import LATE_TRANSACTION_BUFFER_MS
from replog.protocol import encode_batch
from replog.storage import LogConfig

TOPIC = "gauged"
MAX_TIMEOUT_MS = 900_000
LABELS = {"topic": TOPIC, "partition": "0"}


def served(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, {**LABELS, **labels})


def figures() -> dict[str, float | None]:
    return {"lso lag": served("replog_last_stable_offset_lag"), "producer ids": served("replog_producer_ids"),
            "replica lag": served("replog_replica_lag_records", replica="2"),
            "log end offset": served("replog_log_end_offset")}


def test_a_partition_serves_the_leader_figures_while_led_here_and_none_once_gone(tmp_path):
    async def scenario() -> list[dict[str, float | None]]:
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None)
        partitions.start()
        seen = []
        for leader, leader_epoch in ((1, 0), (2, 1)):
            state = PartitionState(leader=leader, leader_epoch=leader_epoch, isr=(1, 2), partition_epoch=leader_epoch,
                                   replicas=(1, 2))
            partitions.leader_and_isr(TOPIC, 0, state)
            update_gauges(1, partitions.hosted, 0, MAX_TIMEOUT_MS)
            seen.append(figures())
        partitions.stop_replica(TOPIC, 0, delete=True)
        update_gauges(1, partitions.hosted, 0, MAX_TIMEOUT_MS)
        seen.append(figures())
        await partitions.close()
        return seen

    leading, following, deleted = asyncio.run(scenario())
    assert None not in leading.values(), leading
    assert following == {"lso lag": None, "producer ids": None, "replica lag": None, "log end offset": 0}
    assert set(deleted.values()) == {None}, deleted


def test_a_partition_whose_open_transaction_went_silent_past_the_max_timeout_is_late(tmp_path, caplog):
    # An old client's transactional write, appended without verification, that no marker ever ends.
    async def scenario() -> list[float | None]:
        settings = TopicSettings(LogConfig(), ReplicaConfig(transaction_partition_verification_enable=0))
        partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None)
        partitions.start()
        partitions.leader_and_isr(TOPIC, 0, PartitionState(leader=1, leader_epoch=0, isr=(1,), partition_epoch=0,
                                                           replicas=(1,)))
        batch = encode_batch([(b"k", b"v")], producer_id=42, producer_epoch=0, base_sequence=0, transactional=True)
        request = broker_pb2.ProduceRequest(acks=1, timeout_ms=5_000, topics=[broker_pb2.ProduceTopicData(
            topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch)])])
        answer = await handle_produce(partitions, request)
        assert ErrorCode.of(answer.topics[0].partitions[0].error_code) is ErrorCode.NONE, answer
        [producer] = partitions.by_name[TopicPartition(TOPIC, 0)].replica.producers
        written = producer.last_timestamp_ms  # the broker's clock, when it appended the batch
        seen = []
        for now in (written + MAX_TIMEOUT_MS + LATE_TRANSACTION_BUFFER_MS, written + MAX_TIMEOUT_MS
                    + LATE_TRANSACTION_BUFFER_MS + 1, written):
            update_gauges(1, partitions.hosted, now, MAX_TIMEOUT_MS)
            seen.append(REGISTRY.get_sample_value("replog_partitions_with_late_transactions"))
        await partitions.close()
        return seen

    assert asyncio.run(scenario()) == [0, 1, 0]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(f"{TOPIC}-0 holds a transaction" in message for message in warnings), warnings
