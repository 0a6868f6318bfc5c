"""New topics: Kafka's placement (leaders spread evenly, rack-aware) and the checks a topic must pass."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.outcome import Rejection
from replog.core.placement import assign_replicas
from replog.core.topic_plan import NewPartitions, NewTopic, TopicDefaults, plan_new_partitions, plan_topic

DEFAULTS = TopicDefaults(num_partitions=1, replication_factor=1)
THREE = {1: None, 2: None, 3: None}


def plan(topic, brokers=THREE, existing=()):
    return plan_topic(topic, brokers=brokers, existing_topics=existing, defaults=DEFAULTS,
                      start_index=0, replica_shift=0)


# -- placement -----------------------------------------------------------------------------------


def test_six_partitions_on_three_brokers_lead_two_each_with_distinct_replicas():
    placement = assign_replicas(THREE, 6, 3, start_index=1, replica_shift=2)
    assert sorted(placement) == list(range(6))
    assert all(len(set(r)) == 3 for r in placement.values())
    assert Counter(r[0] for r in placement.values()) == {1: 2, 2: 2, 3: 2}


@given(brokers=st.integers(1, 9), partitions=st.integers(1, 60), data=st.data())
def test_leaders_are_spread_evenly_and_replicas_never_repeat(brokers, partitions, data):
    factor = data.draw(st.integers(1, brokers))
    start, shift = data.draw(st.integers(0, brokers - 1)), data.draw(st.integers(0, brokers - 1))
    placement = assign_replicas({b: None for b in range(1, brokers + 1)}, partitions, factor,
                                start_index=start, replica_shift=shift)
    leaders = Counter(r[0] for r in placement.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in range(1, brokers + 1)) <= 1
    assert all(len(r) == factor and len(set(r)) == factor for r in placement.values())


def test_with_racks_every_partition_spans_as_many_racks_as_it_can():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    placement = assign_replicas(racks, 12, 3, start_index=0, replica_shift=0)
    assert all(len({racks[b] for b in r}) == 3 for r in placement.values())
    assert Counter(r[0] for r in placement.values()) == {b: 2 for b in racks}

    two_racks = {1: "a", 2: "a", 3: "a", 4: "b"}
    for replicas in assign_replicas(two_racks, 8, 3, start_index=0, replica_shift=0).values():
        assert {two_racks[b] for b in replicas} == {"a", "b"}


# -- validation of new topics --------------------------------------------------------------------


@pytest.mark.parametrize("topic, error", [
    (NewTopic("orders", 3, 4), ErrorCode.INVALID_REPLICATION_FACTOR),
    (NewTopic("orders", 3, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (NewTopic("orders", 0, 1), ErrorCode.INVALID_PARTITIONS),
    (NewTopic("orders", 5000, 1), ErrorCode.INVALID_PARTITIONS),
    (NewTopic("bad name", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (NewTopic("x" * 250, 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (NewTopic("..", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (NewTopic("", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (NewTopic("taken", 1, 1), ErrorCode.TOPIC_ALREADY_EXISTS),
    (NewTopic("my.topic", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),  # collides with my_topic
    (NewTopic("orders", 1, 1, configs={"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
    (NewTopic("orders", 1, 1, configs={"no.such.config": "1"}), ErrorCode.INVALID_CONFIG),
    (NewTopic("orders", 1, 1, configs={"min.insync.replicas": "0"}), ErrorCode.INVALID_CONFIG),
    (NewTopic("orders", 2, -1, assignments=((0, (1,)), (1, (2,)))), ErrorCode.INVALID_REQUEST),
    (NewTopic("orders", assignments=((0, (1, 2)), (2, (2, 3)))), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (NewTopic("orders", assignments=((0, (1, 1)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (NewTopic("orders", assignments=((0, (1, 9)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (NewTopic("orders", assignments=((0, (1, 2)), (1, (3,)))), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (NewTopic("orders", assignments=((0, (1,)), (0, (2,)))), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_a_bad_topic_is_refused_with_kafkas_error_and_a_sentence(topic, error):
    outcome = plan(topic, existing=("taken", "my_topic"))
    assert isinstance(outcome, Rejection)
    assert outcome.error == error
    assert len(outcome.message) > 10


def test_defaults_and_explicit_assignments_are_honoured():
    outcome = plan_topic(NewTopic("orders"), brokers=THREE, existing_topics=(),
                         defaults=TopicDefaults(num_partitions=4, replication_factor=2),
                         start_index=0, replica_shift=0)
    assert not isinstance(outcome, Rejection)
    assert len(outcome.replicas) == 4 and outcome.replication_factor == 2

    explicit = plan(NewTopic("orders", assignments=((1, (3, 1)), (0, (2, 3)))))
    assert not isinstance(explicit, Rejection)
    assert explicit.replicas == {0: (2, 3), 1: (3, 1)}


# -- growing a topic (CreatePartitions) ----------------------------------------------------------


def grow(count, current=None, requested=(), reassigning=False):
    current = current or {0: (2, 3), 1: (3, 1)}
    return plan_new_partitions(NewPartitions("orders", count, requested), current, reassigning=reassigning,
                               brokers=THREE, replica_shift=0)


def test_new_partitions_continue_the_round_robin_from_the_leader_of_partition_0():
    assert grow(4) == {2: (1, 2), 3: (2, 1)}  # leaders 1 and 2 after 2 and 3; the followers shift


def test_explicit_replicas_of_new_partitions_are_taken_as_given():
    assert grow(3, requested=((2, (1, 3)),)) == {2: (1, 3)}


@pytest.mark.parametrize("count, requested, reassigning, error", [
    (2, (), False, ErrorCode.INVALID_PARTITIONS),  # not larger
    (2 + 2001, (), False, ErrorCode.INVALID_PARTITIONS),
    (3, (), True, ErrorCode.REASSIGNMENT_IN_PROGRESS),
    (3, ((3, (1, 2)),), False, ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # not the next partition
    (3, ((2, (1,)),), False, ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # fewer replicas than the topic has
    (3, ((2, (1, 1)),), False, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (3, ((2, (1, 9)),), False, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_a_bad_growth_is_refused_with_kafkas_error_and_a_sentence(count, requested, reassigning, error):
    outcome = grow(count, requested=requested, reassigning=reassigning)
    assert isinstance(outcome, Rejection) and outcome.error == error and len(outcome.message) > 10
