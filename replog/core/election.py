"""The controller's rules for one partition, as pure functions (in the manner of
Kafka's PartitionChangeBuilder).

Each takes the partition's current registration and what the controller knows
of the brokers, and returns the next registration. A leader change bumps the
leader epoch and the partition epoch; an ISR change alone bumps the partition
epoch. The real controller persists the result in ZooKeeper before it acts on
it; the simulator applies it in memory.
"""

from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from .errors import ErrorCode
from .messages import NO_LEADER, AlterPartitionRequest, IsrMember, PartitionState

Key = TypeVar("Key", bound=Hashable)

# The broker epoch of an ISR member the leader has none to give for (itself, or a
# follower it has not heard from since it took over).
NO_BROKER_EPOCH = -1


def initial_state(replicas: tuple[int, ...]) -> PartitionState:
    """A new partition: the first (preferred) replica leads, every replica is in sync."""
    return PartitionState(
        leader=replicas[0], leader_epoch=0, isr=replicas, partition_epoch=0, replicas=replicas
    )


@dataclass(frozen=True, slots=True)
class Election:
    state: PartitionState
    # The new leader was not in the ISR: committed records may be lost, and the
    # unclean-election metric counts it.
    unclean: bool = False


def elect_leader(
    state: PartitionState, live_brokers: Collection[int], *, unclean_leader_election_enable: bool
) -> Election:
    """Elect a leader among `state.isr` (which must not hold a dead former leader
    unless it is the last member): the first live member in replica order. With
    none alive, the first live replica if unclean election is allowed, else no
    leader. The leader epoch is bumped whenever the leader changes, to fence
    the old one."""
    for replica in state.replicas:
        if replica in state.isr and replica in live_brokers:
            return Election(_with_leader(state, replica, state.isr))
    if unclean_leader_election_enable:
        for replica in state.replicas:
            if replica in live_brokers:
                return Election(_with_leader(state, replica, (replica,)), unclean=True)
    return Election(_with_leader(state, NO_LEADER, state.isr))


