"""A consumer group's member, and how its owned partitions move towards its target (KIP-848).

A member owns `assigned` partitions and may still hold `pending_revocation`
ones it must give up. Reconciliation is incremental and never gives one
partition to two members: a partition goes to its new owner only once its
previous owner's heartbeat no longer lists it.

    state                   the member ...                                epoch
    ----------------------  --------------------------------------------  ---------------
    STABLE                  owns its target                               target epoch
    UNREVOKED_PARTITIONS    must give up pending_revocation first         its old epoch
    UNRELEASED_PARTITIONS   owns what it can; waits for partitions that   target epoch
                            others still hold

`reconcile` is Kafka's CurrentAssignmentBuilder: given the member, the
group's target for it, what its heartbeat says it owns, and who owns each
partition, it returns the member's next state.
"""

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ..topic_partition import TopicPartition

JOIN_EPOCH = 0  # a heartbeat with this epoch joins the group
LEAVE_EPOCH = -1  # leaves it
LEAVE_STATIC_EPOCH = -2  # a static member leaves for now; its instance id keeps its partitions
NO_EPOCH = -1

Partitions = Mapping[str, frozenset[int]]
EMPTY: Partitions = {}


class MemberState(enum.IntEnum):
    # The numbers are the wire's MemberState values.
    STABLE = 1
    UNREVOKED_PARTITIONS = 2
    UNRELEASED_PARTITIONS = 3


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = 0
    server_assignor: str | None = None
    member_epoch: int = JOIN_EPOCH
    previous_member_epoch: int = NO_EPOCH
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)

    @property
    def left_for_now(self) -> bool:
        """A static member gone for now (epoch -2), whose instance id holds its partitions."""
        return self.member_epoch == LEAVE_STATIC_EPOCH

    def owned(self) -> set[TopicPartition]:
        """Every partition this member holds: assigned, or still to revoke."""
        return {TopicPartition(topic, p) for part in (self.assigned, self.pending_revocation)
                for topic, indexes in part.items() for p in indexes}

    def with_epoch(self, epoch: int) -> "Member":
        if epoch == self.member_epoch:
            return self
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)


def count(partitions: Partitions) -> int:
    return sum(len(indexes) for indexes in partitions.values())


def as_set(partitions: Partitions) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for topic, indexes in partitions.items() for p in indexes}


def from_set(partitions: set[TopicPartition] | frozenset[TopicPartition]) -> dict[str, frozenset[int]]:
    result: dict[str, set[int]] = {}
    for tp in partitions:
        result.setdefault(tp.topic, set()).add(tp.partition)
    return {topic: frozenset(indexes) for topic, indexes in result.items()}


def reconcile(
    member: Member,
    target_epoch: int,
    target: Partitions,
    reported_owned: Partitions | None,
    owner_of: Callable[[TopicPartition], str | None],
) -> Member:
    """The member's next assignment state; `reported_owned` is None when its heartbeat left it out."""
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if reported_owned is None or _still_owns(reported_owned, member.pending_revocation):
            return member  # it has not given them up yet
        return _next(member, member.member_epoch, target_epoch, target, reported_owned, owner_of)
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, member.member_epoch, target_epoch, target, reported_owned, owner_of)


def _next(member: Member, epoch: int, target_epoch: int, target: Partitions, reported_owned: Partitions | None,
          owner_of: Callable[[TopicPartition], str | None]) -> Member:
    assigned, revoke, unreleased = {}, {}, False
    pending_assignment: dict[str, frozenset[int]] = {}
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        kept = current & wanted
        if kept:
            assigned[topic] = kept
        if current - kept:
            revoke[topic] = current - kept
        free = set()
        for p in wanted - kept:
            owner = owner_of(TopicPartition(topic, p))
            if owner is None or owner == member.member_id:
                free.add(p)
            else:
                unreleased = True
        if free:
            pending_assignment[topic] = frozenset(free)
    if revoke and (reported_owned is None or _still_owns(reported_owned, revoke)):
        return replace(member.with_epoch(epoch), state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                       pending_revocation=revoke)
    for topic, indexes in pending_assignment.items():
        assigned[topic] = assigned.get(topic, frozenset()) | indexes
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned=assigned, pending_revocation={})


def _still_owns(reported_owned: Partitions, partitions: Partitions) -> bool:
    return any(reported_owned.get(topic, frozenset()) & indexes for topic, indexes in partitions.items())
