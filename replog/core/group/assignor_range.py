"""The range assignor: each topic's partitions in contiguous ranges over its subscribers, in member order.

A topic of P partitions with S subscribers gives each ⌊P/S⌋ partitions and the
first P mod S one more: 7 partitions over a, b, c are a: 0-2, b: 3-4, c: 5-6.
Every topic walks the same member order, so topics with the same partition
count and the same subscribers put partition i on the same member: a join of
such topics finds both sides in one consumer.

Kafka's server range assignor recomputes the layout each time rather than
keeping the previous target: stickiness and co-partitioning pull apart. What
keeps it stable is the order: static members (group.instance.id) come first,
by instance id, then the others by member id. A static member that restarts
comes back under a new member id but the same instance id, so it gets its
ranges back as long as the group and the topics are unchanged.
"""

from collections.abc import Mapping


def range_assignment(topics_by_member: Mapping[str, frozenset[str]], instance_ids: Mapping[str, str | None],
                     partition_counts: Mapping[str, int]) -> dict[str, dict[str, frozenset[int]]]:
    """The range target for members subscribing to `topics_by_member` (existing topics only)."""
    order = sorted(topics_by_member, key=lambda member_id: _member_order_key(member_id, instance_ids[member_id]))
    subscribers: dict[str, list[str]] = {}
    for member_id in order:
        for topic in topics_by_member[member_id]:
            subscribers.setdefault(topic, []).append(member_id)
    target: dict[str, dict[str, frozenset[int]]] = {member_id: {} for member_id in order}
    for topic, members in subscribers.items():
        quota, extra = divmod(partition_counts[topic], len(members))
        start = 0
        for rank, member_id in enumerate(members):
            end = start + quota + (1 if rank < extra else 0)
            if end > start:
                target[member_id][topic] = frozenset(range(start, end))
            start = end
    return target


def _member_order_key(member_id: str, instance_id: str | None) -> tuple[int, str, str]:
    """Static members first, by instance id; then dynamic members, by member id."""
    return (0, instance_id, member_id) if instance_id is not None else (1, member_id, "")
