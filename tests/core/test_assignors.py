"""The server-side assignors of KIP-848: given a group, its topics and its previous target, the next target.

Every partition a member subscribes to has exactly one owner who subscribes to
it; uniform is balanced and moves only what balance needs; range lays topics
out in ranges that line up across co-partitioned topics.
"""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.group.assignor import ASSIGNORS, RANGE, UNIFORM, MemberSubscription, assign
from replog.core.invariant import InvariantViolation

TOPICS = ("t0", "t1", "t2", "t3")
NOT_CREATED = "not-created"  # a topic members subscribe to before it exists
DEPARTED = "departed"  # a member of the previous target that has left

fast = settings(max_examples=60, deadline=None)


def subscription(member_id, *topics, instance_id=None):
    return MemberSubscription(member_id, instance_id, None, frozenset(topics))


def group(subscriptions, instance_ids=None):
    """Members from {member id: topics}."""
    instance_ids = instance_ids or {}
    return {member_id: subscription(member_id, *topics, instance_id=instance_ids.get(member_id))
            for member_id, topics in subscriptions.items()}


def owners(target):
    return {(topic, partition): member_id
            for member_id, by_topic in target.items()
            for topic, partitions in by_topic.items()
            for partition in partitions}


def sizes(target):
    return {member_id: sum(map(len, by_topic.values())) for member_id, by_topic in target.items()}


def moved(before, after):
    """The partitions that belonged to a member before and belong to another one now."""
    now = owners(after)
    return {key: (member_id, now.get(key)) for key, member_id in owners(before).items() if now.get(key) != member_id}


@st.composite
def previous_targets(draw, member_ids, messy):
    """A previous target over the members, some departed member and partitions that may no longer
    exist; `messy` adds what a correct target never holds: a partition named twice, a negative index."""
    target = {}
    for topic in TOPICS:
        for partition, member_id in enumerate(draw(st.lists(st.sampled_from([*member_ids, DEPARTED, None]),
                                                            max_size=14))):
            if member_id is not None:
                target.setdefault(member_id, {}).setdefault(topic, set()).add(partition)
    if messy:
        for member_id, topic, partition in draw(st.lists(st.tuples(
                st.sampled_from(member_ids), st.sampled_from(TOPICS), st.integers(-2, 14)), max_size=10)):
            target.setdefault(member_id, {}).setdefault(topic, set()).add(partition)
    return {member_id: {topic: frozenset(partitions) for topic, partitions in by_topic.items()}
            for member_id, by_topic in target.items()}


@st.composite
def groups(draw, same_subscriptions=False, messy=False):
    """(members, partition counts, previous target)."""
    partition_counts = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1))
    member_ids = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=8, unique=True))
    some_topics = st.frozensets(st.sampled_from([*TOPICS, NOT_CREATED]))
    shared = draw(some_topics)
    members = {}
    for number, member_id in enumerate(member_ids):
        instance_id = draw(st.sampled_from([None, f"instance-{number}"]))
        topics = shared if same_subscriptions else draw(some_topics)
        members[member_id] = MemberSubscription(member_id, instance_id, None, topics)
    return members, partition_counts, draw(previous_targets(member_ids, messy))


def subscribed_partitions(members, partition_counts):
    return {(topic, partition)
            for member in members.values() for topic in member.topics if topic in partition_counts
            for partition in range(partition_counts[topic])}


@fast
@given(st.sampled_from(ASSIGNORS), groups(messy=True))
def test_every_subscribed_partition_goes_to_exactly_one_member_subscribing_to_its_topic(assignor, case):
    members, partition_counts, current = case
    target = assign(assignor, members, partition_counts, current)
    given_out = [(topic, partition) for by_topic in target.values()
                 for topic, partitions in by_topic.items() for partition in partitions]
    assert Counter(given_out) == Counter(subscribed_partitions(members, partition_counts))


@fast
@given(st.sampled_from(ASSIGNORS), groups(messy=True))
def test_no_member_is_given_a_topic_it_does_not_subscribe_to(assignor, case):
    members, partition_counts, current = case
    target = assign(assignor, members, partition_counts, current)
    assert target.keys() == members.keys()
    for member_id, by_topic in target.items():
        assert by_topic.keys() <= members[member_id].topics
        assert all(by_topic.values())


@fast
@given(groups(same_subscriptions=True, messy=True))
def test_uniform_with_the_same_subscriptions_is_balanced(case):
    target = assign(UNIFORM, *case)
    assert max(sizes(target).values()) - min(sizes(target).values()) <= 1


@fast
@given(groups(same_subscriptions=True))
def test_uniform_keeps_in_place_every_partition_a_balanced_target_could_keep(case):
    members, partition_counts, current = case
    target = assign(UNIFORM, members, partition_counts, current)
    subscribed = subscribed_partitions(members, partition_counts)
    holding = Counter(member_id for key, member_id in owners(current).items() if key in subscribed)
    # The most a balanced target can keep: the members holding the most get the P mod M larger shares.
    quota, extra = divmod(len(subscribed), len(members))
    ranked = sorted((holding[member_id] for member_id in members), reverse=True)
    most_kept = sum(min(held, quota + (1 if rank < extra else 0)) for rank, held in enumerate(ranked))
    assert len(owners(target).items() & owners(current).items()) == most_kept


@fast
@given(groups(same_subscriptions=True), st.text("abcdefgh", min_size=1, max_size=3))
def test_a_member_joining_a_balanced_group_takes_only_the_partitions_balance_needs(case, newcomer):
    members, partition_counts, history = case
    if newcomer in members:
        return
    balanced = assign(UNIFORM, members, partition_counts, history)
    topics = next(iter(members.values())).topics
    joined = {**members, newcomer: MemberSubscription(newcomer, None, None, topics)}
    target = assign(UNIFORM, joined, partition_counts, balanced)
    changes = moved(balanced, target)
    assert {new_owner for _, new_owner in changes.values()} <= {newcomer}
    assert len(changes) == len(subscribed_partitions(members, partition_counts)) // len(joined)
    assert max(sizes(target).values()) - min(sizes(target).values()) <= 1


