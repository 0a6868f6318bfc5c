"""The group coordinator's rules (KIP-848) as scenarios: given a group, these heartbeats, this must hold."""

import pytest

from replog.core.errors import ErrorCode
from replog.core.group.group import GROUP_TRANSITIONS, GroupEvent, GroupState
from replog.core.group.member import JOIN_EPOCH, MemberState
from replog.core.group.requests import CommitRequest, HeartbeatRequest, OffsetCommit
from replog.core.topic_partition import TopicPartition
from tests.sim.groups import GROUP, Cluster, Consumer, as_mapping, assert_one_owner_each, owners, settle

T = [TopicPartition("t", p) for p in range(6)]


def state(cluster: Cluster) -> GroupState:
    return cluster.shard.groups[GROUP].state


def test_the_first_member_gets_every_partition_and_the_group_is_stable():
    cluster = Cluster()
    a = Consumer(cluster, "a")
    response = a.heartbeat()
    assert response.error == ErrorCode.NONE and response.member_epoch == 1
    assert a.owned == set(T)
    assert state(cluster) is GroupState.STABLE
    assert cluster.shard.groups[GROUP].group_epoch == 1


def test_a_second_member_gets_its_share_only_after_the_first_gave_it_up():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    a.heartbeat()
    b.heartbeat()
    assert b.epoch == 2 and b.owned == set(), "b waits: every partition is still a's"
    assert cluster.shard.groups[GROUP].members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert state(cluster) is GroupState.RECONCILING
    a.heartbeat()  # learns what to give up
    assert len(a.owned) == 3 and a.epoch == 1, "a keeps its epoch until it has given them up"
    assert cluster.shard.groups[GROUP].members["a"].state is MemberState.UNREVOKED_PARTITIONS
    b.heartbeat()
    assert b.owned == set(), "a has not said it gave them up"
    a.heartbeat()  # owns only its three now
    assert a.epoch == 2
    b.heartbeat()
    assert len(b.owned) == 3 and a.owned.isdisjoint(b.owned)
    assert state(cluster) is GroupState.STABLE


def test_a_member_waiting_for_partitions_others_still_hold_is_told_to_heartbeat_ten_times_as_often():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    assert a.heartbeat().heartbeat_interval_ms == 500
    waiting = b.heartbeat()
    assert cluster.shard.groups[GROUP].members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert waiting.heartbeat_interval_ms == 50
    assert a.heartbeat().heartbeat_interval_ms == 500, "a member giving partitions up heartbeats once it has"
    a.heartbeat()
    assert b.heartbeat().heartbeat_interval_ms == 500 and len(b.owned) == 3, "b has its share: back to the interval"


def test_a_member_that_leaves_hands_its_partitions_to_the_others_at_once():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    b.leave()
    settle(cluster, [a], rounds=2)
    assert a.owned == set(T) and state(cluster) is GroupState.STABLE


def test_a_silent_member_is_removed_after_its_session_timeout():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    epoch = cluster.shard.groups[GROUP].group_epoch
    for _ in range(7):  # a keeps heartbeating for 3.5 s; b says nothing
        cluster.tick(500)
        a.heartbeat()
    assert "b" not in cluster.shard.groups[GROUP].members
    assert cluster.shard.groups[GROUP].group_epoch == epoch + 1
    assert a.owned == set(T)


def test_a_member_that_does_not_give_up_partitions_in_its_rebalance_timeout_is_removed():
    cluster = Cluster()
    a = Consumer(cluster, "a")
    a.heartbeat(rebalance_timeout_ms=1_000)
    Consumer(cluster, "b").heartbeat()
    cluster.tick(100)
    # a is told to revoke, and keeps heartbeating as if it still owned everything.
    for _ in range(4):
        cluster.shard.heartbeat(_stubborn(a), cluster.topics, cluster.now_ms, cluster.now_ms)
        cluster.tick(400)
    assert "a" not in cluster.shard.groups[GROUP].members


