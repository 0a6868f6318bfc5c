"""The controller's changes of one partition over a ClusterImage: the election pass when the live
brokers change, elections on request, controlled shutdown and reassignment steps."""

from hypothesis import given
from hypothesis import strategies as st

from replog.core.cluster_image import ClusterImage
from replog.core.errors import ErrorCode
from replog.core.messages import NO_LEADER, PartitionState
from replog.core.outcome import SUCCESS, Outcome
from replog.core.partition_change import change_replicas, elect_on_request, reconcile_partition, shut_down_replica
from replog.core.topic_partition import TopicPartition

TP = TopicPartition("orders", 0)
REPLICAS = (1, 2, 3)


def state(leader, isr, leader_epoch=4, partition_epoch=7, replicas=REPLICAS):
    return PartitionState(leader=leader, leader_epoch=leader_epoch, isr=tuple(isr), partition_epoch=partition_epoch,
                          replicas=replicas)


def image(live, shutting_down=()):
    return ClusterImage({broker: 100 + broker for broker in live}, shutting_down=shutting_down)


# -- the election pass (replog.core.election's rules, applied to a change of the live brokers) ----


def reconcile(before, live, unclean=False, shutting_down=()):
    return reconcile_partition(TP, before, image(live, shutting_down), unclean_allowed=unclean)


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member_with_a_new_leader_epoch():
    change = reconcile(state(1, (1, 3, 2)), {2, 3})
    assert change.after == state(2, (3, 2), 5, 8)
    assert change.leader_changed and change.elected and not change.unclean


def test_a_dead_follower_leaves_the_isr_without_a_leader_change():
    change = reconcile(state(1, (1, 2, 3)), {1, 3})
    assert change.after == state(1, (1, 3), 4, 8)
    assert not change.leader_changed


def test_nothing_changes_when_every_isr_member_is_alive():
    assert reconcile(state(1, (1, 2)), {1, 2}) is None


def test_brokers_dying_together_make_one_change_with_one_partition_epoch_step():
    change = reconcile(state(1, (1, 2, 3)), {3})
    assert change.after == state(3, (3,), 5, 8)


def test_with_no_live_isr_member_the_partition_goes_offline_and_keeps_its_last_isr_member():
    change = reconcile(state(1, (1,)), {2, 3})
    assert change.after == state(NO_LEADER, (1,), 5, 8)
    assert change.leader_changed and not change.elected
    assert reconcile(change.after, {2, 3}) is None, "still offline: nothing to do until an ISR member returns"
    back = reconcile(change.after, {1, 2, 3})
    assert back.after == state(1, (1,), 6, 9)


def test_unclean_election_takes_a_live_replica_when_the_topic_allows_it():
    change = reconcile(state(1, (1,)), {3}, unclean=True)
    assert change.unclean and change.after.leader == 3 and change.after.isr == (3,)
    offline = reconcile(state(1, (1,)), set()).after
    returned = reconcile(offline, {2}, unclean=True)
    assert returned.unclean and returned.after.leader == 2


def test_a_broker_shutting_down_keeps_what_it_has_but_is_never_elected():
    change = reconcile(state(1, (1, 2, 3)), {2, 3}, shutting_down={2})
    assert change.after == state(3, (2, 3), 5, 8)


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


# -- elections on request, controlled shutdown, reassignment --------------------------------------


def test_a_preferred_election_moves_leadership_back_and_says_why_when_it_cannot():
    outcome, change = elect_on_request(TP, state(2, (1, 2, 3)), image({1, 2, 3}), unclean=False)
    assert outcome == SUCCESS and change.after == state(1, (1, 2, 3), 5, 8)
    outcome, change = elect_on_request(TP, state(2, (1, 2, 3)), image({1, 2, 3}, shutting_down={1}), unclean=False)
    assert outcome == Outcome(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                              "the preferred leader 1 is not a live ISR member (ISR [1, 2, 3], live brokers [2, 3])")
    assert change is None
    assert elect_on_request(TP, state(1, (1, 2)), image({1, 2}), unclean=False) == \
        (Outcome(ErrorCode.ELECTION_NOT_NEEDED, "broker 1 leads already"), None)


def test_an_unclean_election_on_request_takes_a_live_replica_of_an_offline_partition():
    outcome, change = elect_on_request(TP, state(NO_LEADER, (1,)), image({3}), unclean=True)
    assert outcome == SUCCESS and change.unclean and change.after.leader == 3
    outcome, _ = elect_on_request(TP, state(NO_LEADER, (1,)), image(set()), unclean=True)
    assert outcome == Outcome(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica of [1, 2, 3] is alive")


def test_a_controlled_shutdown_hands_leadership_to_a_member_not_shutting_down():
    change = shut_down_replica(TP, state(1, (1, 2, 3)), 1, image({1, 2, 3}, shutting_down={1, 2}))
    assert change.after == state(3, (2, 3), 5, 8)
    assert shut_down_replica(TP, state(1, (1,)), 1, image({1, 2, 3}, shutting_down={1})) is None


def test_a_reassignment_grows_the_replicas_then_moves_a_leader_that_is_removed():
    grown = change_replicas(TP, state(1, (1, 2, 3)), (4, 1, 2, 3), image({1, 2, 3, 4}))
    assert grown.after == state(1, (1, 2, 3), 4, 8, replicas=(4, 1, 2, 3))
    finished = change_replicas(TP, state(1, (1, 2, 3, 4), replicas=(4, 2, 3, 1)), (4, 2, 3), image({1, 2, 3, 4}))
    assert finished.after == state(4, (2, 3, 4), 5, 8, replicas=(4, 2, 3)) and finished.elected
    assert change_replicas(TP, state(1, (1,), replicas=(4, 1)), (4,), image({1, 4})) is None
