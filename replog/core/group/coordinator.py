"""The group coordinator of one `__consumer_offsets` partition, as a state machine without I/O.

Each operation returns a `Result`: the answer, the records to write first,
and events for logs and metrics. The records are already applied when the
operation returns (later operations see them), and the driver answers only
once they are durable (acks=all). A driver whose write fails replays the
partition into a new coordinator: memory never runs ahead of the log for
long. Loading after a failover is the same `replay` of the partition's
records, so a coordinator that takes over is the one that left.

Time comes in as arguments: `now_ms` (monotonic) runs session and rebalance
timeouts, `wall_ms` stamps commits and expires offsets.

The parts: `heartbeat.Membership` (members joining, heartbeating, leaving,
timing out), `commits.Commits` (OffsetCommit, OffsetFetch, OffsetDelete),
`offsets.Offsets` (the committed offsets and their expiry), `group.ConsumerGroup`
(one group as its records build it).
"""

from collections.abc import Iterable

from ..errors import ErrorCode
from ..topic_partition import TopicPartition
from . import records as rec
from .batch import Batch
from .commits import Commits
from .group import ConsumerGroup, GroupEvent, GroupState, check_transition
from .heartbeat import Membership
from .offsets import Offsets
from .requests import (
    CommitRequest,
    CommittedOffset,
    DescribedGroup,
    DescribedMember,
    GroupConfig,
    HeartbeatRequest,
    HeartbeatResponse,
    ListedGroup,
    PartitionError,
    Result,
    TopicsImage,
    TxnCommitRequest,
)


class GroupCoordinatorShard:
    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.groups: dict[str, ConsumerGroup] = {}
        self.offsets = Offsets(config)
        self._membership = Membership(self, config)
        self._commits = Commits(self, config)

    # -- state from records -----------------------------------------------------------------

    def replay(self, record: rec.GroupRecord) -> None:
        """Apply one record: the only way the coordinator's state changes."""
        if record.type == rec.RecordType.OFFSET_COMMIT:
            self.offsets.apply(record)
            return
        if record.type == rec.RecordType.GROUP_METADATA and record.value is None:
            self.groups.pop(record.group_id, None)
            return
        group = self.groups.get(record.group_id)
        if group is None:
            group = self.groups[record.group_id] = ConsumerGroup(record.group_id)
        group.apply(record)

    def loaded(self, now_ms: int, wall_ms: int) -> None:
        """The partition is replayed: sessions start from now, empty groups count as empty from now."""
        for group in self.groups.values():
            self._membership.start_sessions(group, now_ms)
            if not group.members:
                group.empty_since_ms = wall_ms

    # -- the operations -----------------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest, topics: TopicsImage, now_ms: int,
                  wall_ms: int) -> Result[HeartbeatResponse]:
        return self._membership.heartbeat(request, topics, now_ms, wall_ms)

    def commit_offsets(self, request: CommitRequest, topics: TopicsImage,
                       wall_ms: int) -> Result[dict[TopicPartition, PartitionError]]:
        return self._commits.commit_offsets(request, topics, wall_ms)

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None,
                      require_stable: bool = False) -> dict[TopicPartition, CommittedOffset]:
        return self.offsets.fetch(group_id, partitions, require_stable)

    # -- offsets committed in transactions ---------------------------------------------------------

    def commit_transactional_offsets(self, request: TxnCommitRequest, topics: TopicsImage,
                                     wall_ms: int) -> Result[dict[TopicPartition, PartitionError]]:
        """TxnOffsetCommit. Unlike the other operations, its records are not applied here: the driver
        writes them as the producer's transactional batch and, once appended, applies each with
        `replay_transactional`."""
        return self._commits.commit_transactional_offsets(request, topics, wall_ms)

    def replay_transactional(self, producer_id: int, record: rec.GroupRecord) -> None:
        """A record of the producer's transactional batch: pending until its marker."""
        self.offsets.apply_pending(producer_id, record)

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """A marker ended the producer's transaction on this partition; how many offsets it committed or
        dropped."""
        return self.offsets.complete_transaction(producer_id, commit)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                       ) -> Result[tuple[PartitionError, dict[TopicPartition, PartitionError]]]:
        return self._commits.delete_offsets(group_id, partitions)

    def tick(self, now_ms: int, wall_ms: int) -> Result[None]:
        """Remove members whose session or rebalance timed out (the driver ticks often)."""
        batch = Batch(self)
        self._membership.expire(now_ms, wall_ms, batch)
        return batch.result(None)

    def expire_offsets(self, wall_ms: int) -> Result[None]:
        """Expire offsets past their retention, and drop the groups left with neither members nor
        offsets (the driver calls this every offsets.retention.check.interval.ms)."""
        batch = Batch(self)
        for record in self.offsets.expire(self.groups, wall_ms):
            batch.write(record)
        for group in list(self.groups.values()):
            if not group.members and not self.offsets.of(group.group_id):
                self._delete_group_records(group, batch)
        return batch.result(None)

    # -- listing, describing, deleting ----------------------------------------------------------

    def list_groups(self, states: Iterable[int] = ()) -> list[ListedGroup]:
        wanted = set(states)
        listed = [ListedGroup(g.group_id, "consumer", int(g.state)) for g in self.groups.values()]
        listed += [ListedGroup(group_id, "", int(GroupState.EMPTY)) for group_id in self.offsets.group_ids()
                   if group_id not in self.groups]
        return sorted((g for g in listed if not wanted or g.state in wanted), key=lambda g: g.group_id)

    def describe_group(self, group_id: str) -> DescribedGroup:
        group = self.groups.get(group_id)
        if group is None:
            if self.offsets.of(group_id):
                return DescribedGroup(group_id, state=int(GroupState.EMPTY))
            return DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
        members = tuple(
            DescribedMember(m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                            m.subscribed_topic_names, m.subscribed_topic_regex or "", m.assigned,
                            group.target.get(m.member_id, {}), int(m.state))
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        )
        return DescribedGroup(group_id, state=int(group.state), group_epoch=group.group_epoch,
                              assignment_epoch=group.assignment_epoch,
                              assignor=group.preferred_assignor(self.config.assignors[0]), members=members)

    def delete_groups(self, group_ids: Iterable[str]) -> Result[dict[str, tuple[ErrorCode, str]]]:
        batch = Batch(self)
        outcomes: dict[str, tuple[ErrorCode, str]] = {}
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None and not self.offsets.of(group_id):
                outcomes[group_id] = (ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
                continue
            if group is not None and group.members:
                outcomes[group_id] = (ErrorCode.NON_EMPTY_GROUP,
                                      f"group {group_id!r} has {len(group.members)} members; stop them first")
                continue
            for record in self.offsets.delete_group(group_id):
                batch.write(record)
            if group is not None:
                self._delete_group_records(group, batch)
            outcomes[group_id] = (ErrorCode.NONE, "")
        return batch.result(outcomes)

    def _delete_group_records(self, group: ConsumerGroup, batch: Batch) -> None:
        check_transition(group.state, GroupEvent.DELETED, GroupState.DEAD)
        batch.write(rec.target_assignment_metadata(group.group_id, None))
        batch.write(rec.group_subscriptions(group.group_id, None))
        batch.write(rec.group_metadata(group.group_id, None))

    def subscribed_topics(self, group_id: str) -> set[str]:
        group = self.groups.get(group_id)
        return group.subscribed_topics() if group is not None and group.members else set()
