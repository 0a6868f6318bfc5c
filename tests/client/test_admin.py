"""The admin client against an in-process cluster."""

import pytest

from replog.client import Admin, AdminError, ClusterUnreachableError, NewTopic, UnknownTopicError
from replog.core.errors import ErrorCode


def test_created_topics_are_described_with_their_partitions(fake):
    with Admin(fake.bootstrap) as admin:
        created = admin.create_topics([NewTopic("a", num_partitions=3, replication_factor=2)])
        assert created["a"].num_partitions == 3 and created["a"].replication_factor == 2
        [described] = admin.describe_topics(["a"])
        assert [p.partition for p in described.partitions] == [0, 1, 2]
        assert all(len(p.replicas) == 2 and p.leader == p.replicas[0] for p in described.partitions)
        assert admin.list_topics() == ["a"]


def test_an_existing_topic_is_an_error_naming_the_code(fake):
    fake.state.create("a", 1)
    with Admin(fake.bootstrap) as admin:
        with pytest.raises(AdminError) as raised:
            admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)])
    assert raised.value.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert set(raised.value.errors) == {"a"} and set(raised.value.created) == {"b"}


def test_not_controller_answers_are_retried_after_a_metadata_refresh(fake):
    fake.controller.not_controller_answers = 2
    with Admin(fake.bootstrap, retry_backoff_ms=10) as admin:
        assert "a" in admin.create_topics([NewTopic("a", 1, 1)])


def test_a_replica_assignment_is_sent_instead_of_counts(fake):
    with Admin(fake.bootstrap) as admin:
        created = admin.create_topics([NewTopic("a", replica_assignment={0: [1, 2], 1: [2, 3]})])
    assert created["a"].num_partitions == 2


def test_validate_only_creates_nothing(fake):
    with Admin(fake.bootstrap) as admin:
        admin.create_topics([NewTopic("a", 1, 1)], validate_only=True)
        assert admin.list_topics() == []


def test_describing_a_missing_topic_raises_unknown_topic(fake):
    with Admin(fake.bootstrap) as admin:
        with pytest.raises(UnknownTopicError, match="'nope' does not exist"):
            admin.describe_topics(["nope"])


def test_an_unreachable_cluster_is_reported():
    with Admin("127.0.0.1:1", request_timeout_ms=500) as admin:
        with pytest.raises(ClusterUnreachableError, match="127.0.0.1:1"):
            admin.list_topics()
