"""The controller's pure rules: elections from the ISR, and AlterPartition validation."""

import pytest

from replog.core.election import (
    alter_partition,
    elect_leader,
    elect_preferred_leader,
    elect_unclean_leader,
    ineligible_isr_members,
    initial_state,
    move_to_replicas,
    on_broker_failure,
    on_broker_startup,
    on_controlled_shutdown,
    preferred_elections_due,
    with_replicas,
)
from replog.core.errors import ErrorCode
from replog.core.messages import NO_LEADER, AlterPartitionRequest, IsrMember, PartitionState

STATE = PartitionState(leader=1, leader_epoch=4, isr=(1, 2, 3), partition_epoch=9, replicas=(1, 2, 3))


def request(isr, *, leader=1, leader_epoch=4, partition_epoch=9, epochs=None) -> AlterPartitionRequest:
    epochs = epochs or {}
    return AlterPartitionRequest(
        leader, leader_epoch, partition_epoch, tuple(IsrMember(b, epochs.get(b, -1)) for b in isr)
    )


def test_a_new_partition_is_led_by_its_first_replica_with_all_in_sync():
    assert initial_state((3, 1, 2)) == PartitionState(3, 0, (3, 1, 2), 0, (3, 1, 2))


def test_leader_failure_elects_the_first_live_isr_member_and_bumps_both_epochs():
    election = on_broker_failure(STATE, 1, live_brokers={2, 3}, unclean_leader_election_enable=False)
    assert election.state == PartitionState(2, 5, (2, 3), 10, (1, 2, 3))
    assert not election.unclean


def test_follower_failure_only_shrinks_the_isr():
    election = on_broker_failure(STATE, 3, live_brokers={1, 2}, unclean_leader_election_enable=False)
    assert election.state == PartitionState(1, 4, (1, 2), 10, (1, 2, 3))


def test_the_last_isr_member_stays_when_it_fails_and_the_partition_waits_for_it():
    lone = PartitionState(1, 4, (1,), 9, (1, 2, 3))
    election = on_broker_failure(lone, 1, live_brokers={2, 3}, unclean_leader_election_enable=False)
    assert election.state == PartitionState(NO_LEADER, 5, (1,), 10, (1, 2, 3))
    back = on_broker_startup(election.state, live_brokers={1, 2, 3}, unclean_leader_election_enable=False)
    assert back.state == PartitionState(1, 6, (1,), 11, (1, 2, 3))


def test_unclean_election_takes_any_live_replica_and_says_so():
    lone = PartitionState(1, 4, (1,), 9, (1, 2, 3))
    election = on_broker_failure(lone, 1, live_brokers={3}, unclean_leader_election_enable=True)
    assert election.state == PartitionState(3, 5, (3,), 10, (1, 2, 3))
    assert election.unclean


def test_startup_of_a_broker_changes_nothing_while_there_is_a_leader():
    assert on_broker_startup(STATE, {1, 2, 3}, unclean_leader_election_enable=True).state is STATE


def test_controlled_shutdown_hands_leadership_to_a_live_isr_member_at_once():
    moved = on_controlled_shutdown(STATE, 1, live_brokers={1, 3})
    assert moved.state == PartitionState(3, 5, (2, 3), 10, (1, 2, 3))  # 2 is not live
    follower = on_controlled_shutdown(STATE, 2, live_brokers={1, 2, 3})
    assert follower.state == PartitionState(1, 4, (1, 3), 10, (1, 2, 3))
    lone = PartitionState(1, 4, (1,), 9, (1, 2, 3))
    assert on_controlled_shutdown(lone, 1, live_brokers={1, 2, 3}).state is lone


def test_election_prefers_replica_order_among_live_isr_members():
    state = PartitionState(NO_LEADER, 7, (3, 2), 1, (1, 2, 3))
    assert elect_leader(state, {1, 2, 3}, unclean_leader_election_enable=False).state.leader == 2


def test_alter_partition_applies_a_valid_shrink_with_a_new_partition_epoch():
    error, state = alter_partition(STATE, request((1, 2)), {1: 1, 2: 1, 3: 1})
    assert error == ErrorCode.NONE and state == PartitionState(1, 4, (1, 2), 10, (1, 2, 3))


