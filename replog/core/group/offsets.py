"""Committed offsets: what each group has committed per partition, and when they expire.

Offsets committed in a transaction (TxnOffsetCommit) are pending, per producer
id, until a marker on the offsets partition ends the producer's transaction:
COMMIT makes them committed offsets, over whatever was committed meanwhile;
ABORT drops them. Replaying the partition makes the same moves in log order,
so a coordinator that loads it holds what the one before held.

Offsets live apart from membership: a group that only commits (assign and
commit, as Spark and tools do) has offsets and no members. As Kafka's
offsets.retention.minutes says, the offsets of a group expire once the group
has been empty for the retention, counted from the later of its last commit
and the moment it became empty; the offsets of topics a non-empty group no
longer subscribes to expire the retention after their commit.
"""

from collections.abc import Iterable, Mapping

from ..errors import ErrorCode
from ..topic_partition import TopicPartition
from . import records as rec
from .group import ConsumerGroup
from .requests import CommittedOffset, GroupConfig


class Offsets:
    def __init__(self, config: GroupConfig) -> None:
        self._config = config
        self._by_group: dict[str, dict[TopicPartition, rec.OffsetCommitValue]] = {}
        # producer id -> (group, partition) -> the offset its open transaction commits
        self._pending: dict[int, dict[tuple[str, TopicPartition], rec.OffsetCommitValue]] = {}

    def apply(self, record: rec.GroupRecord) -> None:
        tp = TopicPartition(record.topic, record.partition)
        if isinstance(record.value, rec.OffsetCommitValue):
            self._by_group.setdefault(record.group_id, {})[tp] = record.value
            return
        committed = self._by_group.get(record.group_id)
        if committed is not None:
            committed.pop(tp, None)
            if not committed:
                del self._by_group[record.group_id]

    def apply_pending(self, producer_id: int, record: rec.GroupRecord) -> None:
        """An offset committed in the producer's transaction; only offset commits are written in one."""
        if record.type != rec.RecordType.OFFSET_COMMIT or not isinstance(record.value, rec.OffsetCommitValue):
            return
        self._pending.setdefault(producer_id, {})[(record.group_id, TopicPartition(record.topic,
                                                                                     record.partition))] = record.value

    def complete_transaction(self, producer_id: int, commit: bool) -> int:
        """The producer's transaction ended here: its pending offsets become committed (COMMIT) or go (ABORT);
        how many there were."""
        pending = self._pending.pop(producer_id, {})
        if commit:
            for (group_id, tp), value in pending.items():
                self._by_group.setdefault(group_id, {})[tp] = value
        return len(pending)

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with an offset some open transaction commits."""
        return {tp for offsets in self._pending.values() for (group, tp) in offsets if group == group_id}

    def of(self, group_id: str) -> Mapping[TopicPartition, rec.OffsetCommitValue]:
        return self._by_group.get(group_id, {})

    def group_ids(self) -> list[str]:
        return sorted(self._by_group)

    def fetch(self, group_id: str, partitions: Iterable[TopicPartition] | None,
              require_stable: bool = False) -> dict[TopicPartition, CommittedOffset]:
        """The committed offsets of these partitions (-1 where none), or of every partition with one. With
        `require_stable`, a partition whose offset an open transaction commits is UNSTABLE_OFFSET_COMMIT
        (Kafka's answer: the caller retries once the transaction ends) instead of the older offset."""
        committed = self.of(group_id)
        unstable = self.pending_partitions(group_id) if require_stable else set()
        wanted = sorted(committed) if partitions is None else list(partitions)
        result = {}
        for tp in wanted:
            value = committed.get(tp)
            if tp in unstable:
                result[tp] = CommittedOffset(error=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            elif value is None:
                result[tp] = CommittedOffset()
            else:
                result[tp] = CommittedOffset(value.offset, value.leader_epoch, value.metadata,
                                             value.commit_timestamp_ms)
        return result

    def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> list[rec.GroupRecord]:
        committed = self.of(group_id)
        return [rec.offset_commit(group_id, tp.topic, tp.partition, None) for tp in partitions if tp in committed]

    def delete_group(self, group_id: str) -> list[rec.GroupRecord]:
        return self.delete(group_id, sorted(self.of(group_id)))

    def expire(self, groups: Mapping[str, ConsumerGroup], wall_ms: int) -> list[rec.GroupRecord]:
        """Tombstones for every offset past its retention."""
        retention_ms = self._config.offsets_retention_ms
        expired = []
        for group_id in self.group_ids():
            group = groups.get(group_id)
            for tp, value in sorted(self.of(group_id).items()):
                if group is None or not group.members:
                    since = max(value.commit_timestamp_ms, group.empty_since_ms if group is not None else 0)
                elif tp.topic in group.subscription_counts:
                    continue
                else:
                    since = value.commit_timestamp_ms
                if wall_ms - since > retention_ms:
                    expired.append(rec.offset_commit(group_id, tp.topic, tp.partition, None))
        return expired
