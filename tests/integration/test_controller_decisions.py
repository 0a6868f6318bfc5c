"""The controller's pure decisions (replog.controller.decisions): no cluster needed.

They sit with the controller's integration tests until the decisions move into
replog.core, when they belong in tests/core.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.controller.decisions import (
    IsrProposal,
    judge_isr_proposal,
    new_partition_state,
    reconcile_partition,
)
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.zk.records import NO_LEADER, LeaderAndIsr, TopicAssignment

TP = TopicPartition("orders", 0)


def state(leader, isr, leader_epoch=4, partition_epoch=7):
    return LeaderAndIsr(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr), controller_epoch=1,
                          partition_epoch=partition_epoch)


def test_a_new_partition_is_led_by_its_first_replica_with_every_replica_in_sync():
    assert new_partition_state((2, 3, 1), controller_epoch=5) == LeaderAndIsr(2, 0, (2, 3, 1), 5, 0)


# -- elections (replog.core.election's rules, applied to a change of the live brokers) -------------


def reconcile(before, live, unclean=False):
    return reconcile_partition(TP, before, (1, 2, 3), live, unclean_allowed=unclean, controller_epoch=9)


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member_with_a_new_leader_epoch():
    change = reconcile(state(1, (1, 3, 2)), {2, 3})
    assert change.after == LeaderAndIsr(2, 5, (3, 2), 9, 8)
    assert change.leader_changed and not change.unclean


def test_a_dead_follower_leaves_the_isr_without_a_leader_change():
    change = reconcile(state(1, (1, 2, 3)), {1, 3})
    assert change.after == LeaderAndIsr(1, 4, (1, 3), 9, 8)
    assert not change.leader_changed


def test_nothing_changes_when_every_isr_member_is_alive():
    assert reconcile(state(1, (1, 2)), {1, 2}) is None


def test_brokers_dying_together_make_one_change_with_one_partition_epoch_step():
    change = reconcile(state(1, (1, 2, 3)), {3})
    assert change.after == LeaderAndIsr(3, 5, (3,), 9, 8)


def test_with_no_live_isr_member_the_partition_goes_offline_and_keeps_its_last_isr_member():
    change = reconcile(state(1, (1,)), {2, 3})
    assert change.after == LeaderAndIsr(NO_LEADER, 5, (1,), 9, 8)
    assert reconcile(change.after, {2, 3}) is None, "still offline: nothing to do until an ISR member returns"
    back = reconcile(change.after, {1, 2, 3})
    assert back.after == LeaderAndIsr(1, 6, (1,), 9, 9)


def test_unclean_election_takes_a_live_replica_when_the_topic_allows_it():
    change = reconcile(state(1, (1,)), {3}, unclean=True)
    assert change.unclean and change.after.leader == 3 and change.after.isr == (3,)
    offline = reconcile(state(1, (1,)), set()).after
    returned = reconcile(offline, {2}, unclean=True)
    assert returned.unclean and returned.after.leader == 2


@given(
    isr=st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=3, unique=True),
    live=st.sets(st.sampled_from([1, 2, 3])),
    unclean=st.booleans(),
)
def test_reconciliation_invariants(isr, live, unclean):
    before = state(isr[0], isr)
    change = reconcile(before, live, unclean)
    after = change.after if change else before
    if after.leader != NO_LEADER:
        assert after.leader in live and after.leader in after.isr
        assert set(after.isr) <= live
    if not unclean and after.leader != NO_LEADER:
        assert after.leader in isr, "a clean election never leaves the last ISR"
    if change is not None:
        assert after.partition_epoch == before.partition_epoch + 1
        assert after.leader_epoch == before.leader_epoch + (1 if change.leader_changed else 0)
        assert reconcile(after, live, unclean) is None, "a second pass changes nothing"


# -- AlterPartition ------------------------------------------------------------------------------

LIVE_EPOCHS = {1: 100, 2: 200}


@pytest.mark.parametrize("proposal, error", [
    (IsrProposal(1, 3, 7, (1, 2)), ErrorCode.FENCED_LEADER_EPOCH),
    (IsrProposal(1, 5, 7, (1, 2)), ErrorCode.UNKNOWN_LEADER_EPOCH),
    (IsrProposal(2, 4, 7, (1, 2)), ErrorCode.INVALID_REQUEST),
    (IsrProposal(1, 4, 6, (1,)), ErrorCode.INVALID_UPDATE_VERSION),
    (IsrProposal(1, 4, 7, (2, 3)), ErrorCode.INVALID_REQUEST),
    (IsrProposal(1, 4, 7, (1, 9)), ErrorCode.INVALID_REQUEST),
    (IsrProposal(1, 4, 7, (1, 3)), ErrorCode.INELIGIBLE_REPLICA),
])
def test_an_isr_proposal_is_checked_and_refused_with_a_sentence(proposal, error):
    rejection, kept = judge_isr_proposal(proposal, state(1, (1, 2)), (1, 2, 3), LIVE_EPOCHS, controller_epoch=9)
    assert rejection is not None and rejection.error == error and len(rejection.message) > 10
    assert kept == state(1, (1, 2))


def test_a_resent_proposal_that_was_applied_already_passes_without_a_change():
    current = state(1, (1, 2))
    rejection, after = judge_isr_proposal(IsrProposal(1, 4, 6, (1, 2)), current, (1, 2, 3), LIVE_EPOCHS, 9)
    assert rejection is None and after is current


def test_an_accepted_isr_change_bumps_only_the_partition_epoch():
    rejection, after = judge_isr_proposal(IsrProposal(1, 4, 7, (1, 2, 3)), state(1, (1, 2)), (1, 2, 3),
                                          {**LIVE_EPOCHS, 3: 300}, controller_epoch=9)
    assert rejection is None and after == LeaderAndIsr(1, 4, (1, 2, 3), 9, 8)


# -- the znode JSON ------------------------------------------------------------------------------


def test_znode_json_round_trips():
    assignment = TopicAssignment("id", {0: (1, 2), 1: (2, 3)})
    assert TopicAssignment.from_json(assignment.to_json()) == assignment
    assert b'"version":3' in assignment.to_json() and b'"partitions":{"0":[1,2],"1":[2,3]}' in assignment.to_json()
    partition_state = state(1, (1, 2))
    assert LeaderAndIsr.from_json(partition_state.to_json()) == partition_state
