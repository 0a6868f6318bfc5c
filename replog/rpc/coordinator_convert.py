"""CoordinatorService messages <-> the group coordinator's core values: the one place they meet."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.core.errors import ErrorCode
from replog.core.group.member import Partitions
from replog.core.group.requests import (
    CommitRequest,
    CommittedOffset,
    DescribedGroup,
    HeartbeatRequest,
    HeartbeatResponse,
    ListedGroup,
    OffsetCommit,
    PartitionError,
    TxnCommitRequest,
)
from replog.core.messages import BrokerEndpoint
from replog.core.topic_partition import TopicPartition

# -- partitions -------------------------------------------------------------------------------


def partitions_of(topics: Iterable[common_pb2.TopicPartitions]) -> dict[str, frozenset[int]]:
    merged: dict[str, set[int]] = {}
    for topic in topics:
        merged.setdefault(topic.topic, set()).update(topic.partitions)
    return {topic: frozenset(indexes) for topic, indexes in merged.items()}


def topic_partitions(partitions: Partitions) -> list[common_pb2.TopicPartitions]:
    return [common_pb2.TopicPartitions(topic=topic, partitions=sorted(partitions[topic]))
            for topic in sorted(partitions) if partitions[topic]]


def grouped(partitions: Iterable[TopicPartition]) -> list[common_pb2.TopicPartitions]:
    """Partitions as the wire lists them: by topic, each topic's indexes sorted."""
    topics: dict[str, set[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, set()).add(tp.partition)
    return [common_pb2.TopicPartitions(topic=topic, partitions=sorted(indexes))
            for topic, indexes in sorted(topics.items())]


def keys_of(topics: Iterable[common_pb2.TopicPartitions]) -> list[TopicPartition]:
    return [TopicPartition(topic.topic, p) for topic in topics for p in topic.partitions]


# -- FindCoordinator --------------------------------------------------------------------------


def coordinator(key: str, error: ErrorCode, message: str = "",
                endpoint: BrokerEndpoint | None = None) -> coordinator_pb2.Coordinator:
    found = coordinator_pb2.Coordinator(key=key, error_code=int(error), error_message=message)
    if endpoint is not None:
        found.coordinator.CopyFrom(common_pb2.BrokerEndpoint(broker_id=endpoint.broker_id, host=endpoint.host,
                                                             port=endpoint.port, rack=endpoint.rack))
    return found


# -- ConsumerGroupHeartbeat -------------------------------------------------------------------


def heartbeat_request_of(request: coordinator_pb2.ConsumerGroupHeartbeatRequest,
                         client_host: str) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id if request.HasField("instance_id") else None,
        rack_id=request.rack_id if request.HasField("rack_id") else None,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=(tuple(request.subscribed_topic_names.names)
                                if request.HasField("subscribed_topic_names") else None),
        subscribed_topic_regex=(request.subscribed_topic_regex
                                if request.HasField("subscribed_topic_regex") else None),
        server_assignor=request.server_assignor if request.HasField("server_assignor") else None,
        owned=partitions_of(request.owned_partitions.topics) if request.HasField("owned_partitions") else None,
        client_id=request.client_id,
        client_host=client_host,
    )


def heartbeat_response(response: HeartbeatResponse) -> coordinator_pb2.ConsumerGroupHeartbeatResponse:
    answer = coordinator_pb2.ConsumerGroupHeartbeatResponse(
        error_code=int(response.error), error_message=response.message, member_id=response.member_id,
        member_epoch=response.member_epoch, heartbeat_interval_ms=response.heartbeat_interval_ms,
    )
    if response.assignment is not None:
        answer.assignment.SetInParent()
        answer.assignment.topics.extend(topic_partitions(response.assignment))
    return answer


def heartbeat_refused(request: coordinator_pb2.ConsumerGroupHeartbeatRequest, error: ErrorCode,
                      message: str) -> coordinator_pb2.ConsumerGroupHeartbeatResponse:
    return coordinator_pb2.ConsumerGroupHeartbeatResponse(error_code=int(error), error_message=message,
                                                          member_id=request.member_id,
                                                          member_epoch=request.member_epoch)


