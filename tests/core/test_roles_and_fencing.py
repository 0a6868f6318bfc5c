"""Roles as a table, LeaderAndIsr fenced by leader epoch, requests fenced by KIP-320 epochs."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.invariant import InvariantViolation
from replog.core.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchRequest
from replog.core.replica import ROLE_TRANSITIONS, SERVES, Change, Input, Role, check_leader_epoch

from .harness import Node, catch_up, partition_state, produce


def node_in(role: Role, leader_epoch: int = 3) -> Node:
    node = Node(1)
    if role is Role.LEADER:
        node.replica.handle_leader_and_isr(partition_state(leader=1, leader_epoch=leader_epoch), 0)
    elif role is Role.FOLLOWER:
        node.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=leader_epoch), 0)
    node.apply()
    return node


CHANGES = {
    Change.BECOME_LEADER: lambda: partition_state(leader=1, leader_epoch=4),
    Change.BECOME_FOLLOWER: lambda: partition_state(leader=2, leader_epoch=4),
    Change.UPDATE_ISR: lambda: partition_state(leader=None, leader_epoch=3, isr=(1, 2), partition_epoch=1),
}


@pytest.mark.parametrize(("role", "change"), sorted(ROLE_TRANSITIONS, key=str))
def test_each_row_of_the_role_table_is_what_the_replica_does(role, change):
    node = node_in(role)
    if change is Change.STOP:
        node.replica.stop(1)
    else:
        state = CHANGES[change]()
        if change is Change.UPDATE_ISR:
            state = partition_state(leader=node.replica.leader_id, leader_epoch=3, isr=(1, 2), partition_epoch=1)
        assert node.replica.handle_leader_and_isr(state, 1) == ErrorCode.NONE
    assert node.replica.role is ROLE_TRANSITIONS[(role, change)]


def test_an_offline_replica_serves_nothing_and_a_follower_serves_no_client():
    assert SERVES[Role.OFFLINE] == frozenset()
    assert Input.PRODUCE not in SERVES[Role.FOLLOWER] and Input.FETCH not in SERVES[Role.FOLLOWER]
    offline = Node(1)
    offline.replica.handle_produce(produce("a"), 0)
    assert offline.apply().completions[0].error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_leader_and_isr_with_an_older_leader_epoch_is_refused():
    node = node_in(Role.LEADER, leader_epoch=5)
    assert node.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=4), 1) == (
        ErrorCode.FENCED_LEADER_EPOCH
    )
    assert node.replica.role is Role.LEADER and node.replica.leader_epoch == 5


def test_repeated_leader_and_isr_changes_nothing():
    node = node_in(Role.FOLLOWER)
    node.take_fetch()
    assert node.replica.handle_leader_and_isr(partition_state(leader=2, leader_epoch=3), 1) == ErrorCode.NONE
    assert node.apply(1).messages == ()  # no second fetch: it is the same leadership


def test_leader_and_isr_for_a_partition_not_assigned_here_is_refused():
    node = Node(9)
    assert node.replica.handle_leader_and_isr(partition_state(leader=1), 0) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_restarted_replica_refuses_epochs_older_than_its_log():
    node = node_in(Role.LEADER, leader_epoch=6)
    node.replica.handle_produce(produce("a", acks=1), 0)
    node.apply()
    node.restart()
    assert node.replica.handle_leader_and_isr(partition_state(leader=1, leader_epoch=5), 1) == (
        ErrorCode.FENCED_LEADER_EPOCH
    )


@pytest.mark.parametrize(
    ("requested", "error"),
    [
        (-1, ErrorCode.NONE),
        (3, ErrorCode.NONE),
        (2, ErrorCode.FENCED_LEADER_EPOCH),
        (4, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_produce_and_fetch_are_fenced_by_the_leader_epoch(requested, error):
    assert check_leader_epoch(requested, 3) == error
    node = node_in(Role.LEADER, leader_epoch=3)
    node.replica.handle_produce(produce("a", acks=1, epoch=requested), 0)
    assert node.apply().completions[0].error == error
    plan = node.replica.handle_fetch(FetchRequest(-1, 0, 100, current_leader_epoch=requested), 0)
    assert plan.error == error


def test_a_follower_answers_epoch_errors_before_not_leader():
    # A client ahead of this broker learns to wait, one behind learns to refresh.
    node = node_in(Role.FOLLOWER, leader_epoch=3)
    assert node.replica.handle_fetch(FetchRequest(-1, 0, 100, current_leader_epoch=4), 0).error == (
        ErrorCode.UNKNOWN_LEADER_EPOCH
    )
    assert node.replica.handle_fetch(FetchRequest(-1, 0, 100, current_leader_epoch=3), 0).error == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )


def test_offsets_for_leader_epoch_is_answered_by_the_leader_only():
    leader = node_in(Role.LEADER, leader_epoch=3)
    leader.replica.handle_produce(produce("a", b"x", b"y", acks=1), 0)
    leader.apply()
    error, answer = leader.replica.handle_offsets_for_leader_epoch(3, 3)
    assert error == ErrorCode.NONE and (answer.epoch, answer.end_offset) == (3, 2)
    follower = node_in(Role.FOLLOWER)
    assert follower.replica.handle_offsets_for_leader_epoch(3, 3)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_list_offsets_is_answered_by_the_leader_under_epoch_fencing():
    leader = node_in(Role.LEADER, leader_epoch=3)
    assert leader.replica.handle_list_offsets(3, LATEST_TIMESTAMP).error == ErrorCode.NONE
    assert leader.replica.handle_list_offsets(-1, LATEST_TIMESTAMP).error == ErrorCode.NONE
    assert leader.replica.handle_list_offsets(2, LATEST_TIMESTAMP).error == ErrorCode.FENCED_LEADER_EPOCH
    assert leader.replica.handle_list_offsets(4, LATEST_TIMESTAMP).error == ErrorCode.UNKNOWN_LEADER_EPOCH
    follower = node_in(Role.FOLLOWER)
    assert follower.replica.handle_list_offsets(3, LATEST_TIMESTAMP).error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_list_offsets_answers_only_offsets_below_the_high_watermark():
    leader = node_in(Role.LEADER, leader_epoch=3)
    leader.replica.handle_produce(produce("a", b"x", b"y", acks=1), 0)
    leader.apply()
    # Two records appended, none committed yet (the followers have not fetched).
    assert leader.replica.handle_list_offsets(3, EARLIEST_TIMESTAMP).offset == 0
    assert leader.replica.handle_list_offsets(3, LATEST_TIMESTAMP).offset == leader.replica.high_watermark == 0
    found_uncommitted = leader.replica.handle_list_offsets(3, 1_000, found=(1, 1_000))
    assert (found_uncommitted.error, found_uncommitted.offset) == (ErrorCode.NONE, -1)
    for broker in (2, 3):
        follower = Node(broker)
        follower.replica.handle_leader_and_isr(partition_state(leader=1, leader_epoch=3), 0)
        catch_up(follower, leader)
    found = leader.replica.handle_list_offsets(3, 1_000, found=(1, 1_000))
    assert (found.offset, found.timestamp_ms, found.leader_epoch) == (1, 1_000, 3)


def test_consumers_read_only_below_the_high_watermark():
    leader = node_in(Role.LEADER)
    leader.replica.handle_produce(produce("a", b"x", b"y", acks=1), 0)
    leader.apply()
    plan = leader.replica.handle_fetch(FetchRequest(-1, 0, 100), 0)
    assert plan.error == ErrorCode.NONE and not plan.has_data and plan.high_watermark == 0
    follower_plan = leader.replica.handle_fetch(FetchRequest(2, 0, 100), 0)
    assert (follower_plan.read_offset, follower_plan.max_offset) == (0, 2)


@pytest.mark.parametrize("offset", [-1, 3])
def test_fetch_outside_the_log_is_out_of_range(offset):
    leader = node_in(Role.LEADER)
    leader.replica.handle_produce(produce("a", b"x", b"y", acks=1), 0)
    leader.apply()
    assert leader.replica.handle_fetch(FetchRequest(-1, offset, 100), 0).error == ErrorCode.OFFSET_OUT_OF_RANGE


def test_time_may_not_go_backwards():
    node = node_in(Role.LEADER)
    node.replica.tick(10)
    with pytest.raises(InvariantViolation):
        node.replica.tick(9)


@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3, -1]), st.integers(0, 6), st.integers(0, 3), st.booleans()),
        max_size=30,
    )
)
def test_leader_and_isr_in_any_order_never_moves_the_epoch_back(changes):
    node = Node(1)
    now_ms = 0
    for leader, leader_epoch, partition_epoch, stop in changes:
        now_ms += 1
        before = (node.replica.leader_epoch, node.replica.partition_epoch, node.replica.role)
        if stop:
            node.replica.stop(now_ms)
            node.apply(now_ms)
            assert node.replica.role is Role.OFFLINE
            continue
        isr = (1, 2, 3) if leader == -1 else tuple(sorted({leader, 2, 3}))
        state = partition_state(leader=leader, leader_epoch=leader_epoch, isr=isr, partition_epoch=partition_epoch)
        if before[0] == leader_epoch and before[2] is not Role.OFFLINE and leader != node.replica.leader_id:
            continue  # one leader per epoch: the controller never sends this
        error = node.replica.handle_leader_and_isr(state, now_ms)
        node.apply(now_ms)
        if leader_epoch < before[0]:
            assert error == ErrorCode.FENCED_LEADER_EPOCH
            assert (node.replica.leader_epoch, node.replica.partition_epoch, node.replica.role) == before
        else:
            assert error == ErrorCode.NONE
            assert node.replica.leader_epoch == leader_epoch
            assert node.replica.role is (Role.LEADER if leader == 1 else Role.FOLLOWER)
