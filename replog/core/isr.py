"""The in-sync replica set: its states, and the rules a leader applies to it.

The ISR is one of three states (Kafka's CommittedPartitionState,
PendingExpandIsr, PendingShrinkIsr). A change is a proposal to the controller
(AlterPartition); until the controller answers, the high watermark is computed
over the larger, "maximal" set, so that no record is committed that a member
of either the old or the new ISR lacks.

    state          event                 next state
    -------------  --------------------  -------------
    Committed      propose expand        PendingExpand
    Committed      propose shrink        PendingShrink
    PendingExpand  accepted | rejected   Committed
    PendingShrink  accepted | rejected   Committed
    any            LeaderAndIsr          Committed
"""

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .invariant import require
from .messages import AlterPartitionRequest

UNKNOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class Proposal:
    proposal_id: int
    request: AlterPartitionRequest
    sent_ms: int


@dataclass(frozen=True, slots=True)
class CommittedIsr:
    isr: tuple[int, ...]

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self.isr


@dataclass(frozen=True, slots=True)
class PendingExpand:
    isr: tuple[int, ...]
    new_member: int
    proposal: Proposal

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self.isr + (self.new_member,)


@dataclass(frozen=True, slots=True)
class PendingShrink:
    isr: tuple[int, ...]
    removed: tuple[int, ...]
    proposal: Proposal

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self.isr


IsrState = CommittedIsr | PendingExpand | PendingShrink


class IsrEvent(enum.Enum):
    PROPOSE_EXPAND = "propose expand"
    PROPOSE_SHRINK = "propose shrink"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    LEADER_AND_ISR = "LeaderAndIsr"


ISR_TRANSITIONS: Mapping[tuple[type, IsrEvent], type] = {
    (CommittedIsr, IsrEvent.PROPOSE_EXPAND): PendingExpand,
    (CommittedIsr, IsrEvent.PROPOSE_SHRINK): PendingShrink,
    (PendingExpand, IsrEvent.ACCEPTED): CommittedIsr,
    (PendingExpand, IsrEvent.REJECTED): CommittedIsr,
    (PendingShrink, IsrEvent.ACCEPTED): CommittedIsr,
    (PendingShrink, IsrEvent.REJECTED): CommittedIsr,
    (CommittedIsr, IsrEvent.LEADER_AND_ISR): CommittedIsr,
    (PendingExpand, IsrEvent.LEADER_AND_ISR): CommittedIsr,
    (PendingShrink, IsrEvent.LEADER_AND_ISR): CommittedIsr,
}


def transition(state: IsrState, event: IsrEvent, next_state: IsrState) -> IsrState:
    """Move to `next_state` if the table allows it for `event`; anything else is a bug."""
    allowed = ISR_TRANSITIONS.get((type(state), event))
    require(
        allowed is type(next_state),
        "ISR transition %s --%s--> %s is not in the table",
        type(state).__name__,
        event.value,
        type(next_state).__name__,
    )
    return next_state


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower, from its fetches (Kafka's ReplicaState)."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    broker_epoch: int = -1
    log_start_offset: int = UNKNOWN_OFFSET

    def record_fetch(self, fetch_offset: int, leader_log_end_offset: int, now_ms: int, broker_epoch: int,
                     log_start_offset: int = UNKNOWN_OFFSET) -> None:
        # Caught up now if it asked for everything the leader has; caught up as of
        # the previous fetch if it now asks for everything the leader had then.
        if fetch_offset >= leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_log_end_offset
        self.last_fetch_time_ms = now_ms
        self.broker_epoch = broker_epoch
        self.log_start_offset = log_start_offset

    def is_caught_up(self, leader_log_end_offset: int, now_ms: int, replica_lag_time_ms_max: int) -> bool:
        return (
            self.log_end_offset == leader_log_end_offset
            or now_ms - self.last_caught_up_time_ms <= replica_lag_time_ms_max
        )


def high_watermark_candidate(
    leader_log_end_offset: int, maximal_isr: Iterable[int], progress: Mapping[int, FollowerProgress]
) -> int:
    """The smallest log end offset over the (maximal) ISR; the leader itself is not in `progress`."""
    candidate = leader_log_end_offset
    for replica in maximal_isr:
        follower = progress.get(replica)
        if follower is not None and follower.log_end_offset < candidate:
            candidate = follower.log_end_offset
    return candidate


def can_join_isr(follower_log_end_offset: int, high_watermark: int, leader_epoch_start_offset: int) -> bool:
    """A follower may join once it has everything committed, and everything of
    the previous leaders up to where the current leader's epoch starts."""
    return follower_log_end_offset >= high_watermark and follower_log_end_offset >= leader_epoch_start_offset


def out_of_sync_replicas(
    isr: Iterable[int],
    progress: Mapping[int, FollowerProgress],
    leader_log_end_offset: int,
    now_ms: int,
    replica_lag_time_ms_max: int,
) -> tuple[int, ...]:
    return tuple(
        replica
        for replica in isr
        if replica in progress
        and not progress[replica].is_caught_up(leader_log_end_offset, now_ms, replica_lag_time_ms_max)
    )
