"""The controller's pure decisions (replog.controller.decisions): no cluster needed.

They sit with the controller's integration tests until the decisions move into
replog.core, when they belong in tests/core.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.controller.decisions import judge_isr_proposal, new_partition_state, reconcile_partition
from replog.core.errors import ErrorCode
from replog.core.messages import AlterPartitionRequest, IsrMember
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

LIVE_EPOCHS = {1: 100, 2: 200, 3: 300}


def proposal(leader, leader_epoch, partition_epoch, isr):
    """isr: broker ids (proposed with -1, as members already in sync may be) or (id, broker epoch) pairs."""
    members = tuple(IsrMember(*m) if isinstance(m, tuple) else IsrMember(m, -1) for m in isr)
    return AlterPartitionRequest(leader, leader_epoch, partition_epoch, members)


def judge(request, current, live=LIVE_EPOCHS, shutting_down=()):
    return judge_isr_proposal(request, current, (1, 2, 3), live, shutting_down, controller_epoch=9)


@pytest.mark.parametrize("request_, error", [
    (proposal(1, 3, 7, (1, 2)), ErrorCode.FENCED_LEADER_EPOCH),
    (proposal(1, 5, 7, (1, 2)), ErrorCode.UNKNOWN_LEADER_EPOCH),
    (proposal(2, 4, 7, (1, 2)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 6, (1,)), ErrorCode.INVALID_UPDATE_VERSION),
    (proposal(1, 4, 7, (2, 3)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 7, (1, 9)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 7, (1, 2, (3, 300))), ErrorCode.INELIGIBLE_REPLICA),  # 3 is not alive
])
def test_an_isr_proposal_is_checked_and_refused_with_a_sentence(request_, error):
    rejection, kept = judge(request_, state(1, (1, 2)), live={1: 100, 2: 200})
    assert rejection is not None and rejection.error == error and len(rejection.message) > 10
    assert kept == state(1, (1, 2))


def test_a_member_proposed_with_an_old_broker_epoch_is_refused_naming_both_epochs():
    rejection, kept = judge(proposal(1, 4, 7, (1, 2, (3, 299))), state(1, (1, 2)))
    assert rejection.error == ErrorCode.INELIGIBLE_REPLICA and kept == state(1, (1, 2))
    assert rejection.message == ("broker 3 was proposed with broker epoch 299, but its current registration has "
                                 "broker epoch 300")


def test_a_broker_in_controlled_shutdown_may_not_join():
    rejection, _ = judge(proposal(1, 4, 7, (1, 2, (3, 300))), state(1, (1, 2)), shutting_down={3})
    assert rejection.error == ErrorCode.INELIGIBLE_REPLICA and "controlled shutdown" in rejection.message


def test_a_resent_proposal_that_was_applied_already_passes_without_a_change():
    current = state(1, (1, 2))
    rejection, after = judge(proposal(1, 4, 6, (1, 2)), current)
    assert rejection is None and after is current


def test_an_accepted_isr_change_bumps_only_the_partition_epoch():
    rejection, after = judge(proposal(1, 4, 7, (1, 2, (3, 300))), state(1, (1, 2)))
    assert rejection is None and after == LeaderAndIsr(1, 4, (1, 2, 3), 9, 8)


# -- the znode JSON ------------------------------------------------------------------------------


def test_znode_json_round_trips():
    assignment = TopicAssignment("id", {0: (1, 2), 1: (2, 3)})
    assert TopicAssignment.from_json(assignment.to_json()) == assignment
    assert b'"version":3' in assignment.to_json() and b'"partitions":{"0":[1,2],"1":[2,3]}' in assignment.to_json()
    partition_state = state(1, (1, 2))
    assert LeaderAndIsr.from_json(partition_state.to_json()) == partition_state
