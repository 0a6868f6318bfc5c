"""The uniform assignor (Kafka's default): balanced first, then sticky.

Balance. When every member subscribes to the same topics, each of M members
gets ⌊P/M⌋ or ⌈P/M⌉ of the P partitions. When subscriptions differ, each
partition goes to a subscriber of its topic and the totals are evened out as
far as the subscriptions allow: in the result no partition could move to
another subscriber of its topic and narrow the gap between the two.

Stickiness. A partition of the previous target stays with its owner while the
owner is still a member and still subscribes to the topic, unless balance
needs it elsewhere; only the partitions balance needs change owner. Members
are numbered by sorted member id, and every tie is broken by that number, so
the result depends on nothing but the inputs.
"""

from collections.abc import Mapping
from fractions import Fraction
from heapq import heapify, heappop, heappush, heapreplace

UNOWNED = -1


class _Placement:
    """Who owns each partition, kept both ways (per partition, and per member and topic), so that neither
    "who owns this partition" nor "which partition of this topic can that member give up" needs a scan."""

    __slots__ = ("owners", "held", "counts")

    def __init__(self, member_count: int, owners: dict[str, list[int]]) -> None:
        self.owners = owners  # topic -> the owner of each partition, a member number or UNOWNED
        self.held: list[dict[str, list[int]]] = [{} for _ in range(member_count)]
        self.counts = [0] * member_count
        for topic, row in owners.items():
            for partition, member in enumerate(row):
                if member != UNOWNED:
                    self._hold(member, topic, partition)

    def _hold(self, member: int, topic: str, partition: int) -> None:
        self.held[member].setdefault(topic, []).append(partition)
        self.counts[member] += 1

    def give(self, member: int, topic: str, partition: int) -> None:
        self.owners[topic][partition] = member
        self._hold(member, topic, partition)

    def take_back(self, member: int, topic: str) -> int:
        """Unowns and returns the partition of `topic` that `member` was given last."""
        partitions = self.held[member][topic]
        partition = partitions.pop()
        if not partitions:
            del self.held[member][topic]
        self.owners[topic][partition] = UNOWNED
        self.counts[member] -= 1
        return partition

    def unowned(self, topic: str) -> list[int]:
        return [partition for partition, member in enumerate(self.owners[topic]) if member == UNOWNED]


def uniform_assignment(topics_by_member: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int],
                       current: Mapping[str, Mapping[str, frozenset[int]]]) -> dict[str, dict[str, frozenset[int]]]:
    """The uniform target for members subscribing to `topics_by_member` (existing topics only)."""
    member_ids = sorted(topics_by_member)
    subscribers: dict[str, list[int]] = {}
    for member, member_id in enumerate(member_ids):
        for topic in topics_by_member[member_id]:
            subscribers.setdefault(topic, []).append(member)
    subscribed_counts = {topic: partition_counts[topic] for topic in sorted(subscribers)}
    placement = _Placement(len(member_ids), _kept_owners(member_ids, topics_by_member, subscribed_counts, current))
    if len(set(topics_by_member.values())) == 1:
        _balance_same_subscriptions(placement)
    else:
        _balance_mixed_subscriptions(placement, subscribers)
    return {member_id: {topic: frozenset(partitions) for topic, partitions in placement.held[member].items()}
            for member, member_id in enumerate(member_ids)}


def _kept_owners(member_ids: list[str], topics_by_member: Mapping[str, frozenset[str]],
                 partition_counts: Mapping[str, int],
                 current: Mapping[str, Mapping[str, frozenset[int]]]) -> dict[str, list[int]]:
    """The owner of each partition that the previous target gave to a member still subscribing to its topic.
    A partition it names twice (it should not) stays with the first of its owners by member id."""
    owners = {topic: [UNOWNED] * count for topic, count in partition_counts.items()}
    for member, member_id in enumerate(member_ids):
        for topic, partitions in current.get(member_id, {}).items():
            if topic not in topics_by_member[member_id]:
                continue
            row = owners[topic]
            for partition in partitions:
                if 0 <= partition < len(row) and row[partition] == UNOWNED:
                    row[partition] = member
    return owners


