"""What the client sends to group coordinators and how it reads their answers: the wire's optional
fields ("absent: unchanged") and its sentinels (-1: nothing committed) mean what the proto says."""

from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.client.coordinator_requests import (
    commit_results,
    coordinator_found,
    described_groups,
    fetched_offsets,
    heartbeat_answer,
    heartbeat_request,
    listed_groups,
    offset_commit_request,
    offset_fetch_request,
)
from replog.client.membership import HeartbeatParams, Subscription
from replog.client.types import OffsetAndMetadata
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def test_a_joining_heartbeat_carries_everything():
    params = HeartbeatParams("m-1", 0, "i-1", frozenset(), 300_000, Subscription(topics=("t", "u")), "range")
    request = heartbeat_request("g", "client-1", params)
    assert (request.group_id, request.member_id, request.member_epoch, request.instance_id) == ("g", "m-1", 0, "i-1")
    assert list(request.subscribed_topic_names.names) == ["t", "u"]
    # An empty regex says "none", so a subscription by names replaces one by regex.
    assert request.HasField("subscribed_topic_regex") and request.subscribed_topic_regex == ""
    assert (request.server_assignor, request.rebalance_timeout_ms, request.client_id) == ("range", 300_000, "client-1")
    assert request.HasField("owned_partitions") and list(request.owned_partitions.topics) == []


def test_a_steady_heartbeat_leaves_out_what_did_not_change_but_always_says_what_it_owns():
    request = heartbeat_request("g", "c", HeartbeatParams("m-1", 4, None, frozenset({T1, T0, U0})))
    for field in ("instance_id", "subscribed_topic_names", "subscribed_topic_regex", "server_assignor"):
        assert not request.HasField(field), field
    assert request.rebalance_timeout_ms == 0
    assert [(t.topic, list(t.partitions)) for t in request.owned_partitions.topics] == [("t", [0, 1]), ("u", [0])]


def test_a_regex_subscription_replaces_the_topic_names():
    request = heartbeat_request("g", "c", HeartbeatParams("m", 3, None, frozenset(),
                                                          subscription=Subscription(regex="t.*")))
    assert request.subscribed_topic_regex == "t.*"
    assert request.HasField("subscribed_topic_names") and list(request.subscribed_topic_names.names) == []


def test_an_answer_without_an_assignment_means_unchanged_and_an_empty_one_means_none():
    unchanged = coordinator_pb2.ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.NONE), member_epoch=3,
                                                               heartbeat_interval_ms=500)
    assert heartbeat_answer(unchanged).assignment is None
    empty = coordinator_pb2.ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.NONE), member_epoch=3)
    empty.assignment.SetInParent()
    assert heartbeat_answer(empty).assignment == frozenset()
    answer = coordinator_pb2.ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.NONE), member_epoch=4,
                                                            heartbeat_interval_ms=500)
    answer.assignment.topics.add(topic="t", partitions=[1, 0])
    read = heartbeat_answer(answer)
    assert (read.error, read.member_epoch, read.heartbeat_interval_ms, read.assignment) == (
        ErrorCode.NONE, 4, 500, frozenset({T0, T1}))


def test_the_coordinator_is_read_from_the_answer_for_the_group():
    response = coordinator_pb2.FindCoordinatorResponse()
    found = response.coordinators.add(key="g", error_code=int(ErrorCode.NONE))
    found.coordinator.CopyFrom(common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=9102))
    assert coordinator_found(response, "g") == ((ErrorCode.NONE, ""), (2, "127.0.0.1:9102"))
    waiting = coordinator_pb2.FindCoordinatorResponse()
    waiting.coordinators.add(key="g", error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), error_message="retry")
    assert coordinator_found(waiting, "g") == ((ErrorCode.COORDINATOR_NOT_AVAILABLE, "retry"), None)


def test_commits_travel_by_topic_with_epoch_and_metadata_and_come_back_per_partition():
    request = offset_commit_request("g", "m", 7, {T1: OffsetAndMetadata(10, "note", 2), T0: OffsetAndMetadata(5)})
    assert (request.member_id, request.member_epoch) == ("m", 7)
    [topic] = request.topics
    assert [(p.partition, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
            for p in topic.partitions] == [(0, 5, -1, ""), (1, 10, 2, "note")]
    response = coordinator_pb2.OffsetCommitResponse()
    response.topics.add(topic="t").partitions.add(partition=0, error_code=int(ErrorCode.STALE_MEMBER_EPOCH),
                                                  error_message="older")
    assert commit_results(response) == {T0: (ErrorCode.STALE_MEMBER_EPOCH, "older")}


def test_fetched_offsets_say_none_where_nothing_was_committed():
    assert list(offset_fetch_request("g", None).topics) == []  # every partition with an offset
    assert not offset_fetch_request("g", None).require_stable
    assert offset_fetch_request("g", [T0], require_stable=True).require_stable
    response = coordinator_pb2.OffsetFetchResponse(error_code=int(ErrorCode.NONE))
    topic = response.topics.add(topic="t")
    topic.partitions.add(partition=0, error_code=int(ErrorCode.NONE), committed_offset=12, committed_leader_epoch=1,
                         committed_metadata="m")
    topic.partitions.add(partition=1, error_code=int(ErrorCode.NONE), committed_offset=-1)
    outcome, offsets, failed = fetched_offsets(response)
    assert outcome == (ErrorCode.NONE, "") and failed == {}
    assert offsets == {T0: OffsetAndMetadata(12, "m", 1), T1: None}


def test_groups_are_listed_and_described_with_kafkas_state_names():
    listing = coordinator_pb2.ListGroupsResponse(error_code=int(ErrorCode.NONE))
    listing.groups.add(group_id="g", group_type="consumer", group_state=coordinator_pb2.GROUP_STATE_RECONCILING)
    assert [(g.group_id, g.state, g.type) for g in listed_groups(listing)[1]] == [("g", "Reconciling", "consumer")]
    response = coordinator_pb2.DescribeGroupsResponse()
    group = response.groups.add(error_code=int(ErrorCode.NONE), group_id="g",
                                group_state=coordinator_pb2.GROUP_STATE_STABLE, group_epoch=3, assignment_epoch=3,
                                assignor_name="uniform")
    member = group.members.add(member_id="m", member_epoch=3, client_id="c", client_host="127.0.0.1",
                               subscribed_topic_names=["t"], member_state=coordinator_pb2.MEMBER_STATE_STABLE)
    member.assignment.add(topic="t", partitions=[0])
    member.target_assignment.add(topic="t", partitions=[0, 1])
    response.groups.add(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND), group_id="gone", error_message="no such group")
    described = described_groups(response, (1, "127.0.0.1:9101"))
    assert described["gone"] == ((ErrorCode.GROUP_ID_NOT_FOUND, "no such group"), None)
    (_, description) = described["g"]
    assert (description.state, description.group_epoch, description.assignor, description.coordinator_id) == (
        "Stable", 3, "uniform", 1)
    [m] = description.members
    assert (m.instance_id, m.subscribed_regex, m.assignment, m.target_assignment, m.state) == (
        None, None, frozenset({T0}), frozenset({T0, T1}), "Stable")
