"""OffsetCommit, OffsetFetch and OffsetDelete: who may commit, what is checked, what is written.

A member commits at its current member epoch (an older one is STALE_MEMBER_EPOCH,
a newer one FENCED_MEMBER_EPOCH); a consumer outside the group (assign and
commit, as Spark and tools do) commits with epoch -1, allowed while the group
has no members, as Kafka allows it.
"""

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..errors import ErrorCode
from ..topic_partition import TopicPartition
from . import records as rec
from .batch import Batch
from .requests import (
    OK,
    CommitRequest,
    CommittedOffset,
    GroupConfig,
    OffsetCommit,
    PartitionError,
    Result,
    TopicsImage,
    TxnCommitRequest,
)

if TYPE_CHECKING:
    from .coordinator import GroupCoordinatorShard


class Commits:
    def __init__(self, shard: "GroupCoordinatorShard", config: GroupConfig) -> None:
        self._shard = shard
        self._config = config

    def commit_offsets(self, request: CommitRequest, topics: TopicsImage,
                       wall_ms: int) -> Result[dict[TopicPartition, PartitionError]]:
        """Commit offsets; answered per partition, and written before the answer goes out."""
        whole = self._check_committer(request)
        if whole is not None:
            return Result({tp: whole for tp in request.offsets})
        batch = Batch(self._shard)
        records, outcomes = self._records(request.group_id, request.offsets, topics, wall_ms)
        for record in records:
            batch.write(record)
        return batch.result(outcomes)

    def commit_transactional_offsets(self, request: TxnCommitRequest, topics: TopicsImage,
                                     wall_ms: int) -> Result[dict[TopicPartition, PartitionError]]:
        """TxnOffsetCommit: the records to write, NOT applied: the driver appends them in one transactional
        batch of the producer's and, once the log holds them, applies them with `replay_transactional`
        (a refused append, a fenced producer's, must leave nothing behind)."""
        if request.producer_id < 0 or request.producer_epoch < 0:
            whole: PartitionError | None = PartitionError(
                ErrorCode.INVALID_REQUEST, f"a transactional commit needs the producer's id and epoch, not "
                                           f"{request.producer_id} and {request.producer_epoch}")
        elif not request.transactional_id:
            whole = PartitionError(ErrorCode.INVALID_REQUEST, "a transactional commit needs the transactional id")
        elif request.member_epoch < 0 and not request.member_id:
            # A producer that commits for a consumer outside the group's management, as Kafka allows.
            whole = None if request.group_id else PartitionError(ErrorCode.INVALID_GROUP_ID,
                                                                 "the group id must not be empty")
        else:
            whole = self._check_committer(request)
        if whole is not None:
            return Result({tp: whole for tp in request.offsets})
        records, outcomes = self._records(request.group_id, request.offsets, topics, wall_ms)
        return Result(outcomes, tuple(records))

    def _records(self, group_id: str, offsets: Mapping[TopicPartition, OffsetCommit], topics: TopicsImage,
                 wall_ms: int) -> tuple[list[rec.GroupRecord], dict[TopicPartition, PartitionError]]:
        records, outcomes = [], {}
        for tp, commit in offsets.items():
            problem = self._check_commit(tp, commit, topics)
            if problem is not None:
                outcomes[tp] = problem
                continue
            value = rec.OffsetCommitValue(commit.offset, commit.leader_epoch, commit.metadata, wall_ms)
            records.append(rec.offset_commit(group_id, tp.topic, tp.partition, value))
            outcomes[tp] = OK
        return records, outcomes

    def _check_committer(self, request: CommitRequest | TxnCommitRequest) -> PartitionError | None:
        if not request.group_id:
            return PartitionError(ErrorCode.INVALID_GROUP_ID, "the group id must not be empty")
        group = self._shard.groups.get(request.group_id)
        if request.member_epoch < 0:
            if group is not None and group.members:
                return PartitionError(ErrorCode.UNKNOWN_MEMBER_ID,
                                      f"group {request.group_id!r} has members: commit as one of them, or stop "
                                      "them first")
            return None
        member = group.members.get(request.member_id) if group is not None else None
        if member is None:
            return PartitionError(ErrorCode.UNKNOWN_MEMBER_ID,
                                  f"member {request.member_id} is not in group {request.group_id!r}")
        if request.member_epoch > member.member_epoch:
            return PartitionError(ErrorCode.FENCED_MEMBER_EPOCH,
                                  f"member epoch {request.member_epoch} is newer than the member's "
                                  f"{member.member_epoch}")
        if request.member_epoch < member.member_epoch:
            return PartitionError(ErrorCode.STALE_MEMBER_EPOCH,
                                  f"member epoch {request.member_epoch} is older than the member's "
                                  f"{member.member_epoch}; heartbeat, then commit again")
        return None

    def _check_commit(self, tp: TopicPartition, commit: OffsetCommit, topics: TopicsImage) -> PartitionError | None:
        if not 0 <= tp.partition < topics.get(tp.topic, 0):
            return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist")
        if commit.offset < 0:
            return PartitionError(ErrorCode.INVALID_REQUEST, f"offset {commit.offset} for {tp} is negative")
        if len(commit.metadata.encode()) > self._config.offset_metadata_max_bytes:
            return PartitionError(ErrorCode.OFFSET_METADATA_TOO_LARGE,
                                  f"the metadata for {tp} is longer than offset.metadata.max.bytes "
                                  f"({self._config.offset_metadata_max_bytes})")
        return None

    def fetch_offsets(self, group_id: str,
                      partitions: Iterable[TopicPartition] | None) -> dict[TopicPartition, CommittedOffset]:
        return self._shard.offsets.fetch(group_id, partitions)

    def delete_offsets(self, group_id: str,
                       partitions: Iterable[TopicPartition]) -> Result[tuple[PartitionError, dict[TopicPartition, PartitionError]]]:
        """OffsetDelete: refused for partitions of topics a member subscribes to."""
        if group_id not in self._shard.groups and not self._shard.offsets.of(group_id):
            return Result((PartitionError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist"), {}))
        subscribed = self._shard.subscribed_topics(group_id)
        batch = Batch(self._shard)
        outcomes: dict[TopicPartition, PartitionError] = {}
        deletable = []
        for tp in partitions:
            if tp.topic in subscribed:
                outcomes[tp] = PartitionError(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
                                              f"a member of {group_id!r} subscribes to {tp.topic}")
            else:
                deletable.append(tp)
                outcomes[tp] = OK
        for record in self._shard.offsets.delete(group_id, deletable):
            batch.write(record)
        return batch.result((OK, outcomes))
