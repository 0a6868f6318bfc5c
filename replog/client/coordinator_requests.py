"""The client's side of CoordinatorService: the requests it sends to group coordinators, and how it
reads their answers.

The one module of the client that builds coordinator messages; the consumer's
group member and the admin client hand it plain values (partitions, epochs,
offsets) and take back client values (OffsetAndMetadata, GroupDescription, ...)
and error codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.client.membership import HeartbeatAnswer, HeartbeatParams
from replog.client.types import (
    GroupDescription,
    GroupListing,
    MemberDescription,
    OffsetAndMetadata,
    TransactionDescription,
    TransactionListing,
)
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.rpc.coordinator_convert import grouped

Outcome = tuple[ErrorCode, str]  # an error code and the server's sentence about it

# Kafka's names for the states, as its tools print them.
GROUP_STATES = {
    coordinator_pb2.GROUP_STATE_EMPTY: "Empty",
    coordinator_pb2.GROUP_STATE_ASSIGNING: "Assigning",
    coordinator_pb2.GROUP_STATE_RECONCILING: "Reconciling",
    coordinator_pb2.GROUP_STATE_STABLE: "Stable",
    coordinator_pb2.GROUP_STATE_DEAD: "Dead",
}
MEMBER_STATES = {
    coordinator_pb2.MEMBER_STATE_STABLE: "Stable",
    coordinator_pb2.MEMBER_STATE_UNREVOKED_PARTITIONS: "UnrevokedPartitions",
    coordinator_pb2.MEMBER_STATE_UNRELEASED_PARTITIONS: "UnreleasedPartitions",
}
UNKNOWN_STATE = "Unknown"


def _partitions_of(topics: Iterable[common_pb2.TopicPartitions]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic.topic, p) for topic in topics for p in topic.partitions)


def _outcome(code: int, message: str) -> Outcome:
    return ErrorCode.of(code), message


# -- FindCoordinator ------------------------------------------------------------------------------


def find_coordinator_request(key: str, key_type: int = coordinator_pb2.COORDINATOR_TYPE_GROUP
                             ) -> coordinator_pb2.FindCoordinatorRequest:
    """The coordinator of a group id, or of a transactional id (COORDINATOR_TYPE_TRANSACTION)."""
    return coordinator_pb2.FindCoordinatorRequest(keys=[key], key_type=key_type)


def coordinator_found(response: coordinator_pb2.FindCoordinatorResponse,
                      key: str) -> tuple[Outcome, tuple[int, str] | None]:
    """The answer for `key`: its outcome, and the coordinator's (broker id, "host:port")."""
    for found in response.coordinators:
        if found.key == key:
            outcome = _outcome(found.error_code, found.error_message)
            if outcome[0] is not ErrorCode.NONE or not found.HasField("coordinator"):
                return outcome, None
            endpoint = found.coordinator
            return outcome, (endpoint.broker_id, f"{endpoint.host}:{endpoint.port}")
    return (ErrorCode.COORDINATOR_NOT_AVAILABLE, "the answer left the key out"), None


# -- ConsumerGroupHeartbeat -----------------------------------------------------------------------


def heartbeat_request(group_id: str, client_id: str,
                      params: HeartbeatParams) -> coordinator_pb2.ConsumerGroupHeartbeatRequest:
    request = coordinator_pb2.ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=params.member_id, member_epoch=params.member_epoch,
        rebalance_timeout_ms=params.rebalance_timeout_ms, client_id=client_id,
    )
    if params.instance_id is not None:
        request.instance_id = params.instance_id
    if params.subscription is not None:
        # Both, so that a subscription by names replaces one by regex and the other way round
        # (an empty regex means none).
        request.subscribed_topic_names.SetInParent()
        request.subscribed_topic_names.names.extend(params.subscription.topics)
        request.subscribed_topic_regex = params.subscription.regex or ""
    if params.server_assignor is not None:
        request.server_assignor = params.server_assignor
    request.owned_partitions.SetInParent()
    request.owned_partitions.topics.extend(grouped(params.owned))
    return request


def heartbeat_answer(response: coordinator_pb2.ConsumerGroupHeartbeatResponse) -> HeartbeatAnswer:
    assignment = _partitions_of(response.assignment.topics) if response.HasField("assignment") else None
    return HeartbeatAnswer(ErrorCode.of(response.error_code), response.error_message, response.member_epoch,
                           response.heartbeat_interval_ms, assignment)


# -- offsets --------------------------------------------------------------------------------------


