"""The ISR: who may join, who must leave, and the high watermark over it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.invariant import InvariantViolation
from replog.core.isr import (
    ISR_TRANSITIONS,
    CommittedIsr,
    FollowerProgress,
    IsrEvent,
    PendingExpand,
    PendingShrink,
    Proposal,
    can_join_isr,
    high_watermark_candidate,
    transition,
)
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse, FetchRequest, IsrMember

from .harness import Node, partition_state, produce

LAG_MS = 1_000


def leader_node(isr=(1, 2, 3)) -> Node:
    node = Node(1, ReplicaConfig(replica_lag_time_ms_max=LAG_MS, alter_partition_retry_ms=300))
    node.replica.handle_leader_and_isr(partition_state(leader=1, isr=isr), 0)
    node.apply()
    return node


def fetch(node: Node, replica: int, offset: int, now_ms: int, broker_epoch: int = 1, epoch: int = -1):
    request = FetchRequest(replica, offset, 1_000, last_fetched_epoch=epoch, replica_epoch=broker_epoch)
    plan = node.replica.handle_fetch(request, now_ms)
    node.apply(now_ms)
    return plan


def write(node: Node, count: int, now_ms: int = 0) -> None:
    for i in range(count):
        node.replica.handle_produce(produce(f"w{now_ms}-{i}", acks=1), now_ms)
    node.apply(now_ms)


# ---- the pure rules ---------------------------------------------------------


def test_high_watermark_is_the_smallest_log_end_offset_over_the_isr():
    progress = {2: FollowerProgress(log_end_offset=7), 3: FollowerProgress(log_end_offset=4)}
    assert high_watermark_candidate(10, (1, 2, 3), progress) == 4
    assert high_watermark_candidate(10, (1, 2), progress) == 7
    assert high_watermark_candidate(3, (1, 2), progress) == 3


def test_unknown_follower_offsets_hold_the_high_watermark():
    # After a leader change the leader does not know where its ISR followers are.
    assert high_watermark_candidate(10, (1, 2), {2: FollowerProgress()}) == -1


@pytest.mark.parametrize(
    ("follower_leo", "high_watermark", "epoch_start", "joins"),
    [(5, 5, 3, True), (4, 5, 3, False), (5, 5, 6, False), (9, 5, 9, True)],
)
def test_a_follower_joins_with_everything_committed_and_the_previous_epochs(
    follower_leo, high_watermark, epoch_start, joins
):
    assert can_join_isr(follower_leo, high_watermark, epoch_start) is joins


def test_caught_up_means_at_the_leaders_end_or_recently_so():
    follower = FollowerProgress()
    follower.record_fetch(10, leader_log_end_offset=10, now_ms=100, broker_epoch=1)
    assert follower.is_caught_up(12, now_ms=100 + LAG_MS, replica_lag_time_ms_max=LAG_MS)
    assert not follower.is_caught_up(12, now_ms=101 + LAG_MS, replica_lag_time_ms_max=LAG_MS)
    assert follower.is_caught_up(10, now_ms=10_000, replica_lag_time_ms_max=LAG_MS)


def test_asking_for_what_the_leader_had_at_the_previous_fetch_counts_as_caught_up_then():
    follower = FollowerProgress()
    follower.record_fetch(5, leader_log_end_offset=8, now_ms=100, broker_epoch=1)
    follower.record_fetch(8, leader_log_end_offset=12, now_ms=900, broker_epoch=1)
    assert follower.last_caught_up_time_ms == 100


def test_every_isr_transition_is_in_the_table():
    proposal = Proposal(1, AlterPartitionRequest(1, 1, 0, (IsrMember(1, -1),)), 0)
    committed = CommittedIsr((1, 2))
    expanding = PendingExpand((1, 2), 3, proposal)
    shrinking = PendingShrink((1, 2), (2,), proposal)
    assert transition(committed, IsrEvent.PROPOSE_EXPAND, expanding) is expanding
    assert transition(shrinking, IsrEvent.REJECTED, committed) is committed
    with pytest.raises(InvariantViolation):
        transition(expanding, IsrEvent.PROPOSE_SHRINK, shrinking)  # one change at a time
    with pytest.raises(InvariantViolation):
        transition(committed, IsrEvent.ACCEPTED, committed)  # nothing was proposed
    assert len(ISR_TRANSITIONS) == 9


def test_maximal_isr_counts_the_joining_and_the_leaving():
    proposal = Proposal(1, AlterPartitionRequest(1, 1, 0, ()), 0)
    assert PendingExpand((1, 2), 3, proposal).maximal_isr == (1, 2, 3)
    assert PendingExpand((1, 2), 3, proposal).isr == (1, 2)
    assert PendingShrink((1, 2), (2,), proposal).maximal_isr == (1, 2)


# ---- the leader applying them -----------------------------------------------


def test_caught_up_follower_is_proposed_for_the_isr_and_counts_while_pending():
    node = leader_node(isr=(1, 2))
    write(node, 3)
    fetch(node, 2, 3, now_ms=10)
    assert node.replica.high_watermark == 3
    fetch(node, 3, 2, now_ms=10)  # behind the HW: not yet
    assert node.proposals == []
    fetch(node, 3, 3, now_ms=20, broker_epoch=7)
    proposal = node.proposals.pop()
    assert proposal.request.isr == (1, 2, 3)
    assert proposal.request.new_isr[-1] == IsrMember(3, 7)  # KIP-903: the incarnation seen fetching
    assert isinstance(node.replica.leadership.isr_state, PendingExpand)
    write(node, 1, now_ms=30)
    fetch(node, 2, 4, now_ms=30)
    assert node.replica.high_watermark == 3  # follower 3 is counted although not yet in the ISR
    answer = AlterPartitionResponse(ErrorCode.NONE, partition_state(leader=1, isr=(1, 2, 3), partition_epoch=1))
    node.replica.handle_alter_partition_response(proposal.proposal_id, answer, 40)
    assert node.replica.isr == (1, 2, 3)
    assert node.replica.partition_epoch == 1


def test_follower_behind_the_current_epoch_start_does_not_join():
    node = Node(1, ReplicaConfig())
    node.replica.handle_leader_and_isr(partition_state(leader=1, isr=(1,)), 0)
    write(node, 4)
    node.replica.handle_leader_and_isr(partition_state(leader=1, leader_epoch=2, isr=(1,)), 1)
    node.apply(1)
    assert node.replica.leadership.epoch_start_offset == 4
    fetch(node, 2, 3, now_ms=2)  # has everything committed but not all of epoch 1
    assert node.proposals == []
    fetch(node, 2, 4, now_ms=3)
    assert node.proposals[-1].request.isr == (1, 2)


def test_lagging_follower_is_proposed_out_and_counts_until_the_controller_agrees():
    node = leader_node(isr=(1, 2, 3))
    write(node, 2)
    fetch(node, 2, 2, now_ms=100)
    fetch(node, 3, 1, now_ms=100)
    node.replica.tick(LAG_MS)
    node.apply(LAG_MS)
    assert node.proposals == []  # follower 3 counts as caught up when the epoch began, t=0
    fetch(node, 2, 2, now_ms=LAG_MS + 1)
    node.replica.tick(LAG_MS + 1)
    node.apply(LAG_MS + 1)
    proposal = node.proposals.pop()
    assert proposal.request.isr == (1, 2)
    assert node.replica.maximal_isr == (1, 2, 3)
    assert node.replica.high_watermark == 1  # still held by follower 3
    answer = AlterPartitionResponse(ErrorCode.NONE, partition_state(leader=1, isr=(1, 2), partition_epoch=1))
    node.replica.handle_alter_partition_response(proposal.proposal_id, answer, LAG_MS + 2)
    assert node.replica.high_watermark == 2


def test_followers_get_their_lag_time_from_the_leaders_first_tick_when_becoming_leader_held_the_broker():
    # One LeaderAndIsr opening a thousand partitions kept the broker from its loop for longer than
    # the lag time: nobody could fetch yet, so nobody is out of sync yet.
    node = leader_node(isr=(1, 2, 3))
    first_tick_ms = 3 * LAG_MS
    node.replica.tick(first_tick_ms)
    node.apply(first_tick_ms)
    assert node.proposals == []
    fetch(node, 2, 0, now_ms=first_tick_ms + 10)
    node.replica.tick(first_tick_ms + LAG_MS)
    node.apply(first_tick_ms + LAG_MS)
    assert node.proposals == []
    node.replica.tick(first_tick_ms + LAG_MS + 1)
    node.apply(first_tick_ms + LAG_MS + 1)
    assert node.proposals.pop().request.isr == (1, 2), "a follower that never fetches still leaves"


@pytest.mark.parametrize(
    "error", [ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.INELIGIBLE_REPLICA]
)
def test_rejected_proposal_returns_to_the_committed_isr_and_waits_before_the_next(error):
    node = leader_node(isr=(1, 2))
    fetch(node, 3, 0, now_ms=10)
    proposal = node.proposals.pop()
    node.replica.handle_alter_partition_response(proposal.proposal_id, AlterPartitionResponse(error), 20)
    assert isinstance(node.replica.leadership.isr_state, CommittedIsr)
    assert node.replica.maximal_isr == (1, 2)
    fetch(node, 3, 0, now_ms=100)
    assert node.proposals == []  # too soon after the rejection
    fetch(node, 3, 0, now_ms=320)
    assert node.proposals[-1].request.isr == (1, 2, 3)


def test_unanswered_proposal_is_sent_again_with_the_same_id():
    node = leader_node(isr=(1, 2))
    fetch(node, 3, 0, now_ms=10)
    first = node.proposals.pop()
    node.replica.tick(309)
    node.apply(309)
    assert node.proposals == []
    node.replica.tick(310)
    node.apply(310)
    assert node.proposals.pop() == first


def test_stale_or_duplicated_answers_change_nothing():
    node = leader_node(isr=(1, 2))
    fetch(node, 3, 0, now_ms=10)
    proposal = node.proposals.pop()
    answer = AlterPartitionResponse(ErrorCode.NONE, partition_state(leader=1, isr=(1, 2, 3), partition_epoch=1))
    node.replica.handle_alter_partition_response(proposal.proposal_id + 100, answer, 20)
    assert isinstance(node.replica.leadership.isr_state, PendingExpand)
    node.replica.handle_alter_partition_response(proposal.proposal_id, answer, 20)
    node.replica.handle_alter_partition_response(proposal.proposal_id, answer, 21)
    assert node.replica.isr == (1, 2, 3) and node.replica.partition_epoch == 1


def test_leader_and_isr_with_a_newer_partition_epoch_settles_a_pending_change():
    node = leader_node(isr=(1, 2))
    fetch(node, 3, 0, now_ms=10)
    node.replica.handle_leader_and_isr(partition_state(leader=1, isr=(1,), partition_epoch=4), 20)
    assert isinstance(node.replica.leadership.isr_state, CommittedIsr)
    assert node.replica.isr == (1,)


def test_fetch_from_an_earlier_incarnation_of_the_follower_is_not_believed():
    # KIP-903: a fetch sent before the follower crashed arrives after its restart.
    node = leader_node(isr=(1, 2, 3))
    write(node, 5)
    fetch(node, 2, 1, now_ms=10, broker_epoch=8)
    fetch(node, 2, 5, now_ms=11, broker_epoch=7)
    assert node.replica.leadership.follower_log_end_offset(2) == 1


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["write", "fetch2", "fetch3", "tick"]), st.integers(0, 6)), max_size=40))
def test_high_watermark_never_decreases_and_never_passes_an_isr_member(steps):
    node = leader_node(isr=(1, 2, 3))
    now_ms, previous = 0, 0
    reported = {2: 0, 3: 0}
    for kind, amount in steps:
        now_ms += 100
        if kind == "write":
            write(node, amount + 1, now_ms)
        elif kind == "tick":
            node.replica.tick(now_ms)
            node.apply(now_ms)
        else:
            replica = int(kind[-1])
            # Any offset it could ask for, also a stale one delivered late.
            offset = min(amount * 2, node.replica.log_end_offset)
            fetch(node, replica, offset, now_ms)
            reported[replica] = max(reported[replica], offset)
        high_watermark = node.replica.high_watermark
        assert high_watermark >= previous
        assert high_watermark <= node.replica.log_end_offset
        for replica in node.replica.maximal_isr:
            if replica != 1:
                assert high_watermark <= max(reported[replica], previous)
        previous = high_watermark
