"""The consumer's group member on its loop, against a scripted coordinator: heartbeats carried out on the
fetch assignment, positions from committed offsets, and commits (stale ones again after the next
heartbeat, refused ones failing clearly, automatic ones never going back)."""

import asyncio

import pytest

from replog.api.coordinator.v1 import coordinator_pb2
from replog.client.configs import ConsumerConfig
from replog.client.errors import CommitFailedError
from replog.client.fetch_buffer import FetchBuffer
from replog.client.fetch_state import Assignment, State
from replog.client.group_member import GroupMember
from replog.client.membership import Assign, Lose, Membership, PendingCallbacks, Subscription
from replog.client.types import OffsetAndMetadata
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class ScriptedCoordinator:
    """Answers heartbeats with the next epoch and `assignment`; commits from `commit_answers` in turn."""

    def __init__(self, assignment=(T0, T1), commit_answers=()):
        self.assignment = assignment
        self.epoch = 0
        self.heartbeats = []
        self.commits = []
        self.commit_answers = list(commit_answers)
        self.committed = {T0: OffsetAndMetadata(7, "", 1)}

    async def call(self, group_id, method, request, codes, timeout_s):
        assert method == "ConsumerGroupHeartbeat"
        self.heartbeats.append(request)
        self.epoch += 1
        response = coordinator_pb2.ConsumerGroupHeartbeatResponse(
            error_code=int(ErrorCode.NONE), member_id=request.member_id, member_epoch=self.epoch,
            heartbeat_interval_ms=60_000)
        response.assignment.topics.add(topic="t", partitions=[tp.partition for tp in self.assignment])
        return response, (1, "127.0.0.1:1")

    async def commit_offsets(self, group_id, member_id, member_epoch, offsets, timeout_s):
        self.commits.append((member_epoch, dict(offsets)))
        await asyncio.sleep(0.01)
        code = self.commit_answers.pop(0) if self.commit_answers else ErrorCode.NONE
        return {tp: (code, code.name) for tp in offsets}

    async def committed_offsets(self, group_id, partitions, timeout_s):
        return {tp: self.committed.get(tp) for tp in partitions}


class NoFetcher:
    def follow(self, topics):
        pass

    def wakeup(self):
        pass


def run_member(coordinator, scenario, **configs):
    config = ConsumerConfig(group_id="g", enable_auto_commit=False, **configs)
    buffer = FetchBuffer(Assignment("earliest", use_committed=True))
    membership = Membership(instance_id=None, rebalance_timeout_ms=1_000, server_assignor=None,
                            new_member_id=lambda: "m-1")
    callbacks = PendingCallbacks()
    member = GroupMember(config, buffer, NoFetcher(), coordinator, membership, callbacks)

    async def main():
        loop_task = asyncio.get_running_loop().create_task(member.run())
        try:
            return await asyncio.wait_for(scenario(member, buffer, callbacks), 5)
        finally:
            member.stop()
            await loop_task

    return asyncio.run(main())


async def joined(member, buffer):
    member.subscribe(Subscription(topics=("t",)))
    while buffer.assignment.partitions.get(T0) is None or buffer.assignment.get(T0).state is State.AWAIT_COMMITTED:
        await asyncio.sleep(0.005)


def test_an_assignment_becomes_partitions_that_start_at_the_committed_offset_or_reset():
    async def scenario(member, buffer, callbacks):
        await joined(member, buffer)
        while buffer.assignment.get(T1).state is State.AWAIT_COMMITTED:
            await asyncio.sleep(0.005)
        return buffer.assignment.get(T0), buffer.assignment.get(T1), callbacks.pop()

    t0, t1, change = run_member(ScriptedCoordinator(), scenario)
    assert (t0.state, t0.position, t0.last_epoch) == (State.FETCHING, 7, 1)
    assert t1.state is State.AWAIT_RESET  # nothing committed: auto_offset_reset
    assert change == Assign(frozenset({T0, T1}))


def test_a_stale_commit_is_sent_again_after_the_next_heartbeat_with_the_new_epoch():
    coordinator = ScriptedCoordinator(commit_answers=[ErrorCode.STALE_MEMBER_EPOCH])

    async def scenario(member, buffer, _callbacks):
        await joined(member, buffer)
        return await member.commit({T0: OffsetAndMetadata(9)}, 2)

    assert run_member(coordinator, scenario) == {T0: OffsetAndMetadata(9)}
    (stale_epoch, _), (retried_epoch, offsets) = coordinator.commits
    assert retried_epoch > stale_epoch and offsets == {T0: OffsetAndMetadata(9)}


@pytest.mark.parametrize("error", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH])
def test_a_commit_by_a_member_the_group_no_longer_knows_fails_clearly(error):
    async def scenario(member, buffer, _callbacks):
        await joined(member, buffer)
        await member.commit({T0: OffsetAndMetadata(9)}, 2)

    with pytest.raises(CommitFailedError, match=f"may not commit .*{error.name}") as failed:
        run_member(ScriptedCoordinator(commit_answers=[error]), scenario)
    assert failed.value.error_code is error


def test_commits_leave_in_order_one_at_a_time():
    coordinator = ScriptedCoordinator()

    async def scenario(member, buffer, _callbacks):
        await joined(member, buffer)
        await asyncio.gather(*(member.commit({T0: OffsetAndMetadata(offset)}, 2) for offset in (10, 11, 12)))

    run_member(coordinator, scenario)
    assert [offsets[T0].offset for _, offsets in coordinator.commits] == [10, 11, 12]


def test_automatic_commits_keep_to_owned_partitions_and_never_go_back():
    coordinator = ScriptedCoordinator()

    async def scenario(member, buffer, _callbacks):
        await joined(member, buffer)
        await member.commit({T0: OffsetAndMetadata(20)}, 2)
        elsewhere = TopicPartition("t", 5)
        return await member.commit({T0: OffsetAndMetadata(15), elsewhere: OffsetAndMetadata(3)}, 2, automatic=True)

    assert run_member(coordinator, scenario) == {}
    assert len(coordinator.commits) == 1


def test_a_consumer_that_does_not_poll_within_max_poll_interval_leaves_and_its_partitions_are_lost():
    coordinator = ScriptedCoordinator()

    async def scenario(member, buffer, callbacks):
        await joined(member, buffer)
        told = [callbacks.pop()]  # as the last poll() did
        while not any(r.member_epoch == -1 for r in coordinator.heartbeats):
            await asyncio.sleep(0.01)
        return told + [callbacks.pop()], dict(buffer.assignment.partitions)

    changes, partitions = run_member(coordinator, scenario, max_poll_interval_ms=200)
    assert changes == [Assign(frozenset({T0, T1})), Lose(frozenset({T0, T1}))]
    assert partitions == {}
