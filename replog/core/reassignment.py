"""A partition's replica sets during a reassignment (KIP-455), as pure functions.

While a partition moves, its replicas are the target replicas followed by the
original ones that are being removed; `adding` are the target replicas not in
the original set, `removing` the original ones not in the target. The
controller records all three in the topic znode, so a new controller finds the
reassignment where the last one left it. The steps:

1. start: the replicas become target + original; the new replicas start
   fetching from the leader;
2. wait until every target replica is in the ISR;
3. finish: the replicas become the target; the leader moves if it is being
   removed; the removed replicas are stopped and their logs deleted.

A new target while one is in progress starts again from the original replicas;
an empty target (a cancel) finishes towards the original replicas instead.
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .errors import ErrorCode
from .outcome import Rejection
from .topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class ReplicaSets:
    replicas: tuple[int, ...]  # every replica now: target first, then those being removed
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """ListPartitionReassignments' answer for one partition being moved."""

    partition: TopicPartition
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def plan_reassignment(current: ReplicaSets, target: Sequence[int], live: Collection[int]) -> ReplicaSets | Rejection:
    """The replica sets that move a partition from its original replicas to `target`."""
    target = tuple(target)
    if len(set(target)) != len(target):
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"the replicas {list(target)} name a broker twice")
    missing = sorted(set(target) - set(live))
    if missing:
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"brokers {missing} are not alive")
    original = current.original
    return ReplicaSets(
        replicas=target + tuple(r for r in original if r not in target),
        adding=tuple(r for r in target if r not in original),
        removing=tuple(r for r in original if r not in target),
    )


def plan_cancel(current: ReplicaSets) -> ReplicaSets | Rejection:
    """The replica sets that take a partition back to its original replicas."""
    if not current.in_progress:
        return Rejection(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment of this partition is in progress")
    return ReplicaSets(current.original)


def is_complete(sets: ReplicaSets, isr: Collection[int]) -> bool:
    """Every target replica has caught up: the original ones may go."""
    return set(sets.target) <= set(isr)
