"""Kafka's table of operations per request, applied to replog's messages: every RPC of every
service has its rule, and a partly denied request is answered the way Kafka answers it."""

import pytest
from google.protobuf import descriptor_pool, message_factory

from replog.api.broker.v1 import broker_pb2
from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.api.metadata.v1 import metadata_pb2
from replog.core.acl import Decision, Operation, ResourceType
from replog.core.errors import ErrorCode
from replog.security import rpc_rules

SERVICES = ["replog.api.broker.v1.BrokerService", "replog.api.controller.v1.ControllerService",
            "replog.api.coordinator.v1.CoordinatorService", "replog.api.metadata.v1.MetadataService"]


class Judge:
    """Allows exactly the (operation, resource type, name) triples it is given."""

    principal = "User:alice"

    def __init__(self, *allowed):
        self.allowed = set(allowed)

    def may(self, operation, resource_type, name):
        ok = (operation, resource_type, name) in self.allowed
        return Decision(ok, "granted" if ok else "no ACL")

    def may_on_some(self, operation, resource_type):
        return any(op == operation and rt == resource_type for op, rt, _ in self.allowed)


def run(method, request, judge):
    """(the request as the servicer gets it, the answer, the plan) for `method` (a BrokerService
    method's name, or a full path)."""
    rpc = method if method.startswith("/") else rpc_rules.BROKER + method
    service, name = rpc.strip("/").rsplit("/", 1)
    output = message_factory.GetMessageClass(
        descriptor_pool.Default().FindServiceByName(service).methods_by_name[name].output_type)
    plan = rpc_rules.plan(rpc, rpc_rules.RULES[rpc], request, output, judge)
    if plan.answer is not None:
        return request, plan.answer, plan
    return request, rpc_rules.finish(plan, output(), judge), plan


def test_every_rpc_of_every_service_has_an_authorization_rule():
    missing = []
    for name in SERVICES:
        for method in descriptor_pool.Default().FindServiceByName(name).methods:
            path = f"/{name}/{method.name}"
            if path not in rpc_rules.RULES and path not in rpc_rules.STREAM_OF:
                missing.append(path)
    assert missing == [], "add each to rpc_rules.RULES (docs/SECURITY.md lists Kafka's operation per request)"


