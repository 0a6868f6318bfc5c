"""The client's metadata snapshot: merged from answers, leader epochs never go back."""

from replog.api.common.v1 import common_pb2
from replog.client.cluster import ClusterMetadata
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from tests.client.helpers import metadata, metadata_response

TP = TopicPartition("t", 0)


def test_an_answer_fills_brokers_controller_and_partitions():
    snapshot = metadata({"t": [(1, 3), (2, 0)]})
    assert snapshot.brokers == {1: "127.0.0.1:9101", 2: "127.0.0.1:9102", 3: "127.0.0.1:9103"}
    assert snapshot.controller_address == "127.0.0.1:9001"
    assert snapshot.partition_count("t") == 2
    assert snapshot.leader_of(TP) == 1 and snapshot.leader_epoch_of(TP) == 3
    assert snapshot.partition_count("missing") is None and snapshot.leader_of(TopicPartition("x", 0)) == -1


def test_brokers_racks_are_kept_for_those_that_set_one():
    response = metadata_response({"t": [(1, 0)]})
    response.brokers[0].rack, response.brokers[2].rack = "zone-a", "zone-c"
    snapshot = ClusterMetadata().with_response(response, all_topics=True)
    assert snapshot.racks == {1: "zone-a", 3: "zone-c"}
    endpoint = common_pb2.BrokerEndpoint(broker_id=7, host="10.0.0.7", port=9092, rack="zone-b")
    assert snapshot.with_leader_hint(TP, 7, 1, [endpoint]).racks == {1: "zone-a", 3: "zone-c", 7: "zone-b"}


def test_a_leader_that_is_not_a_live_broker_is_no_leader():
    snapshot = metadata({"t": [(1, 0), (4, 0), (-1, 0)]})
    assert snapshot.leader_of(TopicPartition("t", 1)) == -1
    assert snapshot.leader_of(TopicPartition("t", 2)) == -1
    assert snapshot.available_partitions("t") == (0,)


def test_answers_about_some_topics_keep_the_others():
    snapshot = metadata({"a": [(1, 0)], "b": [(2, 0)]})
    updated = snapshot.with_response(metadata_response({"a": [(3, 1)]}), all_topics=False)
    assert set(updated.topics) == {"a", "b"}
    assert updated.leader_of(TopicPartition("a", 0)) == 3


def test_an_answer_about_every_topic_drops_deleted_ones():
    snapshot = metadata({"a": [(1, 0)], "b": [(2, 0)]})
    assert set(snapshot.with_response(metadata_response({"a": [(1, 0)]}), all_topics=True).topics) == {"a"}


def test_an_older_leader_epoch_from_a_lagging_metadata_replica_is_ignored():
    snapshot = metadata({"t": [(2, 5)]})
    lagging = snapshot.with_response(metadata_response({"t": [(1, 4)]}), all_topics=False)
    assert lagging.leader_of(TP) == 2 and lagging.leader_epoch_of(TP) == 5
    newer = snapshot.with_response(metadata_response({"t": [(3, 6)]}), all_topics=False)
    assert newer.leader_of(TP) == 3 and newer.leader_epoch_of(TP) == 6


def test_a_recreated_topic_starts_over_with_its_own_epochs():
    snapshot = metadata({"t": [(2, 5)]})
    response = metadata_response({"t": [(1, 0)]})
    response.topics[0].topic_id = "a-new-id"
    recreated = snapshot.with_response(response, all_topics=False)
    assert recreated.leader_epoch_of(TP) == 0 and recreated.leader_of(TP) == 1


def test_an_unknown_topic_is_remembered_with_its_error():
    snapshot = ClusterMetadata().with_response(metadata_response({}, unknown=["nope"]), all_topics=False)
    assert snapshot.topic_errors["nope"].error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "nope" not in snapshot.topics
    created = snapshot.with_response(metadata_response({"nope": [(1, 0)]}), all_topics=False)
    assert "nope" not in created.topic_errors and created.partition_count("nope") == 1


def test_a_leader_hint_with_a_newer_epoch_moves_the_leader_and_learns_its_address():
    snapshot = metadata({"t": [(1, 2)]}, brokers=(1, 2))
    endpoint = common_pb2.BrokerEndpoint(broker_id=7, host="10.0.0.7", port=9092)
    hinted = snapshot.with_leader_hint(TP, 7, 3, [endpoint])
    assert hinted.leader_of(TP) == 7 and hinted.leader_epoch_of(TP) == 3
    assert hinted.brokers[7] == "10.0.0.7:9092"


def test_a_leader_hint_that_is_not_newer_or_has_no_address_changes_nothing():
    snapshot = metadata({"t": [(1, 2)]}, brokers=(1, 2))
    assert snapshot.with_leader_hint(TP, 2, 2, []) is snapshot
    assert snapshot.with_leader_hint(TP, 9, 5, []) is snapshot
    assert snapshot.with_leader_hint(TP, -1, 5, []) is snapshot
