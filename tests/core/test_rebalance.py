"""The plan `replog reassign --generate` proposes: every partition keeps its replication factor on the
listed brokers, replicas and preferred leaders are spread evenly, and no replica moves that need not."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.placement import assign_replicas
from replog.core.rebalance import RebalanceError, balanced_assignment, moved_replicas
from replog.core.topic_partition import TopicPartition


def laid_out(brokers, partitions, factor, topic="t"):
    """A topic as the controller places it at creation."""
    return {TopicPartition(topic, p): replicas for p, replicas in
            assign_replicas(brokers, partitions, factor, start_index=0, replica_shift=0).items()}


def spread(plan, leaders=False):
    counts = Counter(replicas[0] for replicas in plan.values()) if leaders else Counter(
        b for replicas in plan.values() for b in replicas)
    return counts


def test_a_new_broker_gets_its_share_and_only_that_share_moves():
    current = laid_out(dict.fromkeys((1, 2, 3)), 12, 3)

    plan = balanced_assignment(current, dict.fromkeys((1, 2, 3, 4)))

    assert spread(plan) == {1: 9, 2: 9, 3: 9, 4: 9}
    assert spread(plan, leaders=True) == {1: 3, 2: 3, 3: 3, 4: 3}
    assert moved_replicas(current, plan) == 9, "36 replicas over 4 brokers: 9 land on the new one, none elsewhere"
    assert all(set(plan[tp]) - set(current[tp]) <= {4} for tp in plan)


def test_a_balanced_cluster_is_left_as_it_is():
    current = {**laid_out(dict.fromkeys((1, 2, 3, 4)), 8, 2, "a"), **laid_out(dict.fromkeys((1, 2, 3, 4)), 4, 3, "b")}
    assert balanced_assignment(current, dict.fromkeys((1, 2, 3, 4))) == current


def test_a_broker_left_out_of_the_list_is_emptied_and_the_others_share_its_replicas():
    current = laid_out(dict.fromkeys((1, 2, 3, 4)), 8, 2)

    plan = balanced_assignment(current, dict.fromkeys((1, 2, 3)))

    assert 4 not in spread(plan) and max(spread(plan).values()) - min(spread(plan).values()) <= 1
    assert moved_replicas(current, plan) == sum(4 in replicas for replicas in current.values())


def test_racks_stay_spread_when_a_rack_gains_brokers():
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    current = laid_out({b: racks[b] for b in (1, 2, 3)}, 9, 3)

    plan = balanced_assignment(current, racks)

    assert all(len({racks[b] for b in replicas}) == 3 for replicas in plan.values()), plan
    assert spread(plan) == dict.fromkeys(racks, 27 // 6) | {b: c for b, c in spread(plan).items() if c == 5}
    assert max(spread(plan).values()) - min(spread(plan).values()) <= 1


def test_a_replication_factor_above_the_broker_count_cannot_be_planned():
    with pytest.raises(RebalanceError, match="t-0 has 3 replicas but the broker list names only 2 brokers"):
        balanced_assignment(laid_out(dict.fromkeys((1, 2, 3)), 1, 3), dict.fromkeys((1, 2)))


def total_share(current, listed):
    return sum(len(replicas) for replicas in current.values()) // len(listed)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_plan_keeps_factors_uses_only_listed_brokers_balances_and_is_stable(data):
    known = list(range(1, data.draw(st.integers(2, 7)) + 1))
    current = {}
    for p in range(data.draw(st.integers(1, 25))):
        factor = data.draw(st.integers(1, len(known)))
        current[TopicPartition("t", p)] = tuple(data.draw(st.permutations(known))[:factor])
    largest = max(len(replicas) for replicas in current.values())
    listed = data.draw(st.lists(st.sampled_from(known + [8, 9]), min_size=largest, unique=True))
    brokers = dict.fromkeys(listed)

    plan = balanced_assignment(current, brokers)

    assert plan.keys() == current.keys()
    for tp, replicas in plan.items():
        assert len(replicas) == len(current[tp]) == len(set(replicas)) and set(replicas) <= set(listed)
    loads = spread(plan) | {b: 0 for b in listed if b not in spread(plan)}
    assert max(loads.values()) - min(loads.values()) <= 1
    kept = [b for tp, replicas in current.items() for b in replicas if b in brokers and b in plan[tp]]
    assert len(kept) >= sum(min(load, total_share(current, listed)) for load in Counter(
        b for replicas in current.values() for b in replicas if b in brokers).values()) - len(current), \
        "a listed broker keeps its replicas up to about its share"
    assert balanced_assignment(plan, brokers) == plan, "a plan's plan is itself"
