"""A broker's fencing of controller requests by broker epoch (KIP-380), through its own servicer.

After its ZooKeeper session expires, a broker registers again and gets a new broker epoch (its
new znode's czxid). The controller sees that znode at once and sends LeaderAndIsr for the new
epoch, which can arrive before the broker's registering call has returned. Refusing it left
the broker leading partitions the controller had moved away, for good.
"""

import asyncio

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.servicer import BrokerServicer
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.storage import LogConfig

OUR_EPOCH = 66


def leader_and_isr(broker_epoch: int, controller_epoch: int = 1) -> broker_pb2.LeaderAndIsrRequest:
    request = broker_pb2.LeaderAndIsrRequest(controller_id=1, controller_epoch=controller_epoch,
                                             broker_epoch=broker_epoch)
    request.partition_states.add(topic="fenced", partition=0, leader=1, leader_epoch=0, isr=[1],
                                 partition_epoch=0, replicas=[1], is_new=True)
    return request


def answers(tmp_path, *requests: broker_pb2.LeaderAndIsrRequest) -> list[int]:
    async def scenario() -> list[int]:
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None)
        partitions.start()

        async def learn_topics(_topics) -> None:
            return None

        servicer = BrokerServicer(partitions, lambda: OUR_EPOCH, learn_topics)
        try:
            return [(await servicer.LeaderAndIsr(request, None)).error_code for request in requests]
        finally:
            await partitions.close()

    return asyncio.run(scenario())


def test_a_request_for_a_newer_broker_epoch_is_this_brokers_own_new_registration(tmp_path):
    assert answers(tmp_path, leader_and_isr(OUR_EPOCH + 9)) == [ErrorCode.NONE]


def test_a_request_for_an_earlier_incarnation_is_refused(tmp_path):
    assert answers(tmp_path, leader_and_isr(OUR_EPOCH - 1), leader_and_isr(OUR_EPOCH), leader_and_isr(-1)) == [
        ErrorCode.STALE_BROKER_EPOCH, ErrorCode.NONE, ErrorCode.NONE]