def _balance_same_subscriptions(placement: _Placement) -> None:
    """Every member takes its quota: members over it give up their last partitions, and members under
    it take the unowned partitions in topic and partition order."""
    partition_total = sum(len(row) for row in placement.owners.values())
    quotas = _quotas(placement.counts, partition_total)
    for member, quota in enumerate(quotas):
        while placement.counts[member] > quota:
            placement.take_back(member, next(reversed(placement.held[member])))
    unowned = iter([(topic, partition) for topic in placement.owners for partition in placement.unowned(topic)])
    for member, quota in enumerate(quotas):
        for _ in range(quota - placement.counts[member]):
            placement.give(member, *next(unowned))


def _quotas(held_counts: list[int], partition_total: int) -> list[int]:
    """⌊P/M⌋ partitions for each member, and the P mod M larger quotas for the members holding the most
    already: a larger quota keeps one more partition in place only for a member holding at least that
    many, so giving them to the fullest members moves the fewest partitions."""
    quota, extra = divmod(partition_total, len(held_counts))
    quotas = [quota] * len(held_counts)
    for member in sorted(range(len(held_counts)), key=lambda member: -held_counts[member])[:extra]:
        quotas[member] += 1
    return quotas


def _balance_mixed_subscriptions(placement: _Placement, subscribers: Mapping[str, list[int]]) -> None:
    """Hands the unowned partitions out topic by topic to the least loaded subscribers, then moves
    partitions from the most to the least loaded subscribers of each topic until a whole round over the
    topics moves none. Each move takes a partition from a member holding at least two more than its new
    owner, so the sum of the squared counts falls with every move: the rounds end, in practice after a
    few. (Kafka's uniform assignor stops after 16 rounds, which can leave a move that would still help.)"""
    topics = sorted(subscribers, key=lambda topic: _hand_out_order(topic, placement, subscribers))
    for topic in topics:
        _hand_out(placement, topic, subscribers[topic])
    shared = [topic for topic in topics if len(subscribers[topic]) > 1]
    moved = True
    while moved:
        moved = False
        for topic in shared:
            moved = _even_out(placement, topic, subscribers[topic]) or moved


def _hand_out_order(topic: str, placement: _Placement,
                    subscribers: Mapping[str, list[int]]) -> tuple[Fraction, int, str]:
    """Topics with the most partitions per subscriber first (they are the hardest to spread), then those
    with the fewest subscribers, then by name."""
    subscriber_count = len(subscribers[topic])
    return -Fraction(len(placement.owners[topic]), subscriber_count), subscriber_count, topic


def _hand_out(placement: _Placement, topic: str, members: list[int]) -> None:
    """Each unowned partition of `topic` goes to the subscriber holding the fewest partitions."""
    unowned = placement.unowned(topic)
    if not unowned:
        return
    least_loaded = [(placement.counts[member], member) for member in members]
    heapify(least_loaded)
    for partition in unowned:
        count, member = least_loaded[0]
        placement.give(member, topic, partition)
        heapreplace(least_loaded, (count + 1, member))


def _even_out(placement: _Placement, topic: str, members: list[int]) -> int:
    """Moves partitions of `topic` from its most loaded owner to its least loaded subscriber while they
    differ by two or more; returns how many moved. Heap entries whose count is out of date are skipped."""
    counts, held = placement.counts, placement.held
    least_loaded = [(counts[member], member) for member in members]
    most_loaded = [(-counts[member], member) for member in members if topic in held[member]]
    heapify(least_loaded)
    heapify(most_loaded)
    moved = 0
    while most_loaded:
        negative_count, giver = most_loaded[0]
        if -negative_count != counts[giver] or topic not in held[giver]:
            heappop(most_loaded)
            continue
        while least_loaded[0][0] != counts[least_loaded[0][1]]:
            heappop(least_loaded)
        count, taker = least_loaded[0]
        if counts[giver] - count <= 1:
            break
        placement.give(taker, topic, placement.take_back(giver, topic))
        moved += 1
        for member in (giver, taker):
            heappush(least_loaded, (counts[member], member))
            heappush(most_loaded, (-counts[member], member))
    return moved
