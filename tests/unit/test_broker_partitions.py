"""The broker's hosted partitions: opening one must not cost more the more a broker hosts, and
closing them answers the producers still waiting.

One LeaderAndIsr can name a thousand new partitions, and the broker opens them all before it
returns to its loop; while it does, it serves no fetch. When each open looked at every hosted
partition, a broker hosting a few thousand spent seconds per request, long enough for leaders
to drop their followers from the ISR (replica.lag.time.max.ms).
"""

import asyncio
import time

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.produce import handle_produce
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.protocol import encode_batch
from replog.storage import LogConfig

HOSTED = 1000
SAMPLE = 100
ROUNDS = 3
# Opening the partitions past the first HOSTED may be at most this much slower than the first
# ones; when each open went over every hosted partition it was more than ten times slower.
SLOWDOWN_MAX = 3.0


def follow(partitions: Partitions, topic: str, count: int) -> float:
    """Become a follower of `count` new partitions of `topic`; the seconds it took."""
    started = time.perf_counter()
    for partition in range(count):
        state = PartitionState(leader=2, leader_epoch=0, isr=(2, 1), partition_epoch=0, replicas=(2, 1))
        partitions.leader_and_isr(topic, partition, state)
    return time.perf_counter() - started


def test_opening_a_partition_costs_the_same_however_many_the_broker_hosts(tmp_path):
    async def scenario() -> tuple[float, float]:
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        empty = Partitions(1, (str(tmp_path / "empty"),), lambda _: settings, lambda *_: None, lambda *_: None)
        busy = Partitions(1, (str(tmp_path / "busy"),), lambda _: settings, lambda *_: None, lambda *_: None)
        for partitions in (empty, busy):
            partitions.start()
        follow(busy, "hosted", HOSTED)
        # Alternate the two, and keep the fastest round of each: a shared machine's noise only slows.
        alone, among_many = float("inf"), float("inf")
        for round_ in range(ROUNDS):
            alone = min(alone, follow(empty, f"new-{round_}", SAMPLE))
            among_many = min(among_many, follow(busy, f"new-{round_}", SAMPLE))
        await empty.close()
        await busy.close()
        return alone, among_many

    alone, among_many = asyncio.run(scenario())
    assert among_many < SLOWDOWN_MAX * alone, (
        f"{SAMPLE} partitions opened in {alone * 1000:.0f} ms on an empty broker but "
        f"{among_many * 1000:.0f} ms on one hosting {HOSTED}")


def test_closing_answers_the_acks_all_producers_still_waiting(tmp_path):
    """A broker stopping while it still leads (its controlled shutdown's LeaderAndIsr not yet
    applied) answers its waiting producers NOT_LEADER_OR_FOLLOWER, so they retry with the new
    leader at once instead of waiting for the server to stop."""

    async def scenario():
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None)
        partitions.start()
        state = PartitionState(leader=1, leader_epoch=0, isr=(1, 2), partition_epoch=0, replicas=(1, 2))
        partitions.leader_and_isr("held", 0, state)
        request = broker_pb2.ProduceRequest(acks=-1, timeout_ms=30_000)
        request.topics.add(topic="held").partitions.add(partition=0, records=encode_batch([(None, b"v")]))
        answer = asyncio.ensure_future(handle_produce(partitions, request))
        await asyncio.sleep(0.05)
        assert not answer.done(), "acks=all waits for broker 2, which never fetches here"
        await partitions.close()
        return await asyncio.wait_for(answer, 1)

    response = asyncio.run(scenario())
    assert response.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