def offset_commit_request(group_id: str, member_id: str, member_epoch: int,
                          offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> coordinator_pb2.OffsetCommitRequest:
    request = coordinator_pb2.OffsetCommitRequest(group_id=group_id, member_id=member_id, member_epoch=member_epoch)
    _add_commit_topics(request.topics, offsets)
    return request


def _add_commit_topics(topics, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
    by_topic: dict[str, coordinator_pb2.OffsetCommitTopic] = {}
    for tp in sorted(offsets):
        committed = offsets[tp]
        topic = by_topic.get(tp.topic)
        if topic is None:
            topic = by_topic[tp.topic] = topics.add(topic=tp.topic)
        topic.partitions.add(partition=tp.partition, committed_offset=committed.offset,
                             committed_leader_epoch=committed.leader_epoch, committed_metadata=committed.metadata)


def commit_results(response: coordinator_pb2.OffsetCommitResponse | coordinator_pb2.TxnOffsetCommitResponse
                   ) -> dict[TopicPartition, Outcome]:
    return {TopicPartition(topic.topic, p.partition): _outcome(p.error_code, p.error_message)
            for topic in response.topics for p in topic.partitions}


def offset_fetch_request(group_id: str, partitions: Iterable[TopicPartition] | None,
                         require_stable: bool = False) -> coordinator_pb2.OffsetFetchRequest:
    """Committed offsets of these partitions; None asks for every partition the group has one for.
    `require_stable`: an offset an open transaction commits is UNSTABLE_OFFSET_COMMIT, not the older one."""
    return coordinator_pb2.OffsetFetchRequest(group_id=group_id,
                                              topics=grouped(partitions) if partitions is not None else [],
                                              require_stable=require_stable)


def fetched_offsets(response: coordinator_pb2.OffsetFetchResponse
                    ) -> tuple[Outcome, dict[TopicPartition, OffsetAndMetadata | None], dict[TopicPartition, Outcome]]:
    """(the whole answer's outcome, the offsets (None: nothing committed), the partitions that failed)."""
    offsets: dict[TopicPartition, OffsetAndMetadata | None] = {}
    failed: dict[TopicPartition, Outcome] = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition)
            outcome = _outcome(p.error_code, p.error_message)
            if outcome[0] is not ErrorCode.NONE:
                failed[tp] = outcome
            elif p.committed_offset < 0:
                offsets[tp] = None
            else:
                offsets[tp] = OffsetAndMetadata(p.committed_offset, p.committed_metadata, p.committed_leader_epoch)
    return _outcome(response.error_code, response.error_message), offsets, failed


def offset_delete_request(group_id: str,
                          partitions: Iterable[TopicPartition]) -> coordinator_pb2.OffsetDeleteRequest:
    return coordinator_pb2.OffsetDeleteRequest(group_id=group_id, topics=grouped(partitions))


def offset_delete_results(response: coordinator_pb2.OffsetDeleteResponse
                          ) -> tuple[Outcome, dict[TopicPartition, Outcome]]:
    return (_outcome(response.error_code, response.error_message),
            {TopicPartition(r.topic, r.partition): _outcome(r.error_code, r.error_message) for r in response.results})


# -- groups ---------------------------------------------------------------------------------------


def list_groups_request(states: Iterable[int] = ()) -> coordinator_pb2.ListGroupsRequest:
    """The groups in these states (GroupState numbers); every group when none is given."""
    return coordinator_pb2.ListGroupsRequest(states_filter=list(states))


def listed_groups(response: coordinator_pb2.ListGroupsResponse) -> tuple[Outcome, list[GroupListing]]:
    groups = [GroupListing(g.group_id, GROUP_STATES.get(g.group_state, UNKNOWN_STATE), g.group_type)
              for g in response.groups]
    return _outcome(response.error_code, response.error_message), groups


def describe_groups_request(group_ids: Iterable[str]) -> coordinator_pb2.DescribeGroupsRequest:
    return coordinator_pb2.DescribeGroupsRequest(group_ids=list(group_ids))


def described_groups(response: coordinator_pb2.DescribeGroupsResponse,
                     coordinator: tuple[int, str]) -> dict[str, tuple[Outcome, GroupDescription | None]]:
    """Each group of the answer: its outcome and, when described, its description."""
    described: dict[str, tuple[Outcome, GroupDescription | None]] = {}
    for group in response.groups:
        outcome = _outcome(group.error_code, group.error_message)
        if outcome[0] is not ErrorCode.NONE:
            described[group.group_id] = (outcome, None)
            continue
        members = tuple(MemberDescription(
            member_id=m.member_id, instance_id=m.instance_id if m.HasField("instance_id") else None,
            rack_id=m.rack_id if m.HasField("rack_id") else None, client_id=m.client_id, host=m.client_host,
            member_epoch=m.member_epoch, state=MEMBER_STATES.get(m.member_state, UNKNOWN_STATE),
            subscribed_topics=tuple(m.subscribed_topic_names), subscribed_regex=m.subscribed_topic_regex or None,
            assignment=_partitions_of(m.assignment), target_assignment=_partitions_of(m.target_assignment),
        ) for m in group.members)
        described[group.group_id] = (outcome, GroupDescription(
            group_id=group.group_id, state=GROUP_STATES.get(group.group_state, UNKNOWN_STATE),
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, assignor=group.assignor_name,
            members=members, coordinator_id=coordinator[0], coordinator=coordinator[1],
        ))
    return described


def delete_groups_request(group_ids: Iterable[str]) -> coordinator_pb2.DeleteGroupsRequest:
    return coordinator_pb2.DeleteGroupsRequest(group_ids=list(group_ids))


def deleted_groups(response: coordinator_pb2.DeleteGroupsResponse) -> dict[str, Outcome]:
    return {r.group_id: _outcome(r.error_code, r.error_message) for r in response.results}


# -- transactions ---------------------------------------------------------------------------------


def init_producer_id_request(transactional_id: str, transaction_timeout_ms: int
                             ) -> coordinator_pb2.InitProducerIdRequest:
    """A transactional producer's first InitProducerId: a new epoch fences every older producer of the id."""
    return coordinator_pb2.InitProducerIdRequest(transactional_id=transactional_id,
                                                 transaction_timeout_ms=transaction_timeout_ms,
                                                 producer_id=-1, producer_epoch=-1)


def add_partitions_request(transactional_id: str, producer_id: int, producer_epoch: int,
                           partitions: Iterable[TopicPartition]) -> coordinator_pb2.AddPartitionsToTxnRequest:
    return coordinator_pb2.AddPartitionsToTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        topics=grouped(partitions))


