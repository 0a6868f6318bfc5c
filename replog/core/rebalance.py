"""A reassignment plan that spreads partitions' replicas over a list of brokers, moving as few as it can.

What `replog reassign --generate` proposes when brokers join or leave. Kafka's
kafka-reassign-partitions lays every partition out anew, as for a new topic, so
that adding one broker moves most replicas; this plan keeps every replica that
may stay and moves only what the balance needs:

1. replicas on brokers outside the list are dropped, and each partition is filled
   back to its replication factor from the brokers holding the fewest replicas
   (on racks holding the fewest of its replicas, when every broker has a rack);
2. then, while one broker holds two replicas more than another, a replica moves
   from the fullest broker to the emptiest, taken from a partition the emptiest
   does not hold (one always exists) and, with racks, only where the partition
   keeps as many racks;
3. last, preferred leaders (each partition's first replica) are balanced by
   reordering replicas within partitions, which moves no data.

Pure and deterministic: the same input gives the same plan.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from .topic_partition import TopicPartition


class RebalanceError(ValueError):
    """The plan cannot be made; the message says why."""


def balanced_assignment(
    current: Mapping[TopicPartition, Sequence[int]],
    brokers: Mapping[int, str | None],
) -> dict[TopicPartition, tuple[int, ...]]:
    """Each partition's replicas (preferred leader first) spread over `brokers` (id -> rack or None).

    Every partition keeps its replication factor; RebalanceError when one is larger than the list.
    """
    if not brokers:
        raise RebalanceError("the broker list is empty")
    for tp, replicas in sorted(current.items()):
        if len(replicas) > len(brokers):
            raise RebalanceError(f"{tp} has {len(replicas)} replicas but the broker list names only {len(brokers)} "
                                 f"brokers")
    racks = {b: r for b, r in brokers.items() if r}
    rack_of = racks if len(racks) == len(brokers) else {}
    plan = {tp: [b for b in dict.fromkeys(replicas) if b in brokers] for tp, replicas in current.items()}
    load = Counter({b: 0 for b in brokers})
    load.update(b for replicas in plan.values() for b in replicas)
    for tp in sorted(plan):
        _fill(plan[tp], len(current[tp]), load, rack_of)
    order = sorted(plan)
    _spread_replicas(plan, order, load, rack_of)
    _spread_leaders(plan, order, brokers)
    return {tp: tuple(replicas) for tp, replicas in plan.items()}


def moved_replicas(current: Mapping[TopicPartition, Sequence[int]],
                   planned: Mapping[TopicPartition, Sequence[int]]) -> int:
    """How many replicas a plan creates on brokers that do not hold them yet: the data it copies."""
    return sum(len(set(planned[tp]) - set(current[tp])) for tp in planned)


def _fill(replicas: list[int], factor: int, load: Counter[int], rack_of: Mapping[int, str]) -> None:
    while len(replicas) < factor:
        on_rack = Counter(rack_of[b] for b in replicas) if rack_of else Counter()
        pick = min((b for b in load if b not in replicas),
                   key=lambda b: (on_rack[rack_of[b]] if rack_of else 0, load[b], b))
        replicas.append(pick)
        load[pick] += 1


def _spread_replicas(plan: dict[TopicPartition, list[int]], order: Sequence[TopicPartition], load: Counter[int],
                     rack_of: Mapping[int, str]) -> None:
    """Move replicas from the fullest brokers to the emptiest until no two differ by more than one (or, with
    racks, no move keeps a partition's racks). Each move lowers the sum of squared loads: it ends."""
    while True:
        by_load = sorted(load, key=lambda b: (load[b], b))
        move = next((found for high in reversed(by_load) for low in by_load if load[high] - load[low] > 1
                     if (found := _movable(plan, order, high, low, rack_of)) is not None), None)
        if move is None:
            return
        tp, high, low = move
        replicas = plan[tp]
        replicas[replicas.index(high)] = low
        load[high] -= 1
        load[low] += 1


def _movable(plan: Mapping[TopicPartition, list[int]], order: Sequence[TopicPartition], high: int, low: int,
             rack_of: Mapping[int, str]) -> tuple[TopicPartition, int, int] | None:
    """A partition whose replica on `high` may move to `low`: one `low` does not hold, that keeps its racks;
    a follower replica before a preferred leader's, so leadership moves less."""
    fits = [tp for tp in order if high in plan[tp] and low not in plan[tp]
            and (not rack_of or _racks_after(plan[tp], high, low, rack_of) >= len({rack_of[b] for b in plan[tp]}))]
    if not fits:
        return None
    followers = [tp for tp in fits if plan[tp][0] != high]
    return (followers or fits)[0], high, low


def _racks_after(replicas: Sequence[int], leaving: int, joining: int, rack_of: Mapping[int, str]) -> int:
    return len({rack_of[b] for b in replicas if b != leaving} | {rack_of[joining]})


def _spread_leaders(plan: dict[TopicPartition, list[int]], order: Sequence[TopicPartition],
                    brokers: Mapping[int, str | None]) -> None:
    """Give preferred leadership from brokers with the most to replicas of the same partition with the fewest,
    until no two brokers differ by more than one or no partition allows it: a reorder, no data moves."""
    leads = Counter({b: 0 for b in brokers})
    leads.update(replicas[0] for replicas in plan.values() if replicas)
    while True:
        by_leads = sorted(leads, key=lambda b: (leads[b], b))
        swap = next(((tp, high, low) for high in reversed(by_leads) for low in by_leads if leads[high] - leads[low] > 1
                     for tp in order if plan[tp] and plan[tp][0] == high and low in plan[tp]), None)
        if swap is None:
            return
        tp, high, low = swap
        replicas = plan[tp]
        replicas.remove(low)
        replicas.insert(0, low)
        leads[high] -= 1
        leads[low] += 1
