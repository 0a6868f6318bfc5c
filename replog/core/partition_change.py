"""The controller's changes of one partition's leadership and ISR, as pure functions over an image.

In the manner of KRaft's PartitionChangeBuilder: each function takes the
partition's state and the `ClusterImage`, applies `election`'s rules, and
returns the `PartitionChange` to persist (None when nothing changes). The
controller writes `after` to ZooKeeper and only then tells the brokers; the
simulator's controller applies it in memory. Both call these functions.

- `reconcile_partition`: the live brokers changed (a death, a return, a
  controller taking over);
- `elect_on_request`: ElectLeaders and the leader rebalance;
- `shut_down_replica`: a broker's controlled shutdown;
- `change_replicas`: a step of a reassignment.

The AlterPartition rule is `isr_judgement`'s.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace

from . import election
from .cluster_image import ClusterImage
from .errors import ErrorCode
from .invariant import require
from .messages import NO_LEADER, PartitionState
from .outcome import SUCCESS, Outcome
from .topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class PartitionChange:
    partition: TopicPartition
    before: PartitionState
    after: PartitionState
    unclean: bool = False  # the leader was elected from outside the ISR

    @property
    def leader_changed(self) -> bool:
        return self.before.leader != self.after.leader

    @property
    def elected(self) -> bool:
        """A new live leader: what replog_leader_elections_total counts."""
        return self.leader_changed and self.after.leader != NO_LEADER

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
    partition: TopicPartition, state: PartitionState, image: ClusterImage, *, unclean_allowed: bool
) -> PartitionChange | None:
    """The partition's state for the image's live brokers; None when it stays as it is.

    Core's rules applied as a batch: every replica that is not live fails (in
    id order: it leaves the ISR, and a leader is replaced by a live ISR member,
    or any live replica when unclean election is allowed), then an offline
    partition may get a leader among the live brokers. The last ISR member
    keeps its place, so it can lead again without loss when it returns. The
    steps of one pass are one write, so the partition epoch grows by one.
    A broker shutting down keeps what it has but is never elected.
    """
    decided, unclean = state, False
    for broker in sorted(set(state.replicas) - image.live):
        step = election.on_broker_failure(decided, broker, image.electable,
                                          unclean_leader_election_enable=unclean_allowed)
        decided, unclean = step.state, unclean or step.unclean
    step = election.on_broker_startup(decided, image.electable, unclean_leader_election_enable=unclean_allowed)
    decided, unclean = step.state, unclean or step.unclean
    if (decided.leader, decided.isr) == (state.leader, state.isr):
        return None
    after = replace(decided, partition_epoch=state.partition_epoch + 1)
    require(after.leader == NO_LEADER or (after.leader in image.live and after.leader in after.isr),
            "%s: elected %d, not a live ISR member of %s", partition, after.leader, after.isr)
    require(after.leader_epoch == state.leader_epoch + (1 if after.leader != state.leader else 0),
            "%s: leader epoch %d -> %d for leader %d -> %d", partition, state.leader_epoch, after.leader_epoch,
            state.leader, after.leader)
    return PartitionChange(partition, state, after, unclean)


def elect_on_request(
    partition: TopicPartition, state: PartitionState, image: ClusterImage, *, unclean: bool
) -> tuple[Outcome, PartitionChange | None]:
    """ElectLeaders for one partition: preferred (the first replica, when alive and in sync) or
    unclean (a partition without a live leader takes any live replica). SUCCESS with the change,
    or ELECTION_NOT_NEEDED / PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE with why."""
    if unclean:
        error, step = election.elect_unclean_leader(state, image.electable)
        decided, was_unclean = step.state, step.unclean
    else:
        error, decided = election.elect_preferred_leader(state, image.electable)
        was_unclean = False
    if error != ErrorCode.NONE:
        return Outcome(error, _why_no_election(error, state, image)), None
    return SUCCESS, PartitionChange(partition, state, decided, was_unclean)


def _why_no_election(error: ErrorCode, state: PartitionState, image: ClusterImage) -> str:
    replicas = list(state.replicas)
    if error == ErrorCode.ELECTION_NOT_NEEDED:
        return f"broker {state.leader} leads already"
    if error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE:
        return (f"the preferred leader {replicas[0]} is not a live ISR member "
                f"(ISR {list(state.isr)}, live brokers {sorted(image.electable)})")
    return f"no replica of {replicas} is alive"


def shut_down_replica(
    partition: TopicPartition, state: PartitionState, broker: int, image: ClusterImage
) -> PartitionChange | None:
    """Controlled shutdown of `broker` for one partition (core's `on_controlled_shutdown`): it
    leaves the ISR and hands its leadership to a live ISR member that is not shutting down;
    None when nothing changes (it is the last ISR member, or no other member can lead)."""
    decided = election.on_controlled_shutdown(state, broker, image.electable).state
    if (decided.leader, decided.isr) == (state.leader, state.isr):
        return None
    return PartitionChange(partition, state, decided)


def change_replicas(
    partition: TopicPartition, state: PartitionState, new_replicas: Sequence[int], image: ClusterImage
) -> PartitionChange | None:
    """A reassignment's step for one partition: the replica set becomes `new_replicas`. A set
    that only grows keeps leader and ISR (core's `with_replicas`); one that drops replicas drops
    them from the ISR and moves a leader being dropped (core's `move_to_replicas`). None when
    no replica that stays is a live ISR member to lead."""
    target = tuple(new_replicas)
    if set(target) >= set(state.replicas):
        return PartitionChange(partition, state, election.with_replicas(state, target))
    step = election.move_to_replicas(state, target, image.electable)
    if step is None:
        return None
    return PartitionChange(partition, state, step.state)
