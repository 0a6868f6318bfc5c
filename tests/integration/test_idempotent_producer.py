"""The idempotent producer on real brokers: producer ids from blocks reserved in ZooKeeper, and a
partition's records written once each and in order, five batches in flight, while its leader is
SIGKILLed again and again."""

from __future__ import annotations

import threading

import grpc
import pytest

from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.client import Admin, Consumer, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.core.producer_ids import BLOCK_SIZE
from tests.integration.cluster import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def init_producer_id(address: str) -> int:
    with grpc.insecure_channel(address) as channel:
        answer = cg.CoordinatorServiceStub(channel).InitProducerId(
            cp.InitProducerIdRequest(producer_id=-1, producer_epoch=-1), timeout=30)
    assert answer.error_code == ErrorCode.NONE, answer.error_message
    assert answer.producer_epoch == 0
    return answer.producer_id


def test_every_broker_hands_out_producer_ids_nobody_else_has(cluster):
    brokers = [b["address"] for b in cluster.status()["brokers"]]
    ids = [init_producer_id(address) for address in brokers for _ in range(3)]
    assert len(set(ids)) == len(ids)
    blocks = {i // BLOCK_SIZE for i in ids}
    assert len(blocks) == len(brokers), "each broker took a block of its own"
    log = "\n".join(cluster.log_text("broker", b["id"]) for b in cluster.status()["brokers"])
    assert log.count("reserved for this broker") >= len(brokers)


def test_an_idempotent_producer_writes_each_record_once_and_in_order_through_three_leader_kills(cluster):
    bootstrap = cluster.status()["metadata"][0]["address"]
    topic, total = "once", 30_000
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)])
        leader_of = lambda: admin.cluster().leader_of(tp)  # noqa: E731
        sent = [0]
        failures: list[BaseException] = []

        def produce():
            try:
                with Producer(bootstrap, linger_ms=2, batch_size=16_384) as producer:
                    assert producer.config.enable_idempotence
                    futures = []
                    stop = threading.Event()
                    for i in range(total):
                        futures.append(producer.send(topic, b"%d" % i, partition=0))
                        sent[0] = i + 1
                        if i % 300 == 299:
                            stop.wait(0.05)  # about 6,000 records/s
                    producer.flush(120)
                    for future in futures:
                        future.result(0)
            except BaseException as error:  # noqa: BLE001 - asserted below
                failures.append(error)

        writer = threading.Thread(target=produce, daemon=True)
        writer.start()
        for kill in range(3):
            wait_for(lambda kill=kill: sent[0] >= total * (kill + 1) // 4, 60, f"record {total * (kill + 1) // 4}")
            leader = leader_of()
            cluster.signal("broker", leader, "KILL")
            wait_for(lambda leader=leader: leader_of() not in (leader, -1), 60, "a new leader")
            cluster("dev", "start", "broker", str(leader))
        writer.join(180)
        assert not writer.is_alive() and not failures, failures
        end = admin.list_offsets({tp: "latest"})[tp]

    values = []
    with Consumer(bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning()
        wait_for(lambda: values.extend(r.value for r in consumer.poll(200)) or len(values) >= end, 60,
                 "every record read back", interval_s=0)
    assert end == total, f"{end - total} records written twice" if end > total else f"{total - end} missing"
    assert values == [b"%d" % i for i in range(total)]
