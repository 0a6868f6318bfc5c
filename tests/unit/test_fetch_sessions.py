"""Fetch sessions (KIP-227) on a leader's real partitions: a follower is told only what changed.

A leader (broker 1) hosts partitions of one topic with broker 2 as follower; the
tests fetch as broker 2 through the broker's own fetch handler, over real logs.
The sessions' rules themselves, in logical time, are tests/core/test_fetch_session.py's.
"""

import asyncio

from replog.api.broker.v1 import broker_pb2
from replog.broker.fetch import handle_fetch, new_fetch_sessions
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.produce import handle_produce
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.protocol import encode_batch, iter_records
from replog.storage import LogConfig

TOPIC = "sessions"
PARTITIONS = 3
FOLLOWER = 2
WAIT_MS = 50


class Leader:
    """Broker 1, leading every partition of TOPIC with broker 2 in the ISR."""

    def __init__(self, tmp_path, lag_time_ms_max: int = 30_000) -> None:
        settings = TopicSettings(LogConfig(), ReplicaConfig(replica_lag_time_ms_max=lag_time_ms_max))
        self.proposals = []  # the ISR changes the leader proposed: (partition, new ISR)
        self.partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None,
                                     lambda driver, proposal: self.proposals.append((driver.partition, proposal.request.isr)))
        self.sessions = new_fetch_sessions()
        self.offsets = {p: 0 for p in range(PARTITIONS)}  # the follower's fetch offsets

    def start(self) -> None:
        self.partitions.start()
        for partition in range(PARTITIONS):
            state = PartitionState(leader=1, leader_epoch=0, isr=(1, FOLLOWER), partition_epoch=0, replicas=(1, FOLLOWER))
            assert self.partitions.leader_and_isr(TOPIC, partition, state) == ErrorCode.NONE

    async def produce(self, partition: int, value: bytes) -> None:
        request = broker_pb2.ProduceRequest(acks=1, timeout_ms=1_000)
        request.topics.add(topic=TOPIC).partitions.add(partition=partition, records=encode_batch([(None, value)]))
        response = await handle_produce(self.partitions, request)
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE

    async def fetch(self, session_id: int, epoch: int, named=(), forgotten=(), replica_id=FOLLOWER):
        """Fetch as the follower, naming `named` partitions at its current offsets."""
        request = broker_pb2.FetchRequest(replica_id=replica_id, replica_epoch=1, max_wait_ms=WAIT_MS, min_bytes=1,
                                          max_bytes=1 << 20, session_id=session_id, session_epoch=epoch)
        if named:
            topic = request.topics.add(topic=TOPIC)
            for partition in named:
                topic.partitions.add(partition=partition, fetch_offset=self.offsets[partition],
                                     current_leader_epoch=0, last_fetched_epoch=-1, partition_max_bytes=1 << 20)
        if forgotten:
            request.forgotten_topics.add(topic=TOPIC, partitions=list(forgotten))
        return await handle_fetch(self.partitions, self.sessions, request)

    def take(self, response) -> dict[int, list[bytes]]:
        """The records answered, by partition; the follower's offsets move past them."""
        answered = {}
        for topic in response.topics:
            for result in topic.partitions:
                values = [record.value for record in iter_records(result.records)]
                self.offsets[result.partition] += len(values)
                answered[result.partition] = values
        return answered


def run(tmp_path, scenario, **leader_options) -> None:
    async def main():
        leader = Leader(tmp_path, **leader_options)
        leader.start()
        try:
            await scenario(leader)
        finally:
            await leader.partitions.close()

    asyncio.run(main())


def test_after_the_full_fetch_a_follower_is_answered_only_the_partitions_that_changed(tmp_path):
    async def scenario(leader):
        opened = await leader.fetch(0, 0, named=range(PARTITIONS))
        assert opened.session_id != 0
        assert leader.take(opened) == {p: [] for p in range(PARTITIONS)}  # a full answer lists every partition

        quiet = await leader.fetch(opened.session_id, 1)
        assert leader.take(quiet) == {}

        await leader.produce(1, b"one")
        changed = await leader.fetch(opened.session_id, 2)
        assert leader.take(changed) == {1: [b"one"]}

        # The follower names the partition it moved on; the leader's HW moves with it, and the
        # follower is told the new HW once the long poll ends, without the other partitions.
        moved = await leader.fetch(opened.session_id, 3, named=[1])
        assert [(r.partition, r.high_watermark) for r in moved.topics[0].partitions] == [(1, 1)]

    run(tmp_path, scenario)


def test_a_forgotten_partition_is_no_longer_answered(tmp_path):
    async def scenario(leader):
        opened = await leader.fetch(0, 0, named=range(PARTITIONS))
        await leader.produce(0, b"zero")
        answer = await leader.fetch(opened.session_id, 1, forgotten=[0])
        assert leader.take(answer) == {}
        answer = await leader.fetch(opened.session_id, 2, named=[0])
        assert leader.take(answer) == {0: [b"zero"]}

    run(tmp_path, scenario)


def test_a_wrong_epoch_or_an_unknown_session_fails_the_whole_fetch(tmp_path):
    async def scenario(leader):
        opened = await leader.fetch(0, 0, named=range(PARTITIONS))
        wrong_epoch = await leader.fetch(opened.session_id, 5)
        assert wrong_epoch.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        assert "start over" in wrong_epoch.error_message and not wrong_epoch.topics
        unknown = await leader.fetch(opened.session_id + 1, 1)
        assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

        # A follower that starts over replaces its own session.
        again = await leader.fetch(0, 0, named=range(PARTITIONS))
        assert again.session_id != opened.session_id
        assert (await leader.fetch(opened.session_id, 1)).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        assert len(leader.sessions) == 1

    run(tmp_path, scenario)


def test_a_consumer_gets_full_answers_and_no_session(tmp_path):
    async def scenario(leader):
        answer = await leader.fetch(0, 0, named=range(PARTITIONS), replica_id=-1)
        assert answer.session_id == 0
        assert sorted(r.partition for r in answer.topics[0].partitions) == list(range(PARTITIONS))
        assert len(leader.sessions) == 0

    run(tmp_path, scenario)