def _with_leader(state: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
    if leader == state.leader and isr == state.isr:
        return state
    if leader == state.leader:
        return replace(state, isr=isr, partition_epoch=state.partition_epoch + 1)
    return replace(
        state,
        leader=leader,
        leader_epoch=state.leader_epoch + 1,
        isr=isr,
        partition_epoch=state.partition_epoch + 1,
    )


def _without(isr: tuple[int, ...], broker: int) -> tuple[int, ...]:
    """The ISR without `broker`, unless that would leave it empty: the last member
    stays, so that it alone may lead again when it comes back."""
    remaining = tuple(replica for replica in isr if replica != broker)
    return remaining or isr


def on_broker_failure(
    state: PartitionState,
    broker: int,
    live_brokers: Collection[int],
    *,
    unclean_leader_election_enable: bool,
) -> Election:
    """A broker's session ended: it leaves the ISR, and if it led, a new leader is elected.

    Leaving the ISR matters for data as much as for availability: a broker
    that crashed may have lost its unflushed records, and must catch up before
    it can count towards the high watermark or be elected again.
    """
    if broker not in state.replicas:
        return Election(state)
    isr = _without(state.isr, broker)
    if broker != state.leader:
        return Election(_with_leader(state, state.leader, isr))
    shrunk = replace(state, isr=isr)
    return elect_leader(shrunk, live_brokers, unclean_leader_election_enable=unclean_leader_election_enable)


def on_controlled_shutdown(state: PartitionState, broker: int, live_brokers: Collection[int]) -> Election:
    """A broker asks to stop: it leaves the ISR, and its leadership moves to another
    live ISR member now, not after its session expires (Kafka's controlled shutdown).
    The last ISR member keeps its place: there is no one to hand over to."""
    isr = tuple(replica for replica in state.isr if replica != broker)
    if broker not in state.isr or not isr:
        return Election(state)
    if broker != state.leader:
        return Election(_with_leader(state, state.leader, isr))
    for replica in state.replicas:
        if replica in isr and replica in live_brokers:
            return Election(_with_leader(state, replica, isr))
    return Election(state)


def on_broker_startup(
    state: PartitionState, live_brokers: Collection[int], *, unclean_leader_election_enable: bool
) -> Election:
    """A broker registered: an offline partition may now get a leader."""
    if state.leader != NO_LEADER:
        return Election(state)
    return elect_leader(state, live_brokers, unclean_leader_election_enable=unclean_leader_election_enable)


def elect_preferred_leader(state: PartitionState, live_brokers: Collection[int]) -> tuple[ErrorCode, PartitionState]:
    """Preferred-leader election: the first replica leads again, provided it is alive and in
    the ISR (so no committed record can be lost by the move)."""
    preferred = state.replicas[0]
    if state.leader == preferred:
        return ErrorCode.ELECTION_NOT_NEEDED, state
    if preferred not in live_brokers or preferred not in state.isr:
        return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, state
    return ErrorCode.NONE, _with_leader(state, preferred, state.isr)


def elect_unclean_leader(state: PartitionState, live_brokers: Collection[int]) -> tuple[ErrorCode, Election]:
    """An unclean election an operator asked for: a partition without a live leader takes a
    live ISR member if there is one, else any live replica (whatever the topic's
    unclean.leader.election.enable says). A partition with a live leader is left alone."""
    if state.leader != NO_LEADER and state.leader in live_brokers:
        return ErrorCode.ELECTION_NOT_NEEDED, Election(state)
    election = elect_leader(state, live_brokers, unclean_leader_election_enable=True)
    if election.state.leader == NO_LEADER:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, Election(state)
    return ErrorCode.NONE, election


def preferred_elections_due(
    states: Mapping[Key, PartitionState], live_brokers: Collection[int], imbalance_percentage_max: int
) -> list[Key]:
    """Kafka's auto.leader.rebalance.enable check: for each broker, the share of the partitions
    it prefers to lead that another broker leads; above leader.imbalance.per.broker.percentage,
    those of them where it is alive and in the ISR are due a preferred-leader election."""
    preferred_by: dict[int, list[Key]] = {}
    for key, state in states.items():
        preferred_by.setdefault(state.replicas[0], []).append(key)
    due: list[Key] = []
    for broker in sorted(preferred_by):
        keys = preferred_by[broker]
        led_elsewhere = [key for key in keys if states[key].leader != broker]
        if len(led_elsewhere) * 100 <= imbalance_percentage_max * len(keys):
            continue
        if broker in live_brokers:
            due += [key for key in led_elsewhere if broker in states[key].isr]
    return due


def with_replicas(state: PartitionState, replicas: tuple[int, ...]) -> PartitionState:
    """A reassignment starts (or changes course): the replica set becomes `replicas` (target and
    original together); leader and ISR stay. The partition epoch grows, so that the leader
    learns of the replicas it must now serve (KIP-455)."""
    return replace(state, replicas=replicas, partition_epoch=state.partition_epoch + 1)


def move_to_replicas(
    state: PartitionState, replicas: tuple[int, ...], live_brokers: Collection[int]
) -> Election | None:
    """A reassignment ends (completed, or cancelled back to the original replicas): the ISR
    keeps only members of `replicas`; the leader stays if it is one of them and alive,
    otherwise the first live one of the new ISR in replica order leads. None when no
    replica of `replicas` is a live ISR member: the change must wait."""
    isr = tuple(replica for replica in state.isr if replica in replicas)
    moved = replace(state, replicas=replicas, isr=isr, partition_epoch=state.partition_epoch + 1)
    if state.leader in isr and state.leader in live_brokers:
        return Election(moved)
    for replica in replicas:
        if replica in isr and replica in live_brokers:
            return Election(replace(moved, leader=replica, leader_epoch=state.leader_epoch + 1))
    return None


def alter_partition(
    state: PartitionState,
    request: AlterPartitionRequest,
    live_broker_epochs: Mapping[int, int],
    shutting_down: Collection[int] = (),
) -> tuple[ErrorCode, PartitionState]:
    """Validate a leader's ISR proposal; answer with the error and the (new) registration.

    `live_broker_epochs` holds every live broker's current broker epoch;
    `shutting_down` the brokers in controlled shutdown, which may not join."""
    if request.leader_epoch < state.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH, state
    if request.leader_epoch > state.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH, state
    if request.leader_id != state.leader:
        return ErrorCode.INVALID_REQUEST, state
    new_isr = request.isr
    if request.partition_epoch != state.partition_epoch:
        # The leader resends a proposal we applied but whose answer was lost:
        # the result is already there, so say so instead of failing it.
        if new_isr == state.isr:
            return ErrorCode.NONE, state
        return ErrorCode.INVALID_UPDATE_VERSION, state
    if (
        state.leader not in new_isr
        or len(set(new_isr)) != len(new_isr)
        or not set(new_isr) <= set(state.replicas)
    ):
        return ErrorCode.INVALID_REQUEST, state
    if ineligible_isr_members(state, request, live_broker_epochs, shutting_down):
        return ErrorCode.INELIGIBLE_REPLICA, state
    if new_isr == state.isr:
        return ErrorCode.NONE, state
    return ErrorCode.NONE, replace(state, isr=new_isr, partition_epoch=state.partition_epoch + 1)


def ineligible_isr_members(
    state: PartitionState,
    request: AlterPartitionRequest,
    live_broker_epochs: Mapping[int, int],
    shutting_down: Collection[int] = (),
) -> list[str]:
    """Why members of a proposed ISR may not be in it, one sentence each (KIP-903).

    A member joining must be live, not in controlled shutdown, and proposed with
    the broker epoch of its current registration: the leader saw that
    incarnation fetching. An older epoch means the fetch that made it eligible
    came from before a restart that may have lost its unflushed records.
    A member already in the ISR is checked only when the leader names its
    epoch (not NO_BROKER_EPOCH, which the leader gives for itself).
    """
    reasons = (_why_ineligible(member, member.broker_id in state.isr, live_broker_epochs, shutting_down)
               for member in request.new_isr)
    return [reason for reason in reasons if reason is not None]


def _why_ineligible(
    member: IsrMember, in_isr: bool, live_broker_epochs: Mapping[int, int], shutting_down: Collection[int]
) -> str | None:
    if in_isr and member.broker_epoch == NO_BROKER_EPOCH:
        return None
    live_epoch = live_broker_epochs.get(member.broker_id)
    if live_epoch is None:
        return f"broker {member.broker_id} is not alive"
    if not in_isr and member.broker_id in shutting_down:
        return f"broker {member.broker_id} is in controlled shutdown"
    if member.broker_epoch != live_epoch:
        return (f"broker {member.broker_id} was proposed with broker epoch {member.broker_epoch}, but its "
                f"current registration has broker epoch {live_epoch}")
    return None
