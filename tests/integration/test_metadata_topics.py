"""Topics in the metadata service: Metadata and the WatchMetadata stream, on a real cluster."""

import os
import signal
import time

import grpc
import pytest

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from tests.integration.cluster import started, wait_for

pytestmark = pytest.mark.slow

STREAM_DEADLINE_S = 20


def metadata_address(cluster) -> str:
    return cluster.status()["metadata"][0]["address"]


def metadata(cluster, *topics: str) -> metadata_pb2.MetadataResponse:
    with grpc.insecure_channel(metadata_address(cluster)) as channel:
        return metadata_pb2_grpc.MetadataServiceStub(channel).Metadata(
            metadata_pb2.MetadataRequest(topics=topics), timeout=5)


def create(cluster, name: str, partitions: int, replication_factor: int) -> None:
    endpoint = wait_for(lambda: metadata(cluster).controller_id > 0 and metadata(cluster).controller, 10,
                        "an active controller")
    with grpc.insecure_channel(f"{endpoint.host}:{endpoint.port}") as channel:
        response = controller_pb2_grpc.ControllerServiceStub(channel).CreateTopics(controller_pb2.CreateTopicsRequest(
            topics=[controller_pb2.CreatableTopic(name=name, num_partitions=partitions,
                                                  replication_factor=replication_factor)]), timeout=10)
    assert response.topics[0].error_code == common_pb2.ERROR_CODE_NONE, response.topics[0].error_message


def test_unknown_topics_are_reported_by_name_and_known_ones_in_full(cluster):
    create(cluster, "known", 2, 2)
    wait_for(lambda: metadata(cluster, "known").topics[0].error_code == common_pb2.ERROR_CODE_NONE, 5,
             "the topic to appear")
    response = metadata(cluster, "known", "unknown")
    known, unknown = response.topics
    assert unknown.name == "unknown"
    assert unknown.error_code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION and "unknown" in unknown.error_message
    assert known.topic_id and not known.is_internal
    assert [(p.partition, len(p.replicas), p.leader in p.replicas) for p in known.partitions] == [
        (0, 2, True), (1, 2, True)]
    assert all(not p.offline_replicas for p in known.partitions)
    assert "known" in [t.name for t in metadata(cluster).topics], "no names asks for every topic"


def test_watch_metadata_sends_a_snapshot_then_the_topics_that_change(cluster):
    with grpc.insecure_channel(metadata_address(cluster)) as channel:
        stub = metadata_pb2_grpc.MetadataServiceStub(channel)
        everything = stub.WatchMetadata(metadata_pb2.WatchMetadataRequest(), timeout=STREAM_DEADLINE_S)
        followed = stub.WatchMetadata(metadata_pb2.WatchMetadataRequest(topics=["watched"]),
                                      timeout=STREAM_DEADLINE_S)
        snapshot = next(everything)
        assert snapshot.full_snapshot
        assert sorted(b.broker_id for b in snapshot.changed_brokers) == [1, 2, 3]
        assert snapshot.controller_id > 0 and snapshot.cluster_id
        first_followed = next(followed)
        assert first_followed.full_snapshot and not first_followed.changed_topics

        create(cluster, "unwatched", 1, 1)
        create(cluster, "watched", 3, 3)

        seen: dict[str, metadata_pb2.TopicMetadata] = {}
        version = snapshot.image_version
        while "watched" not in seen or "unwatched" not in seen:
            delta = next(everything)
            assert not delta.full_snapshot and delta.image_version > version
            version = delta.image_version
            seen.update((t.name, t) for t in delta.changed_topics)
        assert [p.partition for p in seen["watched"].partitions] == [0, 1, 2], "a topic arrives whole"
        assert all(p.leader in p.isr for p in seen["watched"].partitions)

        delta = next(followed)
        assert [t.name for t in delta.changed_topics] == ["watched"]
        everything.cancel()
        followed.cancel()


@pytest.fixture
def small_cluster(tmp_path_factory):
    """A cluster of its own, whose metadata service the test stops for good."""
    yield from started(tmp_path_factory, "metadata-stop", "--brokers", "1", "--controllers", "1")


def test_a_stopping_metadata_service_ends_its_watch_streams_at_once(small_cluster):
    """Watch streams stay open for good; on SIGTERM the service ends them cleanly and exits, rather
    than holding them until its shutdown.grace.ms (5 s) runs out and cancelling them."""
    pid = small_cluster.status()["metadata"][0]["pid"]
    with grpc.insecure_channel(metadata_address(small_cluster)) as channel:
        watch = metadata_pb2_grpc.MetadataServiceStub(channel).WatchMetadata(
            metadata_pb2.WatchMetadataRequest(), timeout=STREAM_DEADLINE_S)
        assert next(watch).full_snapshot
        stopping = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        list(watch)  # the rest of the stream: it ends with OK, where a cancelled one raises
        ended_s = time.monotonic() - stopping
    wait_for(lambda: _exited(pid), 10, "the metadata service to exit")
    exited_s = time.monotonic() - stopping
    assert ended_s < SHUTDOWN_GRACE_S and exited_s < SHUTDOWN_GRACE_S, (ended_s, exited_s)


SHUTDOWN_GRACE_S = 5.0  # shutdown.grace.ms's default


def _exited(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