@pytest.mark.parametrize(
    ("proposal", "error"),
    [
        (request((1, 2), leader_epoch=3), ErrorCode.FENCED_LEADER_EPOCH),
        (request((1, 2), leader_epoch=5), ErrorCode.UNKNOWN_LEADER_EPOCH),
        (request((1, 2), partition_epoch=8), ErrorCode.INVALID_UPDATE_VERSION),
        (request((2, 3)), ErrorCode.INVALID_REQUEST),  # the leader left out
        (request((1, 4)), ErrorCode.INVALID_REQUEST),  # not a replica
        (request((1, 1)), ErrorCode.INVALID_REQUEST),
        (request((1, 2), leader=2), ErrorCode.INVALID_REQUEST),
    ],
)
def test_alter_partition_refuses_stale_or_malformed_proposals(proposal, error):
    assert alter_partition(STATE, proposal, {1: 1, 2: 1, 3: 1}) == (error, STATE)


def test_alter_partition_answers_a_resent_proposal_that_was_already_applied():
    error, state = alter_partition(STATE, request((1, 2)), {1: 1, 2: 1, 3: 1})
    assert alter_partition(state, request((1, 2)), {1: 1, 2: 1, 3: 1}) == (ErrorCode.NONE, state)


def test_alter_partition_only_admits_live_replicas_of_the_incarnation_the_leader_saw():
    shrunk = PartitionState(1, 4, (1,), 9, (1, 2, 3))
    assert alter_partition(shrunk, request((1, 2), epochs={2: 7}), {1: 1})[0] == ErrorCode.INELIGIBLE_REPLICA
    assert alter_partition(shrunk, request((1, 2), epochs={2: 7}), {1: 1, 2: 8})[0] == ErrorCode.INELIGIBLE_REPLICA
    error, state = alter_partition(shrunk, request((1, 2), epochs={2: 8}), {1: 1, 2: 8})
    assert error == ErrorCode.NONE and state.isr == (1, 2)


SHRUNK = PartitionState(1, 4, (1, 2), 9, (1, 2, 3))
LIVE = {1: 10, 2: 20, 3: 30}


@pytest.mark.parametrize(
    ("epochs", "live", "shutting_down", "why"),
    [
        ({3: 29}, LIVE, (), "broker 3 was proposed with broker epoch 29, but its current registration has broker "
                            "epoch 30"),
        ({3: -1}, LIVE, (), "broker 3 was proposed with broker epoch -1, but its current registration has broker "
                            "epoch 30"),
        ({3: 30}, {1: 10, 2: 20}, (), "broker 3 is not alive"),
        ({3: 30}, LIVE, (3,), "broker 3 is in controlled shutdown"),
        ({2: 19, 3: 30}, LIVE, (), "broker 2 was proposed with broker epoch 19, but its current registration has "
                                   "broker epoch 20"),
    ],
)
def test_kip_903_a_member_must_be_the_incarnation_registered_now(epochs, live, shutting_down, why):
    proposal = request((1, 2, 3), partition_epoch=9, epochs=epochs)
    assert alter_partition(SHRUNK, proposal, live, shutting_down) == (ErrorCode.INELIGIBLE_REPLICA, SHRUNK)
    assert ineligible_isr_members(SHRUNK, proposal, live, shutting_down) == [why]


def test_kip_903_a_joining_member_at_its_registered_epoch_is_admitted():
    error, state = alter_partition(SHRUNK, request((1, 2, 3), partition_epoch=9, epochs={3: 30}), LIVE)
    assert error == ErrorCode.NONE and state.isr == (1, 2, 3) and state.partition_epoch == 10


def test_kip_903_members_already_in_the_isr_are_checked_only_when_the_leader_names_their_epoch():
    # The leader names itself with -1, and a follower it has not heard from since it took over too.
    assert alter_partition(STATE, request((1, 2)), LIVE)[0] == ErrorCode.NONE
    assert alter_partition(STATE, request((1, 2), epochs={2: 20}), LIVE)[0] == ErrorCode.NONE
    assert alter_partition(STATE, request((1, 2), epochs={2: 19}), LIVE)[0] == ErrorCode.INELIGIBLE_REPLICA
    # A member in controlled shutdown keeps its place while the leader shrinks the ISR around it.
    assert alter_partition(STATE, request((1, 2), epochs={2: 20}), LIVE, shutting_down={2})[0] == ErrorCode.NONE