@fast
@given(groups(same_subscriptions=True), st.data())
def test_a_member_leaving_moves_only_its_own_partitions(case, data):
    members, partition_counts, history = case
    balanced = assign(UNIFORM, members, partition_counts, history)
    leaver = data.draw(st.sampled_from(sorted(members)))
    remaining = {member_id: member for member_id, member in members.items() if member_id != leaver}
    target = assign(UNIFORM, remaining, partition_counts, balanced)
    assert {old_owner for old_owner, _ in moved(balanced, target).values()} <= {leaver}
    if remaining:
        assert max(sizes(target).values()) - min(sizes(target).values()) <= 1


@fast
@given(st.sampled_from(ASSIGNORS), groups(messy=True))
def test_an_unchanged_group_keeps_its_target(assignor, case):
    members, partition_counts, history = case
    target = assign(assignor, members, partition_counts, history)
    assert assign(assignor, members, partition_counts, target) == target


@fast
@given(groups())
def test_uniform_with_mixed_subscriptions_leaves_no_move_that_would_narrow_a_gap(case):
    members, partition_counts, current = case
    target = assign(UNIFORM, members, partition_counts, current)
    size = sizes(target)
    for (topic, _), owner in owners(target).items():
        for member_id, member in members.items():
            if topic in member.topics:
                assert size[owner] - size[member_id] <= 1, (topic, owner, member_id)


def test_uniform_with_mixed_subscriptions_spreads_a_shared_topic_around_a_private_one():
    members = group({"a": ["shared", "private"], "b": ["shared"], "c": ["shared"]})
    target = assign(UNIFORM, members, {"shared": 6, "private": 3}, {})
    assert sizes(target) == {"a": 3, "b": 3, "c": 3}
    assert target["a"]["private"] == {0, 1, 2}


@fast
@given(st.sampled_from(ASSIGNORS), groups(messy=True), st.randoms(use_true_random=False))
def test_the_same_inputs_in_any_order_give_the_same_target(assignor, case, random):
    members, partition_counts, current = case

    def shuffled(mapping):
        items = list(mapping.items())
        random.shuffle(items)
        return dict(items)

    reordered_current = shuffled({member_id: shuffled({topic: frozenset(sorted(partitions, reverse=True))
                                                       for topic, partitions in by_topic.items()})
                                  for member_id, by_topic in current.items()})
    expected = assign(assignor, members, partition_counts, current)
    assert assign(assignor, shuffled(members), shuffled(partition_counts), reordered_current) == expected


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_topics_nobody_subscribes_to_or_not_created_are_not_assigned(assignor):
    members = group({"a": ["orders"], "b": [NOT_CREATED]})
    target = assign(assignor, members, {"orders": 2, "unwatched": 4}, {})
    assert target == {"a": {"orders": frozenset({0, 1})}, "b": {}}


def test_range_lays_seven_partitions_over_three_members_three_two_two():
    target = assign(RANGE, group({"c": ["t"], "a": ["t"], "b": ["t"]}), {"t": 7}, {})
    assert target == {"a": {"t": frozenset({0, 1, 2})}, "b": {"t": frozenset({3, 4})}, "c": {"t": frozenset({5, 6})}}


def test_range_puts_partition_i_of_co_partitioned_topics_on_one_member():
    members = group({member_id: ["clicks", "views"] for member_id in ("m1", "m2", "m3", "m4")})
    target = assign(RANGE, members, {"clicks": 10, "views": 10}, {})
    for by_topic in target.values():
        assert by_topic["clicks"] == by_topic["views"]
    assert [len(target[member_id]["clicks"]) for member_id in sorted(target)] == [3, 3, 2, 2]


def test_range_with_mixed_subscriptions_ranges_each_topic_over_its_own_subscribers():
    members = group({"a": ["x", "y"], "b": ["x"], "c": ["y"]})
    target = assign(RANGE, members, {"x": 3, "y": 4}, {})
    assert target == {"a": {"x": frozenset({0, 1}), "y": frozenset({0, 1})},
                      "b": {"x": frozenset({2})},
                      "c": {"y": frozenset({2, 3})}}


def test_range_gives_a_static_member_its_ranges_back_when_it_returns_under_a_new_member_id():
    before = group({"m-9": ["t"], "m-5": ["t"]}, instance_ids={"m-9": "consumer-1", "m-5": "consumer-2"})
    target = assign(RANGE, before, {"t": 4}, {})
    assert target["m-9"] == {"t": frozenset({0, 1})}
    after = group({"m-1": ["t"], "m-5": ["t"]}, instance_ids={"m-1": "consumer-1", "m-5": "consumer-2"})
    assert assign(RANGE, after, {"t": 4}, target)["m-1"] == {"t": frozenset({0, 1})}


def test_range_puts_static_members_before_dynamic_ones():
    members = group({"a": ["t"], "z": ["t"]}, instance_ids={"z": "consumer-1"})
    assert assign(RANGE, members, {"t": 3}, {}) == {"z": {"t": frozenset({0, 1})}, "a": {"t": frozenset({2})}}


def test_an_unknown_assignor_is_a_bug_the_coordinator_answers_before():
    with pytest.raises(InvariantViolation):
        assign("roundrobin", group({"a": ["t"]}), {"t": 1}, {})


def test_an_empty_group_has_an_empty_target():
    assert assign(UNIFORM, {}, {"t": 3}, {"gone": {"t": frozenset({0})}}) == {}