def test_a_produce_to_a_denied_topic_answers_that_topic_with_topic_authorization_failed_and_keeps_the_rest():
    request = broker_pb2.ProduceRequest(acks=-1, topics=[
        broker_pb2.ProduceTopicData(topic="ok", partitions=[broker_pb2.ProducePartitionData(partition=0)]),
        broker_pb2.ProduceTopicData(topic="secret", partitions=[broker_pb2.ProducePartitionData(partition=0),
                                                                broker_pb2.ProducePartitionData(partition=1)])])
    request, response, plan = run("Produce", request, Judge((Operation.WRITE, ResourceType.TOPIC, "ok")))
    assert [t.topic for t in request.topics] == ["ok"]
    assert not plan.skip_servicer
    [denied] = response.topics
    assert denied.topic == "secret"
    assert [(p.partition, p.error_code) for p in denied.partitions] == [
        (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED), (1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert "User:alice may not Write on Topic:secret" in denied.partitions[0].error_message


def test_a_request_denied_entirely_never_reaches_the_servicer():
    request = broker_pb2.FetchRequest(replica_id=-1, topics=[broker_pb2.FetchTopic(topic="secret", partitions=[
        broker_pb2.FetchPartition(partition=0)])])
    _, response, plan = run("Fetch", request, Judge())
    assert plan.skip_servicer
    assert response.topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_a_follower_fetch_and_leader_and_isr_need_cluster_action():
    judge = Judge((Operation.READ, ResourceType.TOPIC, "t"))
    with pytest.raises(rpc_rules.PermissionDenied, match="User:alice may not ClusterAction on the cluster "
                                                          r"\(Fetch\)"):
        run("Fetch", broker_pb2.FetchRequest(replica_id=2), judge)
    with pytest.raises(rpc_rules.PermissionDenied, match="ClusterAction"):
        run("LeaderAndIsr", broker_pb2.LeaderAndIsrRequest(), judge)
    run("LeaderAndIsr", broker_pb2.LeaderAndIsrRequest(),
        Judge((Operation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")))


def test_a_leader_adding_a_partition_for_a_producer_needs_cluster_action_and_a_producer_adding_needs_write():
    """Transaction version 2: the leader's add stands for a Produce authorized already; a producer's own add is
    authorized on the topics it names."""
    c = rpc_rules.COORDINATOR
    request = dict(transactional_id="tx", topics=[common_pb2.TopicPartitions(topic="orders", partitions=[0])])
    producer = Judge((Operation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx"), (Operation.WRITE, ResourceType.TOPIC,
                                                                            "orders"))
    assert run(c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(**request), producer)[2].answer is None
    with pytest.raises(rpc_rules.PermissionDenied, match="ClusterAction"):
        run(c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(**request, leader_add=True), producer)
    leader = Judge((Operation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster"),
                   (Operation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx"))
    _, answer, plan = run(c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(**request, leader_add=True),
                          leader)
    assert plan.answer is None and all(r.error_code == 0 for r in answer.results), "no topic ACL asked of the leader"
    _, answer, _ = run(c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(**request), leader)
    assert [r.error_code for r in answer.results] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED], "its own add: it is not"


def test_the_clusters_own_requests_are_told_apart_from_clients_ones_for_the_quotas():
    b, c = rpc_rules.BROKER, rpc_rules.COORDINATOR
    own = [(b + "Fetch", broker_pb2.FetchRequest(replica_id=2)), (b + "LeaderAndIsr", broker_pb2.LeaderAndIsrRequest()),
           (b + "FetchStream", broker_pb2.FetchRequest(replica_id=0)),
           (c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(verify_only=True)),
           (c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest(leader_add=True))]
    clients = [(b + "Fetch", broker_pb2.FetchRequest(replica_id=-1)),
               (b + "ListOffsets", broker_pb2.ListOffsetsRequest()), (b + "ProduceStream", broker_pb2.ProduceRequest()),
               (c + "AddPartitionsToTxn", coordinator_pb2.AddPartitionsToTxnRequest())]
    assert [m for m, request in own if not rpc_rules.is_cluster_action(m, request)] == []
    assert [m for m, request in clients if rpc_rules.is_cluster_action(m, request)] == []


def test_an_offset_commit_without_read_on_the_group_fails_every_partition_with_group_authorization_failed():
    request = coordinator_pb2.OffsetCommitRequest(group_id="g", topics=[coordinator_pb2.OffsetCommitTopic(
        topic="t", partitions=[coordinator_pb2.OffsetCommitPartition(partition=3)])])
    _, response, _ = run(rpc_rules.COORDINATOR + "OffsetCommit", request,
                         Judge((Operation.READ, ResourceType.TOPIC, "t")))
    assert response.topics[0].partitions[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_a_heartbeat_without_read_on_the_group_answers_group_authorization_failed():
    _, response, _ = run(rpc_rules.COORDINATOR + "ConsumerGroupHeartbeat",
                         coordinator_pb2.ConsumerGroupHeartbeatRequest(group_id="g"), Judge())
    assert response.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert "Read on Group:g" in response.error_message


def test_metadata_lists_only_topics_the_principal_may_describe_and_names_the_refused_ones_asked_for():
    judge = Judge((Operation.DESCRIBE, ResourceType.TOPIC, "mine"))
    plan = rpc_rules.plan(rpc_rules.METADATA + "Metadata", rpc_rules.RULES[rpc_rules.METADATA + "Metadata"],
                          metadata_pb2.MetadataRequest(topics=["theirs"]), metadata_pb2.MetadataResponse, judge)
    response = metadata_pb2.MetadataResponse(topics=[metadata_pb2.TopicMetadata(name="mine"),
                                                     metadata_pb2.TopicMetadata(name="theirs", topic_id="x"),
                                                     metadata_pb2.TopicMetadata(name="hidden")])
    rpc_rules.finish(plan, response, judge)
    assert [(t.name, t.error_code, t.topic_id) for t in response.topics] == [
        ("mine", 0, ""), ("theirs", ErrorCode.TOPIC_AUTHORIZATION_FAILED, "")]


def test_create_topics_is_allowed_by_create_on_the_cluster_or_on_each_topic():
    request = controller_pb2.CreateTopicsRequest(topics=[controller_pb2.CreatableTopic(name="a"),
                                                         controller_pb2.CreatableTopic(name="b")])
    _, response, _ = run(rpc_rules.CONTROLLER + "CreateTopics", request,
                         Judge((Operation.CREATE, ResourceType.TOPIC, "a")))
    assert [(t.name, t.error_code) for t in response.topics] == [("b", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    request = controller_pb2.CreateTopicsRequest(topics=[controller_pb2.CreatableTopic(name="b")])
    _, _, plan = run(rpc_rules.CONTROLLER + "CreateTopics", request,
                     Judge((Operation.CREATE, ResourceType.CLUSTER, "kafka-cluster")))
    assert plan.denied == []


def test_a_transactional_producer_needs_write_on_its_transactional_id():
    request = coordinator_pb2.InitProducerIdRequest(transactional_id="tx")
    _, response, _ = run(rpc_rules.COORDINATOR + "InitProducerId", request, Judge())
    assert response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    idempotent = coordinator_pb2.InitProducerIdRequest()
    _, response, _ = run(rpc_rules.COORDINATOR + "InitProducerId", idempotent, Judge())
    assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    _, response, _ = run(rpc_rules.COORDINATOR + "InitProducerId", coordinator_pb2.InitProducerIdRequest(),
                         Judge((Operation.WRITE, ResourceType.TOPIC, "t")))
    assert response.error_code == 0


def test_delete_records_needs_delete_on_the_topic_and_read_alone_is_not_enough():
    request = broker_pb2.DeleteRecordsRequest(topics=[
        broker_pb2.DeleteRecordsTopic(topic=name, partitions=[broker_pb2.DeleteRecordsPartition(partition=0, offset=5)])
        for name in ("mine", "theirs")])
    judge = Judge((Operation.DELETE, ResourceType.TOPIC, "mine"), (Operation.READ, ResourceType.TOPIC, "theirs"),
                  (Operation.WRITE, ResourceType.TOPIC, "theirs"))
    request, response, plan = run("DeleteRecords", request, judge)
    assert [t.topic for t in request.topics] == ["mine"] and not plan.skip_servicer
    [denied] = response.topics
    assert denied.topic == "theirs"
    assert denied.partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert "may not Delete on Topic:theirs" in denied.partitions[0].error_message


def test_describe_log_dirs_needs_describe_on_the_cluster():
    with pytest.raises(rpc_rules.PermissionDenied, match="may not Describe on the cluster"):
        run("DescribeLogDirs", broker_pb2.DescribeLogDirsRequest(), Judge((Operation.DESCRIBE, ResourceType.TOPIC,
                                                                           "t")))
    run("DescribeLogDirs", broker_pb2.DescribeLogDirsRequest(),
        Judge((Operation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster")))
