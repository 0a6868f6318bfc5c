"""A consumer's side of KIP-848, without I/O: what each heartbeat carries, and what each answer changes."""

import itertools
import re

import pytest

from replog.client.errors import ClientError
from replog.client.membership import (
    Assign,
    HeartbeatAnswer,
    Lose,
    Membership,
    MemberState,
    PendingCallbacks,
    Revoke,
    Subscription,
    subscription_of,
)
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

INTERVAL_MS = 500
BACKOFF_MS = 100
TOPICS = Subscription(topics=("t",))


def tps(*partitions, topic="t"):
    return frozenset(TopicPartition(topic, p) for p in partitions)


def member(instance_id=None):
    ids = (f"member-{n}" for n in itertools.count(1))
    return Membership(instance_id=instance_id, rebalance_timeout_ms=300_000, server_assignor="range",
                      new_member_id=lambda: next(ids))


def ok(epoch, assignment=None):
    return HeartbeatAnswer(ErrorCode.NONE, "", epoch, INTERVAL_MS, assignment)


def joined(assignment=tps(0, 1, 2), epoch=1, instance_id=None):
    """A member that joined and took its first assignment."""
    m = member(instance_id)
    m.subscribe(TOPICS, 0)
    m.next_heartbeat()
    assert m.on_answer(ok(epoch, assignment), 0, BACKOFF_MS) == [Assign(assignment)]
    return m


def test_the_first_heartbeat_joins_with_epoch_0_and_the_whole_subscription():
    m = member(instance_id="i-1")
    assert m.heartbeat_due_ms() is None  # not subscribed: nothing to send
    m.subscribe(TOPICS, 1_000)
    assert m.heartbeat_due_ms() <= 1_000  # at once
    params = m.next_heartbeat()
    assert (params.member_id, params.member_epoch, params.instance_id) == ("member-1", 0, "i-1")
    assert (params.subscription, params.rebalance_timeout_ms, params.server_assignor) == (TOPICS, 300_000, "range")
    assert params.owned == frozenset()
    assert m.heartbeat_due_ms() is None  # one heartbeat in flight at a time


def test_a_member_heartbeats_at_its_epoch_and_the_servers_interval_and_leaves_out_what_did_not_change():
    m = joined()
    assert m.state is MemberState.MEMBER and m.member_epoch == 1 and m.owned == tps(0, 1, 2)
    assert m.heartbeat_due_ms() == INTERVAL_MS
    params = m.next_heartbeat()
    assert (params.member_epoch, params.owned, params.subscription, params.rebalance_timeout_ms) == (
        1, tps(0, 1, 2), None, 0)
    assert m.on_answer(ok(1), INTERVAL_MS, BACKOFF_MS) == []  # no assignment in the answer: unchanged
    assert m.heartbeat_due_ms() == 2 * INTERVAL_MS


def test_partitions_left_out_are_revoked_first_and_the_heartbeat_after_giving_them_up_leaves_at_once():
    m = joined()
    m.next_heartbeat()
    assert m.on_answer(ok(1, tps(0)), 500, BACKOFF_MS) == [Revoke(tps(1, 2))]
    # Until poll() gave them up, the member still owns them and says so.
    assert m.owned == tps(0, 1, 2) and m.next_heartbeat().owned == tps(0, 1, 2)
    assert m.on_answer(ok(1, tps(0)), 1_000, BACKOFF_MS) == []  # no second revocation of the same partitions
    assert m.revoked(tps(1, 2), 1_200) == []
    assert m.owned == tps(0) and m.heartbeat_due_ms() == 1_200
    assert m.next_heartbeat().owned == tps(0)


def test_new_partitions_wait_until_the_revocation_is_done():
    m = joined()
    m.next_heartbeat()
    assert m.on_answer(ok(1, tps(0, 3)), 500, BACKOFF_MS) == [Revoke(tps(1, 2))]
    assert m.owned == tps(0, 1, 2)
    assert m.revoked(tps(1, 2), 600) == [Assign(tps(3))]
    assert m.owned == tps(0, 3)


def test_giving_up_partitions_while_a_heartbeat_is_in_flight_sends_the_next_at_once():
    m = joined()
    m.next_heartbeat()
    m.on_answer(ok(1, tps(0)), 500, BACKOFF_MS)
    m.next_heartbeat()  # in flight, still listing 1 and 2
    m.revoked(tps(1, 2), 600)
    assert m.heartbeat_due_ms() is None
    m.on_answer(ok(1, tps(0)), 700, BACKOFF_MS)
    assert m.heartbeat_due_ms() == 700  # not 700 + the interval: the coordinator waits for this one