# -- elections an operator asks for ------------------------------------------------------------


def test_preferred_election_moves_leadership_back_to_the_first_replica_when_it_is_in_sync():
    led_by_2 = PartitionState(2, 5, (2, 3, 1), 10, (1, 2, 3))
    moved_back = PartitionState(1, 6, (2, 3, 1), 11, (1, 2, 3))
    assert elect_preferred_leader(led_by_2, {1, 2, 3}) == (ErrorCode.NONE, moved_back)
    assert elect_preferred_leader(STATE, {1, 2, 3}) == (ErrorCode.ELECTION_NOT_NEEDED, STATE)


@pytest.mark.parametrize("isr, live", [((2, 3), {1, 2, 3}), ((2, 3, 1), {2, 3})])
def test_preferred_election_never_takes_a_replica_that_is_out_of_sync_or_dead(isr, live):
    led_by_2 = PartitionState(2, 5, isr, 10, (1, 2, 3))
    assert elect_preferred_leader(led_by_2, live) == (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, led_by_2)


def test_an_unclean_election_on_request_prefers_the_isr_then_takes_any_live_replica():
    offline = PartitionState(NO_LEADER, 5, (1,), 10, (1, 2, 3))
    error, election = elect_unclean_leader(offline, {2, 3})
    assert error == ErrorCode.NONE and election.unclean
    assert election.state == PartitionState(2, 6, (2,), 11, (1, 2, 3))
    error, election = elect_unclean_leader(offline, {1, 3})
    assert error == ErrorCode.NONE and not election.unclean and election.state.leader == 1


def test_an_unclean_election_leaves_a_led_partition_alone_and_needs_a_live_replica():
    assert elect_unclean_leader(STATE, {1, 2})[0] == ErrorCode.ELECTION_NOT_NEEDED
    offline = PartitionState(NO_LEADER, 5, (1,), 10, (1, 2, 3))
    assert elect_unclean_leader(offline, {4})[0] == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_rebalance_is_due_only_above_the_imbalance_percentage_and_only_where_possible():
    # Broker 1 prefers four partitions and leads one: 75 % imbalance.
    states = {
        "a": PartitionState(1, 0, (1, 2), 0, (1, 2)),
        "b": PartitionState(2, 1, (2, 1), 1, (1, 2)),
        "c": PartitionState(2, 1, (2, 1), 1, (1, 2)),
        "d": PartitionState(2, 1, (2,), 1, (1, 2)),  # 1 is not in sync: not movable
        "e": PartitionState(2, 0, (2, 1), 0, (2, 1)),  # broker 2 is balanced
    }
    assert preferred_elections_due(states, {1, 2}, imbalance_percentage_max=10) == ["b", "c"]
    assert preferred_elections_due(states, {1, 2}, imbalance_percentage_max=75) == []
    assert preferred_elections_due(states, {2}, imbalance_percentage_max=10) == []


# -- reassignment ----------------------------------------------------------------------------------


def test_a_reassignment_grows_the_replicas_and_tells_the_leader_by_the_partition_epoch():
    assert with_replicas(STATE, (4, 1, 2, 3)) == PartitionState(1, 4, (1, 2, 3), 10, (4, 1, 2, 3))


def test_finishing_a_reassignment_keeps_a_leader_that_stays_and_drops_the_removed_replicas():
    growing = PartitionState(1, 4, (1, 2, 3, 4), 10, (4, 1, 2, 3))
    moved = move_to_replicas(growing, (4, 1, 2), {1, 2, 3, 4})
    assert moved.state == PartitionState(1, 4, (1, 2, 4), 11, (4, 1, 2))


def test_finishing_a_reassignment_that_removes_the_leader_elects_an_isr_member_of_the_target():
    growing = PartitionState(1, 4, (1, 2, 3, 4), 10, (3, 4, 1, 2))
    moved = move_to_replicas(growing, (3, 4), {1, 2, 3, 4})
    assert moved.state == PartitionState(3, 5, (3, 4), 11, (3, 4))
    assert move_to_replicas(growing, (3, 4), {1, 2}) is None
    assert move_to_replicas(PartitionState(1, 4, (1, 2), 10, (3, 1, 2)), (3,), {1, 2, 3}) is None
