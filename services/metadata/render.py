"""The metadata image as protobuf messages: Metadata answers and WatchMetadata snapshots and deltas."""

from __future__ import annotations

from collections.abc import Collection

from replog.api.common.v1 import common_pb2
from replog.api.metadata.v1 import metadata_pb2
from replog.core.errors import ErrorCode
from replog.metadata.image import MetadataImage, PartitionImage, TopicImage
from replog.zk.records import NO_LEADER
from replog.zk.store import BrokerRegistration

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def broker_endpoint(broker: BrokerRegistration) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(broker_id=broker.broker_id, host=broker.host, port=broker.port,
                                     rack=broker.rack or "")


def controller_endpoint(image: MetadataImage) -> common_pb2.ControllerEndpoint | None:
    if image.controller is None:
        return None
    return common_pb2.ControllerEndpoint(controller_id=image.controller.controller_id,
                                         host=image.controller.host, port=image.controller.port)


def partition_metadata(partition: PartitionImage, live: Collection[int]) -> metadata_pb2.PartitionMetadata:
    """A leader that is not alive is no leader: clients must not be sent to a dead broker."""
    led = partition.leader != NO_LEADER and partition.leader in live
    return metadata_pb2.PartitionMetadata(
        error_code=int(ErrorCode.NONE if led else ErrorCode.LEADER_NOT_AVAILABLE),
        error_message="" if led else "the partition has no live leader; an election is due or no replica can lead",
        partition=partition.partition,
        leader=partition.leader if led else NO_LEADER,
        leader_epoch=partition.leader_epoch,
        replicas=partition.replicas,
        isr=partition.isr,
        offline_replicas=[b for b in partition.replicas if b not in live],
    )


def topic_metadata(topic: TopicImage, live: Collection[int]) -> metadata_pb2.TopicMetadata:
    return metadata_pb2.TopicMetadata(
        error_code=int(ErrorCode.NONE), name=topic.name, topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS,
        partitions=[partition_metadata(p, live) for p in topic.partitions],
    )


def unknown_topic(name: str) -> metadata_pb2.TopicMetadata:
    return metadata_pb2.TopicMetadata(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                                      error_message=f"topic {name!r} does not exist", name=name)


def metadata_response(image: MetadataImage, names: Collection[str]) -> metadata_pb2.MetadataResponse:
    """The image; `names` empty means every topic, and a named topic that does not exist is reported."""
    response = metadata_pb2.MetadataResponse(
        cluster_id=image.cluster_id,
        controller_id=image.controller.controller_id if image.controller else -1,
        image_version=image.version,
        brokers=[broker_endpoint(b) for b in image.brokers],
    )
    controller = controller_endpoint(image)
    if controller is not None:
        response.controller.CopyFrom(controller)
    live = image.live_broker_ids
    for name in (names or image.topics):
        topic = image.topics.get(name)
        response.topics.append(topic_metadata(topic, live) if topic is not None else unknown_topic(name))
    return response


def _followed(
    image: MetadataImage, follow: Collection[str], only: Collection[str] | None = None
) -> dict[str, metadata_pb2.TopicMetadata]:
    """The followed topics (all when `follow` is empty), rendered; only those in `only` if given."""
    live = image.live_broker_ids
    return {name: topic_metadata(topic, live) for name, topic in image.topics.items()
            if (not follow or name in follow) and (only is None or name in only)}


def _stream_message(image: MetadataImage, *, full_snapshot: bool) -> metadata_pb2.WatchMetadataResponse:
    message = metadata_pb2.WatchMetadataResponse(
        image_version=image.version, full_snapshot=full_snapshot, cluster_id=image.cluster_id,
        controller_id=image.controller.controller_id if image.controller else -1,
    )
    controller = controller_endpoint(image)
    if controller is not None:
        message.controller.CopyFrom(controller)
    return message


def snapshot(image: MetadataImage, follow: Collection[str]) -> metadata_pb2.WatchMetadataResponse:
    message = _stream_message(image, full_snapshot=True)
    message.changed_brokers.extend(broker_endpoint(b) for b in image.brokers)
    message.changed_topics.extend(_followed(image, follow).values())
    return message


def delta(
    before: MetadataImage, after: MetadataImage, follow: Collection[str]
) -> metadata_pb2.WatchMetadataResponse | None:
    """What changed between two images, or None when nothing a watcher follows did.

    A topic counts as changed when anything rendered about it did, including its
    offline replicas when a broker came or went.
    """
    old_brokers = {b.broker_id: b for b in before.brokers}
    new_brokers = {b.broker_id: b for b in after.brokers}
    changed_brokers = [b for b, r in new_brokers.items() if old_brokers.get(b) != r]
    removed_brokers = sorted(old_brokers.keys() - new_brokers.keys())
    if before.live_broker_ids == after.live_broker_ids:
        # Only a topic whose image was replaced can render differently (the service replaces
        # a topic's image only when it changed): rendering every topic of both images at
        # every change made each stream cost far more than the change.
        replaced = {name for name in before.topics.keys() | after.topics.keys()
                    if before.topics.get(name) is not after.topics.get(name)}
        new_topics = _followed(after, follow, replaced)
        changed_topics = list(new_topics.values())
        removed_topics = sorted(name for name in replaced - after.topics.keys()
                                if name in before.topics and (not follow or name in follow))
    else:
        # Leaders' liveness and offline replicas may have changed in any topic.
        old_topics = _followed(before, follow)
        new_topics = _followed(after, follow)
        changed_topics = [t for name, t in new_topics.items() if old_topics.get(name) != t]
        removed_topics = sorted(old_topics.keys() - new_topics.keys())
    controller_changed = before.controller != after.controller or before.cluster_id != after.cluster_id
    if not (changed_brokers or removed_brokers or changed_topics or removed_topics or controller_changed):
        return None
    message = _stream_message(after, full_snapshot=False)
    message.changed_brokers.extend(broker_endpoint(new_brokers[b]) for b in sorted(changed_brokers))
    message.removed_broker_ids.extend(removed_brokers)
    message.changed_topics.extend(changed_topics)
    message.removed_topics.extend(removed_topics)
    return message
