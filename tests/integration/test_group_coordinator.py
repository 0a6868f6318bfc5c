"""The group coordinator on real brokers, spoken to over its gRPC API as any client would.

Given a dev cluster, a group's coordinator is found (creating __consumer_offsets on first use),
members join and commit, and the coordinator's broker can die: its groups and committed offsets
come back on the partition's new leader.
"""

import urllib.request
import uuid

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.client import NewTopic
from replog.core.errors import ErrorCode
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

TOPIC = "group-input"


def sample(metrics_address, name, labels):
    """One labelled sample from a /metrics endpoint, or None."""
    try:
        with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return None


def broker_address(cluster, broker_id=None):
    brokers = [b for b in cluster.status()["brokers"] if b["alive"]]
    return next(b["address"] for b in brokers if broker_id is None or b["id"] == broker_id)


def find_coordinator(cluster, group, timeout_s=60):
    """(broker id, address) of the group's coordinator, asking any live broker until one answers."""
    def found():
        with grpc.insecure_channel(broker_address(cluster)) as channel:
            answer = cg.CoordinatorServiceStub(channel).FindCoordinator(
                cp.FindCoordinatorRequest(keys=[group], key_type=cp.COORDINATOR_TYPE_GROUP), timeout=10)
        coordinator = answer.coordinators[0]
        if coordinator.error_code == ErrorCode.NONE:
            return coordinator.coordinator.broker_id, f"{coordinator.coordinator.host}:{coordinator.coordinator.port}"
        return None
    return wait_for(found, timeout_s, f"a coordinator for {group}")


def call(cluster, group, method, request, ok=lambda answer: True, timeout_s=60):
    """Call the group's coordinator until it answers without a coordinator error (it may move or load)."""
    def attempt():
        _, address = find_coordinator(cluster, group)
        with grpc.insecure_channel(address) as channel:
            answer = getattr(cg.CoordinatorServiceStub(channel), method)(request, timeout=10)
        error = getattr(answer, "error_code", ErrorCode.NONE)
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                     ErrorCode.COORDINATOR_NOT_AVAILABLE):
            return None
        return answer if ok(answer) else None
    return wait_for(attempt, timeout_s, f"{method} for {group}")


def join(group, member_id, topics=(TOPIC,), **fields):
    return cp.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=cp.SubscribedTopicNames(names=list(topics)), owned_partitions=cp.TopicPartitionsList(),
        **fields)


def commit(group, member_id, epoch, offsets):
    return cp.OffsetCommitRequest(group_id=group, member_id=member_id, member_epoch=epoch, topics=[
        cp.OffsetCommitTopic(topic=TOPIC, partitions=[
            cp.OffsetCommitPartition(partition=p, committed_offset=o, committed_leader_epoch=-1)
            for p, o in offsets.items()])])


def committed(answer):
    return {p.partition: p.committed_offset for t in answer.topics for p in t.partitions}


@pytest.fixture(scope="module")
def topic(admin):
    admin.create_topics([NewTopic(TOPIC, 6, 3)])
    return TOPIC


def test_the_first_group_creates_the_offsets_topic_compacted_and_replicated(cluster, admin, topic):
    find_coordinator(cluster, "first-group")
    [described] = admin.describe_topics(["__consumer_offsets"])
    assert len(described.partitions) == 50
    assert all(len(p.replicas) == 3 for p in described.partitions)
    configs = admin.describe_configs(["__consumer_offsets"])["__consumer_offsets"]
    assert configs["cleanup.policy"] == "compact" and configs["min.insync.replicas"] == "2"


def test_a_member_joins_commits_and_the_group_is_described(cluster, topic):
    member = str(uuid.uuid4())
    answer = call(cluster, "orders-app", "ConsumerGroupHeartbeat", join("orders-app", member, client_id="app-1"),
                  ok=lambda a: a.error_code == ErrorCode.NONE)
    assert answer.member_epoch == 1 and answer.heartbeat_interval_ms == 500
    assert sorted(answer.assignment.topics[0].partitions) == list(range(6))
    result = call(cluster, "orders-app", "OffsetCommit", commit("orders-app", member, 1, {0: 10, 5: 3}))
    assert {p.error_code for t in result.topics for p in t.partitions} == {ErrorCode.NONE}
    assert committed(call(cluster, "orders-app", "OffsetFetch", cp.OffsetFetchRequest(group_id="orders-app"))) == {
        0: 10, 5: 3}
    described = call(cluster, "orders-app", "DescribeGroups", cp.DescribeGroupsRequest(group_ids=["orders-app"]))
    group = described.groups[0]
    assert group.group_state == cp.GROUP_STATE_STABLE and group.assignor_name == "uniform"
    assert [(m.member_id, m.client_id, m.client_host) for m in group.members] == [(member, "app-1", "127.0.0.1")]


