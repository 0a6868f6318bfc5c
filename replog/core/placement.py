"""Where a new partition's replicas go: Kafka's round-robin placement, rack-aware when every broker has a rack.

Pure: the caller draws the random start of the round robin (so that topics do
not all lead on one broker) and passes it in.
"""

from collections import Counter
from collections.abc import Mapping, Sequence

from .invariant import require


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int,
    replica_shift: int,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Kafka's placement: partition p's first replica (its preferred leader) is broker
    (p + start_index) mod n of the broker list, so leaders are spread evenly; the
    other replicas follow at a distance that shifts every n partitions, so that
    followers of one broker's leaderships are spread too. Partitions are numbered
    from first_partition (a topic that grows continues its round robin).

    When every broker has a rack, the broker list alternates racks and each
    partition takes replicas from racks holding the fewest of its replicas first,
    so a rack's loss takes at most ceil(RF / racks) replicas of any partition.
    """
    require(0 < replication_factor <= len(brokers), "replication factor %d with %d brokers",
            replication_factor, len(brokers))
    racks = {b: r for b, r in brokers.items() if r}
    rack_aware = len(racks) == len(brokers)
    ordered = broker_order(brokers)
    count = len(ordered)
    placement: dict[int, tuple[int, ...]] = {}
    shift = replica_shift
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        others = [ordered[(first + 1 + (shift + k) % (count - 1)) % count] for k in range(count - 1)]
        if rack_aware:
            replicas = _spread_over_racks(ordered[first], others, racks, replication_factor)
        else:
            replicas = [ordered[first], *others[: replication_factor - 1]]
        placement[partition] = tuple(replicas)
    return placement


def broker_order(brokers: Mapping[int, str | None]) -> list[int]:
    """The broker list placement walks: rack-alternated when every broker has a rack, else sorted."""
    racks = {b: r for b, r in brokers.items() if r}
    return _rack_alternated(racks) if len(racks) == len(brokers) else sorted(brokers)


def _rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered so that consecutive ones are on different racks: a1, b1, c1, a2, ..."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    return [column[i] for i in range(max(map(len, columns))) for column in columns if i < len(column)]


def _spread_over_racks(first: int, others: Sequence[int], racks: Mapping[int, str], factor: int) -> list[int]:
    chosen = [first]
    remaining = list(others)
    while len(chosen) < factor:
        per_rack = Counter(racks[b] for b in chosen)
        fewest = min(per_rack[racks[b]] for b in remaining)
        pick = next(b for b in remaining if per_rack[racks[b]] == fewest)
        chosen.append(pick)
        remaining.remove(pick)
    return chosen
