"""Small builders shared by the client's unit tests."""

from replog.api.metadata.v1 import metadata_pb2
from replog.client.cluster import ClusterMetadata
from replog.core.errors import ErrorCode


def metadata_response(topics: dict[str, list[tuple[int, int]]], brokers=(1, 2, 3), controller_id=1,
                      unknown=()) -> metadata_pb2.MetadataResponse:
    """topics: name -> [(leader, leader_epoch) per partition]."""
    response = metadata_pb2.MetadataResponse(cluster_id="c", controller_id=controller_id, image_version=1)
    response.controller.controller_id = controller_id
    response.controller.host = "127.0.0.1"
    response.controller.port = 9000 + controller_id
    for broker_id in brokers:
        response.brokers.add(broker_id=broker_id, host="127.0.0.1", port=9100 + broker_id)
    for name, partitions in topics.items():
        topic = response.topics.add(name=name, topic_id=f"id-{name}", error_code=int(ErrorCode.NONE))
        for index, (leader, epoch) in enumerate(partitions):
            topic.partitions.add(partition=index, leader=leader, leader_epoch=epoch, replicas=[leader], isr=[leader],
                                 error_code=int(ErrorCode.NONE))
    for name in unknown:
        response.topics.add(name=name, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                            error_message=f"topic {name!r} does not exist")
    return response


def metadata(topics: dict[str, list[tuple[int, int]]], brokers=(1, 2, 3)) -> ClusterMetadata:
    return ClusterMetadata().with_response(metadata_response(topics, brokers), all_topics=True)