def test_committed_offsets_and_members_survive_the_coordinators_broker_being_killed(cluster, topic):
    group, member = "survivor", str(uuid.uuid4())
    answer = call(cluster, group, "ConsumerGroupHeartbeat", join(group, member),
                  ok=lambda a: a.error_code == ErrorCode.NONE)
    offsets = {p: 100 + p for p in range(6)}
    call(cluster, group, "OffsetCommit", commit(group, member, answer.member_epoch, offsets))
    coordinator, _ = find_coordinator(cluster, group)
    cluster.signal("broker", coordinator, "KILL")
    try:
        moved = wait_for(lambda: find_coordinator(cluster, group)[0] != coordinator and find_coordinator(cluster, group),
                         60, "the group's coordinator to move")
        assert moved[0] != coordinator
        assert committed(call(cluster, group, "OffsetFetch", cp.OffsetFetchRequest(group_id=group))) == offsets
        # The member carries on at its epoch: the new coordinator replayed it, with a fresh session.
        again = call(cluster, group, "ConsumerGroupHeartbeat", cp.ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=answer.member_epoch))
        assert (again.error_code, again.member_epoch) == (ErrorCode.NONE, answer.member_epoch)
    finally:
        cluster("dev", "start", "broker", str(coordinator))


def test_a_silent_member_leaves_its_group_after_the_session_timeout(cluster, topic):
    group, quiet, busy = "timeouts", str(uuid.uuid4()), str(uuid.uuid4())
    call(cluster, group, "ConsumerGroupHeartbeat", join(group, quiet), ok=lambda a: a.error_code == ErrorCode.NONE)
    first = call(cluster, group, "ConsumerGroupHeartbeat", join(group, busy),
                 ok=lambda a: a.error_code == ErrorCode.NONE)
    epoch = [first.member_epoch]

    def busy_owns_everything():
        answer = call(cluster, group, "ConsumerGroupHeartbeat", cp.ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=busy, member_epoch=epoch[0]))
        epoch[0] = answer.member_epoch
        return answer.HasField("assignment") and sorted(answer.assignment.topics[0].partitions) == list(range(6))

    wait_for(busy_owns_everything, 30, "the quiet member's session (6 s in dev) to time out")


@pytest.mark.parametrize(("request_", "method", "error"), [
    (join("", "m"), "ConsumerGroupHeartbeat", ErrorCode.INVALID_GROUP_ID),
    (cp.ConsumerGroupHeartbeatRequest(group_id="bad-regex", member_id="m", member_epoch=0, rebalance_timeout_ms=1,
                                      subscribed_topic_regex="orders-("), "ConsumerGroupHeartbeat",
     ErrorCode.INVALID_SUBSCRIPTION_REGEX),
    (cp.ConsumerGroupHeartbeatRequest(group_id="ghosts", member_id="never-issued", member_epoch=4),
     "ConsumerGroupHeartbeat", ErrorCode.UNKNOWN_MEMBER_ID),
    (join("assignors", "m", server_assignor="roundrobin"), "ConsumerGroupHeartbeat", ErrorCode.UNSUPPORTED_ASSIGNOR),
])
def test_bad_heartbeats_get_kafkas_error_and_a_reason(cluster, topic, request_, method, error):
    group = request_.group_id or "any"
    if request_.group_id:
        answer = call(cluster, group, method, request_)
    else:
        _, address = find_coordinator(cluster, "any")
        with grpc.insecure_channel(address) as channel:
            answer = getattr(cg.CoordinatorServiceStub(channel), method)(request_, timeout=10)
    assert answer.error_code == error and answer.error_message


def test_bad_group_requests_get_kafkas_error_and_a_reason(cluster, topic):
    with grpc.insecure_channel(broker_address(cluster)) as channel:
        empty = cg.CoordinatorServiceStub(channel).FindCoordinator(
            cp.FindCoordinatorRequest(keys=[""], key_type=cp.COORDINATOR_TYPE_GROUP), timeout=10)
    assert empty.coordinators[0].error_code == ErrorCode.INVALID_GROUP_ID
    missing = call(cluster, "bad-commits", "OffsetCommit", commit("bad-commits", "", -1, {99: 1}))
    assert missing.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "99" in missing.topics[0].partitions[0].error_message
    unknown = call(cluster, "no-such-group", "DescribeGroups", cp.DescribeGroupsRequest(group_ids=["no-such-group"]))
    assert unknown.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    member = str(uuid.uuid4())
    call(cluster, "busy-group", "ConsumerGroupHeartbeat", join("busy-group", member),
         ok=lambda a: a.error_code == ErrorCode.NONE)
    busy = call(cluster, "busy-group", "DeleteGroups", cp.DeleteGroupsRequest(group_ids=["busy-group"]))
    assert busy.results[0].error_code == ErrorCode.NON_EMPTY_GROUP and "members" in busy.results[0].error_message


def test_the_coordinator_serves_members_and_lag_per_group(cluster, topic, bootstrap):
    from replog.client import Producer
    with Producer(bootstrap) as producer:
        producer.send_many(TOPIC, [b"x"] * 40, partition=1).result(30)
    group, member = "lagging", str(uuid.uuid4())
    answer = call(cluster, group, "ConsumerGroupHeartbeat", join(group, member),
                  ok=lambda a: a.error_code == ErrorCode.NONE)
    call(cluster, group, "OffsetCommit", commit(group, member, answer.member_epoch, {1: 15}))
    coordinator, _ = find_coordinator(cluster, group)
    metrics_address = cluster.metrics_address("broker", coordinator)
    wait_for(lambda: sample(metrics_address, "replog_consumergroup_members", {"group": group}) == 1, 30,
             "the member count")
    wait_for(lambda: sample(metrics_address, "replog_consumergroup_lag",
                                   {"group": group, "topic": TOPIC, "partition": "1"}) == 25, 30,
             "the lag of partition 1 (40 records, 15 committed)")
