"""Request limits on real messages: partitions per request, records per batch, name lengths —
each refused with a sentence that names its setting, and ordinary requests untouched."""

from replog.api.broker.v1 import broker_pb2
from replog.api.controller.v1 import controller_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.api.metadata.v1 import metadata_pb2
from replog.core.limits import RequestLimits
from replog.protocol import encode_batch
from replog.protocol.header import record_counts
from replog.security.limits import problem

LIMITS = RequestLimits(partitions_per_request_max=10, records_per_batch_max=100, topic_name_length_max=20,
                       group_id_length_max=8)


def produce(topic="t", partitions=1, records=1):
    batch = encode_batch([(None, b"v")] * records)
    return broker_pb2.ProduceRequest(acks=1, topics=[broker_pb2.ProduceTopicData(
        topic=topic, partitions=[broker_pb2.ProducePartitionData(partition=p, records=batch)
                                 for p in range(partitions)])])


def test_ordinary_requests_pass():
    assert problem(produce(partitions=10, records=100), LIMITS) is None
    assert problem(metadata_pb2.MetadataRequest(topics=["a", "b"]), LIMITS) is None
    assert problem(coordinator_pb2.ConsumerGroupHeartbeatRequest(group_id="g"), LIMITS) is None


def test_each_limit_is_named_in_its_refusal():
    assert "max.partitions.per.request=10" in problem(produce(partitions=11), LIMITS)
    assert "max.records.per.batch=100" in problem(produce(records=101), LIMITS)
    assert "max.topic.name.length=20" in problem(produce(topic="t" * 21), LIMITS)
    assert "max.group.id.length=8" in problem(coordinator_pb2.OffsetFetchRequest(group_id="g" * 9), LIMITS)
    assert "max.partitions.per.request" in problem(controller_pb2.DeleteTopicsRequest(
        topic_names=[str(i) for i in range(11)]), LIMITS)
    assert "max.topic.name.length" in problem(metadata_pb2.MetadataRequest(topics=["x" * 30]), LIMITS)


def test_create_topics_leaves_its_names_to_the_controller_which_answers_per_topic():
    """A long name in CreateTopics is refused for that topic alone (INVALID_TOPIC_EXCEPTION, as
    Kafka does, tests/integration/test_controller_topics.py), not with the whole request."""
    request = controller_pb2.CreateTopicsRequest(topics=[controller_pb2.CreatableTopic(name="x" * 30)])
    assert problem(request, LIMITS) is None
    many = controller_pb2.CreateTopicsRequest(topics=[controller_pb2.CreatableTopic(name=str(i)) for i in range(11)])
    assert "max.partitions.per.request=10" in problem(many, LIMITS)


def test_record_counts_read_every_batch_header_and_stop_at_garbage():
    records = encode_batch([(None, b"a")] * 3) + encode_batch([(None, b"b")] * 5)
    assert list(record_counts(records)) == [3, 5]
    assert list(record_counts(b"not a batch")) == []


def test_bytes_that_are_not_the_message_are_refused_as_invalid_argument_not_a_server_error():
    import asyncio

    import grpc
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    from replog.security.limits import LimitsInterceptor

    async def scenario():
        server = grpc.aio.server(interceptors=[LimitsInterceptor(LIMITS)])
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                answers = []
                for payload in (b"\xe4\x1ag\xadh", health_pb2.HealthCheckRequest().SerializeToString()):
                    try:
                        await channel.unary_unary("/grpc.health.v1.Health/Check")(payload, timeout=3)
                        answers.append("OK")
                    except grpc.aio.AioRpcError as error:
                        answers.append((error.code().name, "does not parse" in error.details()))
                return answers
        finally:
            await server.stop(0)

    assert asyncio.run(scenario()) == [("INVALID_ARGUMENT", True), "OK"]
