"""The controller's decisions, as pure functions: no I/O, no clock, no randomness.

Inputs are the controller's view (partition states, replica lists, the live
broker set); outputs are new partition states or a `Rejection` with Kafka's
error code and one sentence. The driver (`replog.controller.driver`) persists
what these return, then tells the brokers. Only the standard library,
`replog.core` and the pure record types of `replog.zk.records` are used.

- topic creation: `plan_topic` (validation), `assign_replicas` (Kafka's
  round-robin placement with leaders spread evenly, rack-aware when every
  broker has a rack), `new_partition_state`; `plan_new_partitions` grows a topic;
- leader election and ISR changes: the rules are `replog.core.election`'s;
  `reconcile_partition` applies them to a whole change of the live broker set
  (a death, a return, a controller taking over), `judge_isr_proposal` to an
  AlterPartition proposal, `elect_on_request` to ElectLeaders and the leader
  rebalance, and `shut_down_replica` to a controlled shutdown, in the
  controller's records (`replog.zk.records`).

Brokers in controlled shutdown are live (their replicas have not failed) but
never electable: the functions take the two sets apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from replog.core import election
from replog.core import messages as core
from replog.core.errors import ErrorCode
from replog.core.invariant import require
from replog.core.messages import AlterPartitionRequest
from replog.core.outcome import Rejection
from replog.core.topic_partition import TopicPartition
from replog.zk.records import NO_LEADER, LeaderAndIsr


def new_partition_state(replicas: Sequence[int], controller_epoch: int) -> LeaderAndIsr:
    """A new partition (every replica live, as placement ensures): core's initial state."""
    return _stored(election.initial_state(tuple(replicas)), controller_epoch)


# -- leader election: replog.core.election's rules, for the controller's records -----------------


@dataclasses.dataclass(frozen=True)
class PartitionChange:
    partition: TopicPartition
    before: LeaderAndIsr
    after: LeaderAndIsr
    unclean: bool = False  # the leader was elected from outside the ISR

    @property
    def leader_changed(self) -> bool:
        return self.before.leader != self.after.leader

    def describe(self) -> str:
        before, after = self.before, self.after
        if self.leader_changed:
            leadership = (f"leader {before.leader} -> {after.leader}{' (unclean)' if self.unclean else ''}, "
                          f"leader epoch {before.leader_epoch} -> {after.leader_epoch}")
        else:
            leadership = f"leader {after.leader} at leader epoch {after.leader_epoch}"
        return (f"{self.partition}: {leadership}, ISR {list(before.isr)} -> {list(after.isr)}, "
                f"partition epoch {before.partition_epoch} -> {after.partition_epoch}")


def reconcile_partition(
    partition: TopicPartition,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    live: Collection[int],
    *,
    unclean_allowed: bool,
    controller_epoch: int,
    shutting_down: Collection[int] = (),
) -> PartitionChange | None:
    """The partition's state for this live broker set; None when it stays as it is.

    Core's rules applied as a batch: every replica that is not live fails (in
    id order: it leaves the ISR, and a leader is replaced by a live ISR member,
    or any live replica when unclean election is allowed), then an offline
    partition may get a leader among the live brokers. The last ISR member
    keeps its place, so it can lead again without loss when it returns. The
    steps of one pass are one write, so the partition epoch grows by one.
    A broker shutting down keeps what it has but is never elected.
    """
    decided = _core(state, replicas)
    unclean = False
    electable = set(live) - set(shutting_down)
    for broker in sorted(set(replicas) - set(live)):
        step = election.on_broker_failure(decided, broker, electable,
                                          unclean_leader_election_enable=unclean_allowed)
        decided, unclean = step.state, unclean or step.unclean
    step = election.on_broker_startup(decided, electable, unclean_leader_election_enable=unclean_allowed)
    decided, unclean = step.state, unclean or step.unclean
    if (decided.leader, decided.isr) == (state.leader, state.isr):
        return None
    after = dataclasses.replace(_stored(decided, controller_epoch), partition_epoch=state.partition_epoch + 1)
    require(after.leader == NO_LEADER or (after.leader in live and after.leader in after.isr),
            "%s: elected %d, not a live ISR member of %s", partition, after.leader, after.isr)
    require(after.leader_epoch == state.leader_epoch + (1 if after.leader != state.leader else 0),
            "%s: leader epoch %d -> %d for leader %d -> %d", partition, state.leader_epoch, after.leader_epoch,
            state.leader, after.leader)
    return PartitionChange(partition, state, after, unclean)


