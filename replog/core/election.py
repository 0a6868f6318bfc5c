"""The controller's rules for one partition, as pure functions (in the manner of
Kafka's PartitionChangeBuilder).

Each takes the partition's current registration and what the controller knows
of the brokers, and returns the next registration. A leader change bumps the
leader epoch and the partition epoch; an ISR change alone bumps the partition
epoch. The real controller persists the result in ZooKeeper before it acts on
it; the simulator applies it in memory.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from .errors import ErrorCode
from .messages import NO_LEADER, AlterPartitionRequest, PartitionState


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


def alter_partition(
    state: PartitionState, request: AlterPartitionRequest, live_broker_epochs: Mapping[int, int]
) -> tuple[ErrorCode, PartitionState]:
    """Validate a leader's ISR proposal; answer with the error and the (new) registration."""
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
    for member in request.new_isr:
        if member.broker_id in state.isr:
            continue
        # KIP-903: a replica joins only as the incarnation the leader saw fetching.
        live_epoch = live_broker_epochs.get(member.broker_id)
        if live_epoch is None or live_epoch != member.broker_epoch:
            return ErrorCode.INELIGIBLE_REPLICA, state
    if new_isr == state.isr:
        return ErrorCode.NONE, state
    return ErrorCode.NONE, replace(state, isr=new_isr, partition_epoch=state.partition_epoch + 1)
