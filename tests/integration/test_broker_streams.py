"""ProduceStream and FetchStream on a real broker: pipelined requests land and are answered in order."""

import asyncio

import grpc
import pytest

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.client import NewTopic, TopicPartition
from replog.dev.processes import scrape_metric
from replog.protocol import encode_batch, iter_records
from replog.rpc.request_stream import RequestStream, StreamError
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

REQUESTS = 200
TIMEOUT_S = 30.0


def create_and_find_leader(admin, topic):
    """A new topic of one partition, three replicas: its leader's address and epoch, once the leader serves it.

    The metadata service may name a leader before that broker has taken the leadership, so
    the leader is asked until a fetch at offset 0 comes back without an error.
    """
    admin.create_topics([NewTopic(topic, 1, 3)])
    metadata = admin.cluster()
    tp = TopicPartition(topic, 0)
    address, epoch = metadata.brokers[metadata.leader_of(tp)], metadata.leader_epoch_of(tp)
    with grpc.insecure_channel(address) as channel:
        fetch = broker_pb2_grpc.BrokerServiceStub(channel).Fetch

        def serving() -> bool:
            answer = fetch(fetch_message(topic, epoch, 0, max_wait_ms=0).request, timeout=TIMEOUT_S)
            return answer.topics[0].partitions[0].error_code == 1  # ERROR_CODE_NONE

        wait_for(serving, 10, f"the leader of {topic}-0 serving it")
    return address, epoch


def produce_message(topic, epoch, value, acks=-1):
    message = broker_pb2.ProduceStreamRequest()
    message.request.acks = acks
    message.request.timeout_ms = 10_000
    message.request.topics.add(topic=topic).partitions.add(
        partition=0, records=encode_batch([(None, value)]), current_leader_epoch=epoch)
    return message


def fetch_message(topic, epoch, offset, max_wait_ms=500):
    message = broker_pb2.FetchStreamRequest()
    request = message.request
    request.replica_id, request.max_wait_ms, request.min_bytes, request.max_bytes = -1, max_wait_ms, 1, 1 << 20
    request.topics.add(topic=topic).partitions.add(partition=0, fetch_offset=offset, current_leader_epoch=epoch,
                                                   partition_max_bytes=1 << 20)
    return message


def test_pipelined_produce_requests_land_and_are_answered_in_the_order_sent(admin):
    topic = "stream-order"
    address, epoch = create_and_find_leader(admin, topic)

    async def run():
        async with grpc.aio.insecure_channel(address) as channel:
            stream = RequestStream(broker_pb2_grpc.BrokerServiceStub(channel).ProduceStream)
            answers = await asyncio.gather(*(
                stream.request(produce_message(topic, epoch, b"%d" % i), TIMEOUT_S) for i in range(REQUESTS)))
            fetched = await stream_fetch(channel, topic, epoch)
            stream.close()
            return answers, fetched

    answers, fetched = asyncio.run(run())
    results = [answer.response.topics[0].partitions[0] for answer in answers]
    assert [r.error_code for r in results] == [1] * REQUESTS  # ERROR_CODE_NONE
    assert [r.base_offset for r in results] == list(range(REQUESTS))
    assert [(r.offset, r.value) for r in fetched] == [(i, b"%d" % i) for i in range(REQUESTS)]


async def stream_fetch(channel, topic, epoch):
    """Everything below the high watermark, over a FetchStream."""
    stream = RequestStream(broker_pb2_grpc.BrokerServiceStub(channel).FetchStream)
    records = []
    while len(records) < REQUESTS:
        answer = await stream.request(fetch_message(topic, epoch, len(records)), TIMEOUT_S)
        partition = answer.response.topics[0].partitions[0]
        assert partition.error_code == 1, partition.error_message
        records += list(iter_records(partition.records))
    stream.close()
    return records


def test_a_fetch_stream_long_polls_and_is_woken_by_an_append(admin):
    topic = "stream-wake"
    address, epoch = create_and_find_leader(admin, topic)

    async def run():
        async with grpc.aio.insecure_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerServiceStub(channel)
            fetches = RequestStream(stub.FetchStream)
            produces = RequestStream(stub.ProduceStream)
            waiting = asyncio.ensure_future(fetches.request(fetch_message(topic, epoch, 0, max_wait_ms=20_000),
                                                            TIMEOUT_S))
            await asyncio.sleep(0.2)
            assert not waiting.done(), f"the fetch answered before there was anything to read: {waiting.result()}"
            loop = asyncio.get_running_loop()
            sent = loop.time()
            await produces.request(produce_message(topic, epoch, b"wake"), TIMEOUT_S)
            answer = await waiting
            woken_after_s = loop.time() - sent
            fetches.close()
            produces.close()
            return answer, woken_after_s

    answer, woken_after_s = asyncio.run(run())
    assert [r.value for r in iter_records(answer.response.topics[0].partitions[0].records)] == [b"wake"]
    assert woken_after_s < 5.0  # far below the 20 s the fetch would otherwise wait


def test_a_stream_to_a_broker_that_is_gone_fails_each_request_with_unavailable():
    async def run():
        async with grpc.aio.insecure_channel("127.0.0.1:1") as channel:
            stream = RequestStream(broker_pb2_grpc.BrokerServiceStub(channel).ProduceStream)
            with pytest.raises(StreamError) as failure:
                await stream.request(produce_message("t", 0, b"x"), TIMEOUT_S)
            return failure.value

    error = asyncio.run(run())
    assert error.code() is grpc.StatusCode.UNAVAILABLE


def test_each_broker_keeps_one_fetch_session_per_follower_broker(cluster, admin):
    admin.create_topics([NewTopic("stream-sessions", 3, 3)])  # every broker leads one, follows two

    def sessions() -> list[float | None]:
        return [scrape_metric(cluster.metrics_address("broker", broker), "replog_fetch_sessions")
                for broker in (1, 2, 3)]

    wait_for(lambda: sessions() == [2.0, 2.0, 2.0], 10, "two fetch sessions on every broker")