def elect_on_request(
    partition: TopicPartition,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    electable: Collection[int],
    *,
    unclean: bool,
    controller_epoch: int,
) -> tuple[ErrorCode, PartitionChange | None]:
    """ElectLeaders for one partition: preferred (the first replica, when alive and in sync) or
    unclean (a partition without a live leader takes any live replica). NONE with the change,
    or ELECTION_NOT_NEEDED / PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE."""
    current = _core(state, replicas)
    if unclean:
        error, step = election.elect_unclean_leader(current, electable)
        decided, was_unclean = step.state, step.unclean
    else:
        error, decided = election.elect_preferred_leader(current, electable)
        was_unclean = False
    if error != ErrorCode.NONE:
        return error, None
    return error, PartitionChange(partition, state, _stored(decided, controller_epoch), was_unclean)


def shut_down_replica(
    partition: TopicPartition,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    broker: int,
    electable: Collection[int],
    *,
    controller_epoch: int,
) -> PartitionChange | None:
    """Controlled shutdown of `broker` for one partition (core's `on_controlled_shutdown`): it
    leaves the ISR and hands its leadership to a live ISR member; None when nothing changes
    (it is the last ISR member, or no other member can lead)."""
    decided = election.on_controlled_shutdown(_core(state, replicas), broker, electable)
    if (decided.state.leader, decided.state.isr) == (state.leader, state.isr):
        return None
    return PartitionChange(partition, state, _stored(decided.state, controller_epoch))


def change_replicas(
    partition: TopicPartition,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    new_replicas: Sequence[int],
    electable: Collection[int],
    *,
    controller_epoch: int,
) -> PartitionChange | None:
    """A reassignment's step for one partition: the replica set becomes `new_replicas`. A set
    that only grows keeps leader and ISR (core's `with_replicas`); one that drops replicas drops
    them from the ISR and moves a leader being dropped (core's `move_to_replicas`). None when
    no replica that stays is a live ISR member to lead."""
    current, target = _core(state, replicas), tuple(new_replicas)
    if set(target) >= set(replicas):
        decided = election.with_replicas(current, target)
    else:
        step = election.move_to_replicas(current, target, electable)
        if step is None:
            return None
        decided = step.state
    return PartitionChange(partition, state, _stored(decided, controller_epoch))


# -- ISR changes from leaders (AlterPartition) -------------------------------------------------


def judge_isr_proposal(
    request: AlterPartitionRequest,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    live_broker_epochs: Mapping[int, int],
    shutting_down: Collection[int],
    controller_epoch: int,
) -> tuple[Rejection | None, LeaderAndIsr]:
    """Core's AlterPartition rules: (None, the state to write, or `state` itself when nothing
    changes) or (why not, `state`). Every member comes with the broker epoch the leader saw it
    fetch with (KIP-903); a broker in controlled shutdown may not join."""
    current = _core(state, replicas)
    error, decided = election.alter_partition(current, request, live_broker_epochs, shutting_down)
    if error != ErrorCode.NONE:
        why = _why_not(error, request, current, live_broker_epochs, shutting_down)
        return Rejection(error, why), state
    if (decided.isr, decided.partition_epoch) == (state.isr, state.partition_epoch):
        return None, state
    return None, _stored(decided, controller_epoch)


def _why_not(
    error: ErrorCode, request: AlterPartitionRequest, state: core.PartitionState,
    live_broker_epochs: Mapping[int, int], shutting_down: Collection[int],
) -> str:
    if error == ErrorCode.FENCED_LEADER_EPOCH:
        return f"leader epoch {request.leader_epoch} is older than the current {state.leader_epoch}"
    if error == ErrorCode.UNKNOWN_LEADER_EPOCH:
        return (f"leader epoch {request.leader_epoch} is newer than this controller's {state.leader_epoch}; "
                "it may no longer be the active controller")
    if error == ErrorCode.INVALID_UPDATE_VERSION:
        return f"partition epoch {request.partition_epoch} is not the current {state.partition_epoch}"
    if error == ErrorCode.INELIGIBLE_REPLICA:
        return "; ".join(election.ineligible_isr_members(state, request, live_broker_epochs, shutting_down))
    if request.leader_id != state.leader:
        return f"broker {request.leader_id} is not the leader (the leader is {state.leader})"
    return (f"the ISR {list(request.isr)} must be distinct replicas of {list(state.replicas)} "
            f"including the leader {state.leader}")


def _core(state: LeaderAndIsr, replicas: Sequence[int]) -> core.PartitionState:
    return core.PartitionState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                               partition_epoch=state.partition_epoch, replicas=tuple(replicas))


def _stored(state: core.PartitionState, controller_epoch: int) -> LeaderAndIsr:
    return LeaderAndIsr(leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
                          controller_epoch=controller_epoch, partition_epoch=state.partition_epoch)