def test_fenced_member_loses_its_partitions_and_rejoins_at_once_with_the_same_member_id():
    m = joined()
    m.next_heartbeat()
    changes = m.on_answer(HeartbeatAnswer(ErrorCode.FENCED_MEMBER_EPOCH, "stale"), 500, BACKOFF_MS)
    assert changes == [Lose(tps(0, 1, 2))]
    assert (m.state, m.member_epoch, m.owned, m.heartbeat_due_ms()) == (MemberState.JOINING, 0, frozenset(), 500)
    params = m.next_heartbeat()
    assert (params.member_id, params.member_epoch, params.subscription) == ("member-1", 0, TOPICS)


def test_a_member_the_coordinator_forgot_rejoins_under_a_new_member_id():
    m = joined()
    m.next_heartbeat()
    assert m.on_answer(HeartbeatAnswer(ErrorCode.UNKNOWN_MEMBER_ID, "gone"), 500, BACKOFF_MS) == [Lose(tps(0, 1, 2))]
    assert m.next_heartbeat().member_id == "member-2"


def test_fencing_during_a_revocation_loses_everything_and_the_late_revocation_changes_nothing():
    m = joined()
    m.next_heartbeat()
    m.on_answer(ok(1, tps(0)), 500, BACKOFF_MS)
    m.next_heartbeat()
    m.on_answer(HeartbeatAnswer(ErrorCode.FENCED_MEMBER_EPOCH, ""), 600, BACKOFF_MS)
    m.next_heartbeat()
    assert m.on_answer(ok(3, tps(1)), 700, BACKOFF_MS) == [Assign(tps(1))]
    assert m.revoked(tps(1, 2), 800) == [] and m.owned == tps(1)  # poll() finishing the old revocation late


def test_a_join_whose_answer_was_lost_is_sent_again_under_the_same_member_id():
    # KIP-1082: the coordinator takes the second join for the first one's member, not a new one.
    m = member()
    m.subscribe(TOPICS, 0)
    first = m.next_heartbeat()
    m.on_failure(100, BACKOFF_MS)
    again = m.next_heartbeat()
    assert (again.member_id, again.member_epoch, again.subscription) == (first.member_id, 0, TOPICS)


@pytest.mark.parametrize("error", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                   ErrorCode.COORDINATOR_LOAD_IN_PROGRESS])
def test_a_coordinator_that_moved_or_loads_gets_the_same_heartbeat_again_after_a_backoff(error):
    m = joined()
    m.next_heartbeat()
    assert m.on_answer(HeartbeatAnswer(error, ""), 500, BACKOFF_MS) == []
    assert m.owned == tps(0, 1, 2) and m.heartbeat_due_ms() == 500 + BACKOFF_MS
    params = m.next_heartbeat()
    assert params.member_epoch == 1 and params.subscription == TOPICS  # whole, for a new coordinator


@pytest.mark.parametrize("error", [ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.INVALID_SUBSCRIPTION_REGEX,
                                   ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.GROUP_MAX_SIZE_REACHED,
                                   ErrorCode.FENCED_INSTANCE_ID, ErrorCode.INVALID_GROUP_ID])
def test_a_refusal_for_good_ends_the_membership_and_says_why(error):
    m = joined()
    m.next_heartbeat()
    assert m.on_answer(HeartbeatAnswer(error, "because"), 500, BACKOFF_MS) == [Lose(tps(0, 1, 2))]
    assert m.state is MemberState.FAILED and m.error == (error, "because")
    assert m.heartbeat_due_ms() is None
    m.subscribe(TOPICS, 600)  # subscribing again starts over
    assert m.state is MemberState.JOINING and m.error is None


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("i-1", -2)])
def test_leaving_sends_epoch_minus_1_or_minus_2_for_a_static_member_then_nothing(instance_id, epoch):
    m = joined(instance_id=instance_id)
    assert m.leave(700) and m.heartbeat_due_ms() <= 700
    params = m.next_heartbeat()
    assert params.member_epoch == epoch and params.instance_id == instance_id
    assert m.on_answer(HeartbeatAnswer(ErrorCode.NONE, "", epoch), 750, BACKOFF_MS) == []
    assert m.state is MemberState.UNSUBSCRIBED and m.owned == frozenset() and m.heartbeat_due_ms() is None