# -- offsets ----------------------------------------------------------------------------------


def _offsets_of(topics: Iterable[coordinator_pb2.OffsetCommitTopic]) -> dict[TopicPartition, OffsetCommit]:
    return {TopicPartition(topic.topic, p.partition): OffsetCommit(p.committed_offset, p.committed_leader_epoch,
                                                                   p.committed_metadata)
            for topic in topics for p in topic.partitions}


def commit_request_of(request: coordinator_pb2.OffsetCommitRequest) -> CommitRequest:
    return CommitRequest(request.group_id, request.member_id, request.member_epoch, _offsets_of(request.topics))


def txn_commit_request_of(request: coordinator_pb2.TxnOffsetCommitRequest) -> TxnCommitRequest:
    return TxnCommitRequest(request.transactional_id, request.group_id, request.producer_id, request.producer_epoch,
                            request.member_id, request.member_epoch, _offsets_of(request.topics))


def _topic_of(response: Any, topics: dict[str, Any], topic: str) -> Any:
    """The response's entry for `topic`, added the first time it is asked for."""
    entry = topics.get(topic)
    if entry is None:
        entry = topics[topic] = response.topics.add(topic=topic)
    return entry


def commit_response(outcomes: Mapping[TopicPartition, PartitionError],
                    response_type: Any = coordinator_pb2.OffsetCommitResponse) -> Any:
    """An OffsetCommitResponse (or a TxnOffsetCommitResponse, which has the same shape)."""
    response = response_type()
    topics: dict[str, Any] = {}
    for tp in sorted(outcomes):
        outcome = outcomes[tp]
        _topic_of(response, topics, tp.topic).partitions.add(partition=tp.partition, error_code=int(outcome.error),
                                                            error_message=outcome.message)
    return response


def fetch_offsets_response(offsets: Mapping[TopicPartition, CommittedOffset]) -> coordinator_pb2.OffsetFetchResponse:
    response = coordinator_pb2.OffsetFetchResponse(error_code=int(ErrorCode.NONE))
    topics: dict[str, Any] = {}
    for tp in sorted(offsets):
        committed = offsets[tp]
        _topic_of(response, topics, tp.topic).partitions.add(
            partition=tp.partition, error_code=int(committed.error), committed_offset=committed.offset,
            committed_leader_epoch=committed.leader_epoch, committed_metadata=committed.metadata,
            commit_timestamp_ms=committed.commit_timestamp_ms)
    return response


def offset_delete_response(whole: PartitionError,
                           outcomes: Mapping[TopicPartition, PartitionError]) -> coordinator_pb2.OffsetDeleteResponse:
    return coordinator_pb2.OffsetDeleteResponse(
        error_code=int(whole.error), error_message=whole.message,
        results=[common_pb2.PartitionResult(topic=tp.topic, partition=tp.partition, error_code=int(o.error),
                                            error_message=o.message) for tp, o in sorted(outcomes.items())])


# -- groups -----------------------------------------------------------------------------------


def listed_groups(groups: Iterable[ListedGroup]) -> list[coordinator_pb2.ListedGroup]:
    return [coordinator_pb2.ListedGroup(group_id=g.group_id, group_type=g.group_type, group_state=g.state)
            for g in groups]


def described_group(group: DescribedGroup) -> coordinator_pb2.DescribedGroup:
    return coordinator_pb2.DescribedGroup(
        error_code=int(group.error), error_message=group.message, group_id=group.group_id,
        group_state=group.state, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor,
        members=[coordinator_pb2.DescribedGroupMember(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex, assignment=topic_partitions(m.assignment),
            target_assignment=topic_partitions(m.target_assignment), member_state=m.state,
        ) for m in group.members],
    )


def described_refusal(group_id: str, error: ErrorCode, message: str) -> coordinator_pb2.DescribedGroup:
    return coordinator_pb2.DescribedGroup(group_id=group_id, error_code=int(error), error_message=message)


def deleted_group(group_id: str, error: ErrorCode, message: str) -> coordinator_pb2.DeletedGroup:
    return coordinator_pb2.DeletedGroup(group_id=group_id, error_code=int(error), error_message=message)
