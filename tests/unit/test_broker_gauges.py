"""The broker's per-partition gauges: a broker serves a leader's figures (LSO lag, producer ids,
replica lag) only while it leads the partition, and a partition's only while it hosts it, so a
dashboard or an alert never reads a former leader's last figures as current."""

import asyncio

from prometheus_client import REGISTRY

from replog.broker.gauges import update_gauges
from replog.broker.partitions import Partitions, TopicSettings
from replog.core.config import ReplicaConfig
from replog.core.messages import PartitionState
from replog.storage import LogConfig

TOPIC = "gauged"
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
            update_gauges(1, partitions.hosted)
            seen.append(figures())
        partitions.stop_replica(TOPIC, 0, delete=True)
        update_gauges(1, partitions.hosted)
        seen.append(figures())
        await partitions.close()
        return seen

    leading, following, deleted = asyncio.run(scenario())
    assert None not in leading.values(), leading
    assert following == {"lso lag": None, "producer ids": None, "replica lag": None, "log end offset": 0}
    assert set(deleted.values()) == {None}, deleted
