"""DeleteRecords on a real broker's Partitions and servicer: the answer waits for the replicas on live brokers,
as the controller's UpdateMetadata names them, and every partition opened afterwards knows them too; the
leader's new log start is checkpointed before it answers."""

import asyncio

from replog.api.broker.v1 import broker_pb2
from replog.broker.checkpoints import LOG_START_CHECKPOINT
from replog.broker.delete_records import handle_delete_records
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.produce import handle_produce
from replog.broker.servicer import BrokerServicer
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.protocol import encode_batch
from replog.storage import LogConfig, OffsetCheckpointFile

# Led by broker 1 alone in sync; brokers 2 and 3 hold replicas that never fetch.
LEAD_ALONE = PartitionState(leader=1, leader_epoch=0, isr=(1,), partition_epoch=0, replicas=(1, 2, 3))


async def records_in(partitions: Partitions, partition: int, count: int) -> None:
    partitions.leader_and_isr("t", partition, LEAD_ALONE)
    request = broker_pb2.ProduceRequest(acks=1, timeout_ms=5_000)
    request.topics.add(topic="t").partitions.add(partition=partition,
                                                 records=encode_batch([(None, b"v")] * count))
    answer = (await asyncio.wait_for(handle_produce(partitions, request), 5)).topics[0].partitions[0]
    assert ErrorCode(answer.error_code) is ErrorCode.NONE


def delete_before(partitions: Partitions, partition: int, offset: int) -> asyncio.Task:
    request = broker_pb2.DeleteRecordsRequest(timeout_ms=20_000)
    request.topics.add(topic="t").partitions.add(partition=partition, offset=offset)
    return asyncio.ensure_future(handle_delete_records(partitions, request))


def update_metadata(live: list[int]) -> broker_pb2.UpdateMetadataRequest:
    request = broker_pb2.UpdateMetadataRequest(controller_id=9, controller_epoch=1, broker_epoch=5)
    for broker in live:
        request.live_brokers.add(broker_id=broker, host="127.0.0.1", port=9000 + broker)
    return request


def new_partitions(log_dir) -> Partitions:
    partitions = Partitions(1, (str(log_dir),), lambda name: TopicSettings(LogConfig(), ReplicaConfig()),
                            lambda *_: None, lambda *_: None)
    partitions.start()
    return partitions


def test_followers_on_live_brokers_hold_the_answer_until_update_metadata_says_their_brokers_are_gone(tmp_path):
    async def scenario():
        partitions = new_partitions(tmp_path)
        servicer = BrokerServicer(partitions, lambda: 5, lambda topics: asyncio.sleep(0))
        try:
            await records_in(partitions, 0, 5)
            held = delete_before(partitions, 0, 3)
            done, _ = await asyncio.wait([held], timeout=0.3)
            assert not done, "brokers 2 and 3 may be alive: their replicas still start at -1"
            answer = await servicer.UpdateMetadata(update_metadata([1]), None)
            assert ErrorCode(answer.error_code) is ErrorCode.NONE
            result = (await asyncio.wait_for(held, 5)).topics[0].partitions[0]
            assert (ErrorCode(result.error_code), result.low_watermark) == (ErrorCode.NONE, 3)

            await records_in(partitions, 1, 5)  # opened after UpdateMetadata: knows brokers 2 and 3 are gone
            result = (await asyncio.wait_for(delete_before(partitions, 1, 4), 5)).topics[0].partitions[0]
            assert (ErrorCode(result.error_code), result.low_watermark) == (ErrorCode.NONE, 4)

            await servicer.UpdateMetadata(update_metadata([1, 2]), None)  # broker 2 is back: it counts again
            assert partitions.by_name[next(iter(partitions.by_name))].replica.low_watermark == -1
        finally:
            await partitions.close()

    asyncio.run(scenario())


def test_the_leaders_log_start_is_checkpointed_before_it_answers_so_a_crash_keeps_the_records_deleted(tmp_path):
    async def until_the_crash():
        partitions = new_partitions(tmp_path)
        partitions.alive_brokers([1])  # the other replicas' brokers are gone: the leader answers alone
        await records_in(partitions, 0, 5)
        result = (await asyncio.wait_for(delete_before(partitions, 0, 3), 5)).topics[0].partitions[0]
        assert ErrorCode(result.error_code) is ErrorCode.NONE
        # The process dies here, well within the 5 s checkpoint round: nothing closes or writes anything more.
        return OffsetCheckpointFile(tmp_path / LOG_START_CHECKPOINT).read()

    async def after_the_restart():
        partitions = new_partitions(tmp_path)
        try:
            partitions.leader_and_isr("t", 0, LEAD_ALONE)
            driver = partitions.by_name[next(iter(partitions.by_name))]
            return driver.log.log_start_offset, driver.log.read(0, 1 << 20).error
        finally:
            await partitions.close()

    assert asyncio.run(until_the_crash()) == {("t", 0): 3}
    assert asyncio.run(after_the_restart()) == (3, ErrorCode.OFFSET_OUT_OF_RANGE)