def _stubborn(consumer):

    return HeartbeatRequest(GROUP, consumer.member_id, consumer.epoch, owned=as_mapping(set(T)))


def test_a_static_member_back_within_its_session_keeps_its_partitions_and_nobody_else_moves():
    cluster = Cluster()
    a = Consumer(cluster, "a", instance_id="worker-1")
    b = Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    a_partitions, b_partitions = set(a.owned), set(b.owned)
    epoch = cluster.shard.groups[GROUP].group_epoch
    a.leave(static=True)
    cluster.tick(1_000)
    b.heartbeat()
    assert b.owned == b_partitions, "b does not get a's partitions while a may come back"
    restarted = Consumer(cluster, "a-after-restart", instance_id="worker-1")
    restarted.heartbeat()
    assert restarted.owned == a_partitions
    assert cluster.shard.groups[GROUP].group_epoch == epoch, "no new group epoch, no reassignment"
    settle(cluster, [restarted, b], rounds=2)
    assert restarted.owned == a_partitions and b.owned == b_partitions


def test_a_static_member_that_does_not_come_back_is_removed_after_its_session():
    cluster = Cluster()
    a = Consumer(cluster, "a", instance_id="worker-1")
    b = Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    a.leave(static=True)
    for _ in range(8):
        cluster.tick(500)
        b.heartbeat()
    assert b.owned == set(T)


def test_a_second_process_with_the_same_instance_id_is_refused_while_the_first_is_in_the_group():
    cluster = Cluster()
    Consumer(cluster, "a", instance_id="worker-1").heartbeat()
    duplicate = Consumer(cluster, "c", instance_id="worker-1")
    assert duplicate.heartbeat().error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert set(cluster.shard.groups[GROUP].members) == {"a"}


def test_a_heartbeat_under_another_instance_id_is_fenced():
    cluster = Cluster()
    a = Consumer(cluster, "a", instance_id="worker-1")
    a.heartbeat()
    assert a.heartbeat(instance_id="worker-2").error == ErrorCode.FENCED_INSTANCE_ID


def test_an_old_epoch_is_fenced_but_the_previous_one_is_accepted_when_its_answer_was_lost():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    assert a.epoch == 2
    # The answer that moved a from epoch 1 to 2 was lost: it asks again from epoch 1.
    assert cluster.shard.heartbeat(_at_epoch(a, 1), cluster.topics, 0, 0).response.error == ErrorCode.NONE
    assert a.heartbeat(epoch=7).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert a.epoch == JOIN_EPOCH and a.owned == set(), "a fenced member gives up everything and rejoins"


def _at_epoch(consumer, epoch):

    return HeartbeatRequest(GROUP, consumer.member_id, epoch, owned=as_mapping(consumer.owned))


def test_a_join_whose_answer_was_lost_is_sent_again_and_leaves_no_second_member():
    cluster = Cluster()
    a = Consumer(cluster, "a")
    a.heartbeat()
    a.epoch = JOIN_EPOCH  # as if the answer never came
    response = a.heartbeat()
    assert response.error == ErrorCode.NONE and list(cluster.shard.groups[GROUP].members) == ["a"]
    assert a.owned == set(T)


def test_an_unknown_member_is_told_to_rejoin_with_a_new_id():
    cluster = Cluster()
    ghost = Consumer(cluster, "ghost", epoch=3)
    assert ghost.heartbeat().error == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_regex_subscription_picks_up_a_topic_created_later_without_a_restart():
    cluster = Cluster(topics={"orders-eu": 2, "audit": 3})
    a = Consumer(cluster, "a", topics=(), regex=r"orders-.*")
    a.heartbeat()
    assert a.owned == {TopicPartition("orders-eu", 0), TopicPartition("orders-eu", 1)}
    cluster.topics["orders-us"] = 2
    cluster.topics["orders-eu"] = 3  # and a partition was added
    settle(cluster, [a], rounds=2)
    assert a.owned == {TopicPartition("orders-eu", p) for p in range(3)} | {
        TopicPartition("orders-us", p) for p in range(2)}