def added_partitions(response: coordinator_pb2.AddPartitionsToTxnResponse
                     ) -> tuple[Outcome, dict[TopicPartition, Outcome]]:
    """(the whole answer's outcome, each partition's)."""
    return (_outcome(response.error_code, response.error_message),
            {TopicPartition(r.topic, r.partition): _outcome(r.error_code, r.error_message) for r in response.results})


def add_offsets_request(transactional_id: str, producer_id: int, producer_epoch: int,
                        group_id: str) -> coordinator_pb2.AddOffsetsToTxnRequest:
    return coordinator_pb2.AddOffsetsToTxnRequest(transactional_id=transactional_id, producer_id=producer_id,
                                                  producer_epoch=producer_epoch, group_id=group_id)


def txn_offset_commit_request(transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                              member_id: str, member_epoch: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                              ) -> coordinator_pb2.TxnOffsetCommitRequest:
    request = coordinator_pb2.TxnOffsetCommitRequest(
        transactional_id=transactional_id, group_id=group_id, producer_id=producer_id, producer_epoch=producer_epoch,
        member_id=member_id, member_epoch=member_epoch)
    _add_commit_topics(request.topics, offsets)
    return request


def end_txn_request(transactional_id: str, producer_id: int, producer_epoch: int,
                    commit: bool) -> coordinator_pb2.EndTxnRequest:
    return coordinator_pb2.EndTxnRequest(transactional_id=transactional_id, producer_id=producer_id,
                                         producer_epoch=producer_epoch, committed=commit)


def list_transactions_request(states: Iterable[str] = ()) -> coordinator_pb2.ListTransactionsRequest:
    return coordinator_pb2.ListTransactionsRequest(state_filters=list(states))


def listed_transactions(response: coordinator_pb2.ListTransactionsResponse
                        ) -> tuple[Outcome, list[TransactionListing]]:
    listings = [TransactionListing(t.transactional_id, t.producer_id, t.state) for t in response.transactions]
    return _outcome(response.error_code, ""), listings


def describe_transactions_request(transactional_ids: Iterable[str]) -> coordinator_pb2.DescribeTransactionsRequest:
    return coordinator_pb2.DescribeTransactionsRequest(transactional_ids=list(transactional_ids))


def described_transactions(response: coordinator_pb2.DescribeTransactionsResponse, coordinator: tuple[int, str]
                           ) -> dict[str, tuple[Outcome, TransactionDescription | None]]:
    """Each transactional id of the answer: its outcome and, when described, its description."""
    described: dict[str, tuple[Outcome, TransactionDescription | None]] = {}
    for txn in response.transactions:
        outcome = _outcome(txn.error_code, txn.error_message)
        if outcome[0] is not ErrorCode.NONE:
            described[txn.transactional_id] = (outcome, None)
            continue
        described[txn.transactional_id] = (outcome, TransactionDescription(
            transactional_id=txn.transactional_id, state=txn.state, producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch, transaction_timeout_ms=txn.transaction_timeout_ms,
            transaction_start_time_ms=txn.transaction_start_time_ms,
            partitions=tuple(sorted(_partitions_of(txn.topics))), coordinator_id=coordinator[0],
        ))
    return described
