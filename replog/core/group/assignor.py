"""The server-side partition assignors of KIP-848: a group's target assignment from its members' subscriptions.

The coordinator computes one target assignment per group epoch and the members
converge on it one heartbeat at a time. Two assignors, as Kafka names them in
`group.consumer.assignors` (the first is the default):

    uniform   balanced first, then sticky: the fewest partitions change owner
    range     per topic, contiguous ranges in member order, so that topics with
              the same partition count and subscribers are co-partitioned

Both are pure functions of the members, the topics' partition counts and, for
uniform, the previous target. Topics absent from the partition counts (not
created yet, or deleted) are left out of every subscription. A member's rack
is carried but not used: Kafka's rack-aware preference (a member whose rack
holds a replica of the partition) needs the replicas' racks, which the
assignors are not given.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from ..invariant import require
from .assignor_range import range_assignment
from .assignor_uniform import uniform_assignment


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    member_id: str
    instance_id: str | None  # group.instance.id (static member), or None
    rack_id: str | None
    topics: frozenset[str]  # the topics this member subscribes to, already resolved (names and regex matches)


# member id -> topic -> partition indexes
Assignment = Mapping[str, Mapping[str, frozenset[int]]]

UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)  # the first is the default (Kafka's group.consumer.assignors)


def assign(assignor: str, members: Mapping[str, MemberSubscription],
           partition_counts: Mapping[str, int], current: Assignment) -> dict[str, dict[str, frozenset[int]]]:
    """The target assignment: every partition of every topic some member subscribes to (and that exists
    in partition_counts) goes to exactly one member subscribing to its topic; `current` is the previous
    target assignment, which a sticky assignor keeps where it can. Every member of `members` has an
    entry (possibly empty). Deterministic: the same inputs give the same result (no randomness, no
    dependence on dict order beyond sorting by id)."""
    # The coordinator answers UNSUPPORTED_ASSIGNOR before it gets here.
    require(assignor in ASSIGNORS, "unknown assignor %r, not one of %s", assignor, ASSIGNORS)
    for member_id, subscription in members.items():
        require(subscription.member_id == member_id, "member %r is filed under %r", subscription.member_id, member_id)
    topics_by_member = {member_id: frozenset(topic for topic in subscription.topics if topic in partition_counts)
                        for member_id, subscription in members.items()}
    if assignor == UNIFORM:
        target = uniform_assignment(topics_by_member, partition_counts, current)
    else:
        instance_ids = {member_id: subscription.instance_id for member_id, subscription in members.items()}
        target = range_assignment(topics_by_member, instance_ids, partition_counts)
    _require_complete(target, topics_by_member, partition_counts)
    return target


def _require_complete(target: Assignment, topics_by_member: Mapping[str, frozenset[str]],
                      partition_counts: Mapping[str, int]) -> None:
    """Each member has an entry, holds only topics it subscribes to, and each partition of a subscribed
    topic has exactly one owner: a target breaking this would give a partition to two consumers or none."""
    require(target.keys() == topics_by_member.keys(), "the target names other members than the group")
    owned: dict[str, set[int]] = {}
    for member_id, by_topic in target.items():
        for topic, partitions in by_topic.items():
            require(topic in topics_by_member[member_id], "member %s was given %s, which it does not subscribe to",
                    member_id, topic)
            seen = owned.setdefault(topic, set())
            before = len(seen)
            seen.update(partitions)
            require(len(seen) == before + len(partitions), "a partition of %s went to two members", topic)
    for topic in set().union(*topics_by_member.values()):
        require(owned.get(topic, set()) == set(range(partition_counts[topic])),
                "the partitions of %s are not each given to one member", topic)