@pytest.mark.parametrize(("overrides", "error"), [
    ({"group_id": ""}, ErrorCode.INVALID_GROUP_ID),
    ({"member_id": ""}, ErrorCode.INVALID_REQUEST),
    ({"subscribed_topic_regex": "orders-("}, ErrorCode.INVALID_SUBSCRIPTION_REGEX),
    ({"server_assignor": "roundrobin"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
    ({"subscribed_topic_names": None, "subscribed_topic_regex": None}, ErrorCode.INVALID_REQUEST),
    ({"member_epoch": -5}, ErrorCode.INVALID_REQUEST),
])
def test_bad_heartbeats_are_refused_with_a_reason(overrides, error):
    cluster = Cluster()
    response = Consumer(cluster, "a").heartbeat(**overrides)
    assert response.error == error and response.message
    assert GROUP not in cluster.shard.groups


def test_commits_from_outside_the_group_only_while_it_is_empty():
    cluster = Cluster()
    outside = CommitRequest(GROUP, "", -1, {T[0]: OffsetCommit(5)})
    outcome = cluster.write(cluster.shard.commit_offsets(outside, cluster.topics, 1_000))
    assert outcome.response[T[0]].error == ErrorCode.NONE and outcome.records
    assert cluster.shard.fetch_offsets(GROUP, [T[0], T[1]])[T[0]].offset == 5
    assert cluster.shard.fetch_offsets(GROUP, [T[1]])[T[1]].offset == -1
    Consumer(cluster, "a").heartbeat()
    refused = cluster.shard.commit_offsets(outside, cluster.topics, 2_000)
    assert refused.response[T[0]].error == ErrorCode.UNKNOWN_MEMBER_ID and not refused.records


def test_a_commit_with_a_stale_member_epoch_is_refused_and_one_for_a_missing_partition_too():
    cluster = Cluster()
    a, b = Consumer(cluster, "a"), Consumer(cluster, "b")
    settle(cluster, [a, b], rounds=3)
    stale = CommitRequest(GROUP, "a", a.epoch - 1, {T[0]: OffsetCommit(1)})
    assert cluster.shard.commit_offsets(stale, cluster.topics, 0).response[T[0]].error == ErrorCode.STALE_MEMBER_EPOCH
    missing = TopicPartition("t", 99)
    mixed = CommitRequest(GROUP, "a", a.epoch, {T[0]: OffsetCommit(1), missing: OffsetCommit(1)})
    outcome = cluster.shard.commit_offsets(mixed, cluster.topics, 0).response
    assert outcome[T[0]].error == ErrorCode.NONE
    assert outcome[missing].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "t-99" in outcome[missing].message


def test_a_new_coordinator_that_replays_the_log_has_the_same_groups_and_offsets():
    cluster = Cluster(topics={"t": 6, "u": 4})
    consumers = [Consumer(cluster, name, topics=("t", "u"), instance_id="s" if name == "c" else None)
                 for name in "abc"]
    settle(cluster, consumers, rounds=4)
    consumers[0].leave()
    settle(cluster, consumers[1:], rounds=3)
    cluster.write(cluster.shard.commit_offsets(CommitRequest(GROUP, "b", consumers[1].epoch,
                                                             {T[2]: OffsetCommit(42, 3, "meta")}), cluster.topics, 7))
    replayed = cluster.replayed()
    assert replayed.describe_group(GROUP) == cluster.shard.describe_group(GROUP)
    assert replayed.fetch_offsets(GROUP, None) == cluster.shard.fetch_offsets(GROUP, None)
    assert replayed.groups[GROUP].owners == cluster.shard.groups[GROUP].owners
    # The consumers carry on with the new coordinator as if nothing happened.
    cluster.shard = replayed
    settle(cluster, consumers[1:], rounds=2)
    assert_one_owner_each(consumers)
    assert {tp for c in consumers[1:] for tp in c.owned} == {TopicPartition(t, p) for t, n in cluster.topics.items()
                                                            for p in range(n)}


def test_deleting_a_group_needs_it_empty_and_takes_its_offsets():
    cluster = Cluster()
    a = Consumer(cluster, "a")
    a.heartbeat()
    cluster.write(cluster.shard.commit_offsets(CommitRequest(GROUP, "a", a.epoch, {T[0]: OffsetCommit(3)}),
                                               cluster.topics, 0))
    assert cluster.shard.delete_groups([GROUP]).response[GROUP][0] == ErrorCode.NON_EMPTY_GROUP
    assert cluster.shard.delete_groups(["nope"]).response["nope"][0] == ErrorCode.GROUP_ID_NOT_FOUND
    a.leave()
    deleted = cluster.write(cluster.shard.delete_groups([GROUP]))
    assert deleted.response[GROUP][0] == ErrorCode.NONE
    assert GROUP not in cluster.shard.groups and cluster.shard.fetch_offsets(GROUP, None) == {}
    assert cluster.replayed().list_groups() == []


def test_offsets_of_a_subscribed_topic_are_not_deleted():
    cluster = Cluster(topics={"t": 6, "old": 1})
    a = Consumer(cluster, "a")
    a.heartbeat()
    offsets = {T[0]: OffsetCommit(3), TopicPartition("old", 0): OffsetCommit(9)}
    cluster.write(cluster.shard.commit_offsets(CommitRequest(GROUP, "a", a.epoch, offsets), cluster.topics, 0))
    whole, outcomes = cluster.write(cluster.shard.delete_offsets(GROUP, list(offsets))).response
    assert outcomes[T[0]].error == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    assert outcomes[TopicPartition("old", 0)].error == ErrorCode.NONE
    assert set(cluster.shard.fetch_offsets(GROUP, None)) == {T[0]}


def test_the_offsets_of_an_empty_group_expire_after_the_retention_and_the_group_goes():
    cluster = Cluster()
    day_ms = 24 * 3_600_000
    a = Consumer(cluster, "a")
    a.heartbeat()
    cluster.write(cluster.shard.commit_offsets(CommitRequest(GROUP, "a", a.epoch, {T[0]: OffsetCommit(3)}),
                                               cluster.topics, 0))
    a.leave()
    cluster.write(cluster.shard.expire_offsets(6 * day_ms))
    assert cluster.shard.fetch_offsets(GROUP, None)
    cluster.write(cluster.shard.expire_offsets(8 * day_ms))
    assert cluster.shard.fetch_offsets(GROUP, None) == {} and GROUP not in cluster.shard.groups


def test_the_group_state_table_covers_every_state():
    assert {state for state, _ in GROUP_TRANSITIONS} | {s for targets in GROUP_TRANSITIONS.values() for s in targets} \
        == set(GroupState)
    assert GROUP_TRANSITIONS[(GroupState.EMPTY, GroupEvent.DELETED)] == {GroupState.DEAD}


def test_many_members_joining_and_leaving_never_share_a_partition():
    cluster = Cluster(topics={"t": 12})
    consumers = [Consumer(cluster, f"m{i}") for i in range(4)]
    settle(cluster, consumers[:1], rounds=1)
    for joined in range(2, 5):
        settle(cluster, consumers[:joined], rounds=3)
    consumers[1].leave()
    settle(cluster, [c for c in consumers if c is not consumers[1]], rounds=4)
    held = owners(consumers)
    assert sorted(held) == [TopicPartition("t", p) for p in range(12)]
    assert sorted(len(c.owned) for c in consumers if c is not consumers[1]) == [4, 4, 4]
