"""A consumer group as its records build it: epochs, members, the target assignment, who owns what.

Every change of a group is a record (records.py), and `apply` is the only
code that changes a group: the coordinator makes records, applies them, and
writes them; after a failover the new coordinator applies the same records in
the same order, and ends in the same state.

The group's state follows from its epochs and members, and changes only along
this table (`GROUP_TRANSITIONS`):

    state        event                                     next state
    -----------  ----------------------------------------  -----------
    EMPTY        a member joins                            ASSIGNING
    ASSIGNING    the target is computed, members differ    RECONCILING
    ASSIGNING    the target is computed, members own it    STABLE
    RECONCILING  the last member reaches its target        STABLE
    STABLE       membership, subscriptions or topics move  ASSIGNING
    RECONCILING  membership, subscriptions or topics move  ASSIGNING
    any          the last member leaves                    EMPTY
    EMPTY        deleted, or its offsets expired           DEAD
"""

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..invariant import require
from ..topic_partition import TopicPartition
from .member import Member, MemberState, Partitions
from .records import (
    CurrentMemberAssignmentValue,
    GroupMetadataValue,
    GroupRecord,
    GroupSubscriptionsValue,
    MemberMetadataValue,
    RecordType,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
)


class GroupState(enum.IntEnum):
    # The numbers are the wire's GroupState values.
    EMPTY = 1
    ASSIGNING = 2
    RECONCILING = 3
    STABLE = 4
    DEAD = 5


class GroupEvent(enum.Enum):
    MEMBER_JOINED = "a member joins"
    TARGET_COMPUTED = "the target is computed"
    MEMBER_RECONCILED = "a member reaches its target"
    EPOCH_BUMPED = "membership, subscriptions or topics move"
    LAST_MEMBER_LEFT = "the last member leaves"
    DELETED = "deleted, or its offsets expired"


GROUP_TRANSITIONS: Mapping[tuple[GroupState, GroupEvent], frozenset[GroupState]] = {
    (GroupState.EMPTY, GroupEvent.MEMBER_JOINED): frozenset({GroupState.ASSIGNING}),
    (GroupState.ASSIGNING, GroupEvent.TARGET_COMPUTED): frozenset({GroupState.RECONCILING, GroupState.STABLE}),
    (GroupState.RECONCILING, GroupEvent.MEMBER_RECONCILED): frozenset({GroupState.RECONCILING, GroupState.STABLE}),
    (GroupState.STABLE, GroupEvent.EPOCH_BUMPED): frozenset({GroupState.ASSIGNING}),
    (GroupState.RECONCILING, GroupEvent.EPOCH_BUMPED): frozenset({GroupState.ASSIGNING}),
    (GroupState.ASSIGNING, GroupEvent.EPOCH_BUMPED): frozenset({GroupState.ASSIGNING}),
    (GroupState.ASSIGNING, GroupEvent.LAST_MEMBER_LEFT): frozenset({GroupState.EMPTY}),
    (GroupState.RECONCILING, GroupEvent.LAST_MEMBER_LEFT): frozenset({GroupState.EMPTY}),
    (GroupState.STABLE, GroupEvent.LAST_MEMBER_LEFT): frozenset({GroupState.EMPTY}),
    (GroupState.EMPTY, GroupEvent.DELETED): frozenset({GroupState.DEAD}),
}


def check_transition(before: GroupState, event: GroupEvent, after: GroupState) -> None:
    """A group's state may change only as the table says (or stay as it is); anything else is a bug."""
    if before is after:
        return
    require(after in GROUP_TRANSITIONS.get((before, event), frozenset()),
            "group state %s --%s--> %s is not in the table", before.name, event.value, after.name)


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)  # member id -> its target partitions
    subscription_counts: Mapping[str, int] = field(default_factory=dict)  # subscribed topic -> partitions
    owners: dict[TopicPartition, str] = field(default_factory=dict)  # partition -> member holding it
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    empty_since_ms: int = 0  # wall clock; when the group last lost its last member

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.assignment_epoch != self.group_epoch:
            return GroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values() if not m.left_for_now):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def owner_of(self, tp: TopicPartition) -> str | None:
        return self.owners.get(tp)

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties to the smallest name), else the default."""
        asked: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                asked[member.server_assignor] = asked.get(member.server_assignor, 0) + 1
        if not asked:
            return default
        return min(asked, key=lambda name: (-asked[name], name))

    def subscribed_topics(self) -> set[str]:
        return set(self.subscription_counts)

    # -- the one way a group changes ------------------------------------------------------

    def apply(self, record: GroupRecord) -> None:
        value = record.value
        kind = record.type
        if kind == RecordType.GROUP_METADATA:
            if isinstance(value, GroupMetadataValue):
                self.group_epoch = value.epoch
        elif kind == RecordType.GROUP_SUBSCRIPTIONS:
            self.subscription_counts = dict(value.partition_counts) if isinstance(value, GroupSubscriptionsValue) else {}
        elif kind == RecordType.TARGET_ASSIGNMENT_METADATA:
            if isinstance(value, TargetAssignmentMetadataValue):
                self.assignment_epoch = value.assignment_epoch
        elif kind == RecordType.TARGET_ASSIGNMENT_MEMBER:
            if isinstance(value, TargetAssignmentMemberValue):
                self.target[record.member_id] = value.partitions
            else:
                self.target.pop(record.member_id, None)
        elif kind == RecordType.MEMBER_METADATA:
            self._apply_member_metadata(record.member_id, value)
        elif kind == RecordType.CURRENT_MEMBER_ASSIGNMENT:
            self._apply_current_assignment(record.member_id, value)

    def _apply_member_metadata(self, member_id: str, value: MemberMetadataValue | None) -> None:
        if value is None:
            member = self.members.pop(member_id, None)
            if member is not None:
                self._release(member)
                if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
                    del self.static_members[member.instance_id]
            return
        member = self.members.get(member_id) or Member(member_id)
        self.members[member_id] = replace(
            member, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=value.subscribed_topic_names,
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
        )
        if value.instance_id is not None:
            self.static_members[value.instance_id] = member_id

    def _apply_current_assignment(self, member_id: str, value: CurrentMemberAssignmentValue | None) -> None:
        member = self.members.get(member_id)
        if member is None:
            return  # the member's metadata was deleted first: nothing is left of it
        self._release(member)
        if value is None:
            member = replace(member, member_epoch=0, previous_member_epoch=-1, state=MemberState.STABLE,
                             assigned={}, pending_revocation={})
        else:
            member = replace(member, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                             state=MemberState(value.state), assigned=value.assigned,
                             pending_revocation=value.pending_revocation)
        self.members[member_id] = member
        for tp in member.owned():
            self.owners[tp] = member_id

    def _release(self, member: Member) -> None:
        for tp in member.owned():
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]