def test_an_answer_to_a_heartbeat_sent_before_leaving_is_ignored_and_the_leave_follows():
    m = joined()
    m.next_heartbeat()
    m.leave(600)
    assert m.on_answer(ok(2, tps(0)), 650, BACKOFF_MS) == []
    assert m.next_heartbeat().member_epoch == -1


def test_a_leave_without_an_answer_is_tried_again_and_leaving_twice_gives_up():
    m = joined()
    m.leave(600)
    m.next_heartbeat()
    m.on_failure(700, BACKOFF_MS)
    assert m.state is MemberState.LEAVING and m.heartbeat_due_ms() == 800
    assert not m.leave(900) and m.state is MemberState.UNSUBSCRIBED


def test_a_new_subscription_is_sent_at_once_until_an_answer_acknowledges_it():
    m = joined()
    regex = Subscription(regex="t.*")
    m.subscribe(regex, 100)
    assert m.heartbeat_due_ms() <= 100
    assert m.next_heartbeat().subscription == regex
    m.on_answer(ok(2), 150, BACKOFF_MS)
    assert m.next_heartbeat().subscription is None


# -- subscribe()'s argument ---------------------------------------------------------------------------


def test_topic_names_and_regexes_become_subscriptions():
    assert subscription_of(["b", "a", "b"]) == Subscription(topics=("a", "b"))
    assert subscription_of("orders-.*") == Subscription(regex="orders-.*")
    assert subscription_of(re.compile("(?i)orders")) == Subscription(regex="(?i)orders")


@pytest.mark.parametrize(("topics", "says"), [
    ("orders-(", "does not compile"),
    ("", "empty"),
    (re.compile("orders", re.IGNORECASE), "inline"),
    (["orders", ""], "topic names"),
])
def test_a_subscription_that_cannot_work_is_refused_before_anything_is_sent(topics, says):
    with pytest.raises(ClientError, match=says):
        subscription_of(topics)


# -- what poll() still has to say ---------------------------------------------------------------------


def drain(queue):
    out = []
    while (change := queue.pop()) is not None:
        out.append(change)
    return out


def test_callbacks_come_in_the_order_the_changes_happened():
    queue = PendingCallbacks()
    for change in (Assign(tps(0, 1)), Revoke(tps(1)), Assign(tps(2))):
        queue.push(change)
    assert drain(queue) == [Assign(tps(0, 1)), Revoke(tps(1)), Assign(tps(2))]


def test_a_loss_replaces_a_pending_revocation_and_forgets_assignments_never_announced():
    queue = PendingCallbacks()
    queue.push(Revoke(tps(0, 1)))
    queue.push(Assign(tps(5)))
    queue.push(Lose(tps(0, 1, 2, 5)))
    assert drain(queue) == [Lose(tps(0, 1, 2))]


def test_leaving_drops_the_pending_changes_of_partitions_but_not_the_rest():
    queue = PendingCallbacks()
    sentinel = object()
    for change in (Assign(tps(0)), sentinel, Revoke(tps(0))):
        queue.push(change)
    queue.drop_changes()
    assert drain(queue) == [sentinel]


def test_other_pending_changes_stay_when_a_loss_comes():
    queue = PendingCallbacks()
    sentinel = object()
    queue.push(sentinel)
    queue.push(Lose(frozenset()))
    assert drain(queue) == [sentinel]


def test_a_member_whose_poll_is_late_loses_its_partitions_leaves_and_joins_again_at_the_next_poll():
    m = joined()
    assert m.poll_timer_expired(900) == [Lose(tps(0, 1, 2))]
    assert m.state is MemberState.LEAVING and m.owned == frozenset()
    assert m.next_heartbeat().member_epoch == -1
    assert m.polled(950)  # poll() again before the leave was answered: join again ...
    assert m.on_answer(HeartbeatAnswer(ErrorCode.NONE, "", -1), 960, BACKOFF_MS) == []
    assert m.state is MemberState.JOINING  # ... and the leave's answer does not undo it
    params = m.next_heartbeat()
    assert (params.member_id, params.member_epoch, params.subscription) == ("member-1", 0, TOPICS)
    assert not m.polled(1_000)


def test_the_poll_timer_of_a_member_that_is_not_in_the_group_changes_nothing():
    m = member()
    assert m.poll_timer_expired(900) == [] and not m.polled(950)
    assert m.state is MemberState.UNSUBSCRIBED
