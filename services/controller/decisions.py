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
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from replog.core.topic_configs import InvalidConfig, validate_topic_configs
from replog.core import election
from replog.core import messages as core
from replog.core.errors import ErrorCode
from replog.core.invariant import require
from replog.core.messages import AlterPartitionRequest, IsrMember
from replog.core.outcome import SUCCESS, Outcome, Rejection
from replog.core.topic_partition import TopicPartition
from replog.zk.records import NO_LEADER, LeaderAndIsr, TopicAssignment

TOPIC_NAME_LENGTH_MAX = 249
# One topic is created in one ZooKeeper multi, which must stay under ZooKeeper's
# request size limit (jute.maxbuffer, 1 MiB): about 350 bytes per partition.
PARTITIONS_PER_TOPIC_MAX = 2000
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


# -- topic creation ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NewTopic:
    """A CreateTopics entry. -1 asks for the default; assignments replace placement."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (partition, replicas) as requested
    configs: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class TopicDefaults:
    num_partitions: int  # num.partitions
    replication_factor: int  # default.replication.factor


@dataclasses.dataclass(frozen=True)
class TopicPlan:
    """A validated topic: replicas of every partition and the configs to store."""

    name: str
    replicas: Mapping[int, tuple[int, ...]]
    configs: Mapping[str, str]

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0])


def validate_topic_name(name: str) -> str | None:
    """Why a topic name is illegal (Kafka's rules), or None."""
    if not name:
        return "a topic name must not be empty"
    if name in (".", ".."):
        return f"the topic name {name!r} is not allowed"
    if len(name) > TOPIC_NAME_LENGTH_MAX:
        return f"a topic name is at most {TOPIC_NAME_LENGTH_MAX} characters; this one has {len(name)}"
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return (f"the topic name {name!r} has a character other than ASCII letters, digits, "
                "'.', '_' and '-'")
    return None


def plan_topic(
    request: NewTopic,
    *,
    brokers: Mapping[int, str | None],
    existing_topics: Collection[str],
    defaults: TopicDefaults,
    start_index: int,
    replica_shift: int,
) -> TopicPlan | Rejection:
    """Validate a new topic and place its replicas on the live `brokers` (id -> rack).

    start_index and replica_shift pick where the round-robin starts; the
    driver draws them at random so that topics do not all lead on one broker.
    """
    problem = validate_topic_name(request.name)
    if problem is not None:
        return Rejection(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if request.name in existing_topics:
        return Rejection(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {request.name!r} already exists")
    # Kafka's metric names turn '.' into '_': two topics that differ only there would collide.
    collision = _colliding_topic(request.name, existing_topics)
    if collision is not None:
        return Rejection(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic {request.name!r} collides with the existing topic {collision!r} "
                         "('.' and '_' are the same in metric names)")
    if request.assignments:
        placed = _check_assignments(request, brokers)
    else:
        placed = _place(request, brokers, defaults, start_index, replica_shift)
    if isinstance(placed, Rejection):
        return placed
    try:
        configs = validate_topic_configs(request.configs)
    except InvalidConfig as error:
        return Rejection(ErrorCode.INVALID_CONFIG, str(error))
    return TopicPlan(request.name, placed, configs)


def _colliding_topic(name: str, existing_topics: Collection[str]) -> str | None:
    key = name.replace(".", "_")
    return next((t for t in sorted(existing_topics) if t.replace(".", "_") == key), None)


def _place(
    request: NewTopic,
    brokers: Mapping[int, str | None],
    defaults: TopicDefaults,
    start_index: int,
    replica_shift: int,
) -> dict[int, tuple[int, ...]] | Rejection:
    partitions = defaults.num_partitions if request.num_partitions == -1 else request.num_partitions
    factor = defaults.replication_factor if request.replication_factor == -1 else request.replication_factor
    if partitions < 1:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"the number of partitions must be at least 1, not {partitions}")
    if partitions > PARTITIONS_PER_TOPIC_MAX:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"a topic is created with at most {PARTITIONS_PER_TOPIC_MAX} partitions, "
                         f"not {partitions}; add more later with CreatePartitions")
    if factor < 1:
        return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"the replication factor must be at least 1, not {factor}")
    if factor > len(brokers):
        return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"replication factor {factor} is larger than the number of live brokers "
                         f"({len(brokers)})")
    return assign_replicas(brokers, partitions, factor, start_index=start_index, replica_shift=replica_shift)


def _check_assignments(request: NewTopic, brokers: Mapping[int, str | None]) -> dict[int, tuple[int, ...]] | Rejection:
    if request.num_partitions != -1 or request.replication_factor != -1:
        return Rejection(ErrorCode.INVALID_REQUEST,
                         "give either assignments or num_partitions and replication_factor, not both "
                         "(set them to -1 with assignments)")
    assignments = dict(request.assignments)
    if len(assignments) != len(request.assignments):
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "a partition is assigned more than once")
    if sorted(assignments) != list(range(len(assignments))):
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"partitions must be numbered 0 to {len(assignments) - 1} without gaps, "
                         f"not {sorted(assignments)}")
    if len(assignments) > PARTITIONS_PER_TOPIC_MAX:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"a topic is created with at most {PARTITIONS_PER_TOPIC_MAX} partitions")
    sizes = {len(replicas) for replicas in assignments.values()}
    for partition, replicas in sorted(assignments.items()):
        if not replicas:
            return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition {partition} has no replicas")
        if len(set(replicas)) != len(replicas):
            return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {partition} names a broker twice: {list(replicas)}")
        unknown = sorted(set(replicas) - set(brokers))
        if unknown:
            return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {partition} names brokers that are not alive: {unknown}")
    if len(sizes) > 1:
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "every partition must have the same number of replicas")
    return assignments


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int,
    replica_shift: int,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Kafka's placement: partition p's first replica (its preferred leader) is broker
    (p + start_index) mod n of the broker list, so leaders are spread evenly; the
    other replicas follow at a distance that shifts every n partitions, so that
    followers of one broker's leaderships are spread too. Partitions are numbered
    from first_partition (a topic that grows continues its round robin).

    When every broker has a rack, the broker list alternates racks and each
    partition takes replicas from racks holding the fewest of its replicas first,
    so a rack's loss takes at most ceil(RF / racks) replicas of any partition.
    """
    require(0 < replication_factor <= len(brokers), "replication factor %d with %d brokers",
            replication_factor, len(brokers))
    racks = {b: r for b, r in brokers.items() if r}
    rack_aware = len(racks) == len(brokers)
    ordered = broker_order(brokers)
    count = len(ordered)
    placement: dict[int, tuple[int, ...]] = {}
    shift = replica_shift
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        others = [ordered[(first + 1 + (shift + k) % (count - 1)) % count] for k in range(count - 1)]
        if rack_aware:
            replicas = _spread_over_racks(ordered[first], others, racks, replication_factor)
        else:
            replicas = [ordered[first], *others[: replication_factor - 1]]
        placement[partition] = tuple(replicas)
    return placement


def broker_order(brokers: Mapping[int, str | None]) -> list[int]:
    """The broker list placement walks: rack-alternated when every broker has a rack, else sorted."""
    racks = {b: r for b, r in brokers.items() if r}
    return _rack_alternated(racks) if len(racks) == len(brokers) else sorted(brokers)


def _rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered so that consecutive ones are on different racks: a1, b1, c1, a2, ..."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    return [column[i] for i in range(max(map(len, columns))) for column in columns if i < len(column)]


def _spread_over_racks(first: int, others: Sequence[int], racks: Mapping[int, str], factor: int) -> list[int]:
    chosen = [first]
    remaining = list(others)
    while len(chosen) < factor:
        per_rack = Counter(racks[b] for b in chosen)
        fewest = min(per_rack[racks[b]] for b in remaining)
        pick = next(b for b in remaining if per_rack[racks[b]] == fewest)
        chosen.append(pick)
        remaining.remove(pick)
    return chosen


def new_partition_state(replicas: Sequence[int], controller_epoch: int) -> LeaderAndIsr:
    """A new partition (every replica live, as placement ensures): core's initial state."""
    return _stored(election.initial_state(tuple(replicas)), controller_epoch)


def plan_new_partitions(
    topic: str,
    assignment: TopicAssignment,
    count: int,
    requested: Sequence[tuple[int, tuple[int, ...]]],
    *,
    brokers: Mapping[int, str | None],
    replica_shift: int,
) -> dict[int, tuple[int, ...]] | Rejection:
    """The replicas of the partitions that grow a topic to `count` (CreatePartitions).

    Requested assignments (partition, replicas) must name the new partitions in
    order; without them the new partitions are placed as creation places them,
    continuing the round robin from the broker that leads partition 0.
    """
    current = len(assignment.partitions)
    if count <= current:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"topic {topic!r} has {current} partitions; the new count must be larger, not {count} "
                         "(partitions are never removed)")
    if count - current > PARTITIONS_PER_TOPIC_MAX:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"at most {PARTITIONS_PER_TOPIC_MAX} partitions are added at once, not {count - current}")
    if assignment.adding_replicas or assignment.removing_replicas:
        return Rejection(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                         f"topic {topic!r} has a reassignment in progress; add partitions once it is done")
    factor = len(assignment.replicas(0))
    if not requested:
        if factor > len(brokers):
            return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"topic {topic!r} has replication factor {factor}, more than the {len(brokers)} "
                             "live brokers")
        ordered = broker_order(brokers)
        first = assignment.replicas(0)[0]
        start_index = ordered.index(first) if first in ordered else 0
        return assign_replicas(brokers, count - current, factor, start_index=start_index,
                               replica_shift=replica_shift, first_partition=current)
    expected = list(range(current, count))
    if [p for p, _ in requested] != expected:
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"give the replicas of partitions {expected[0]} to {expected[-1]}, in order")
    for partition, replicas in requested:
        if len(replicas) != factor or len(set(replicas)) != len(replicas):
            return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {partition} needs {factor} distinct replicas, not {list(replicas)}")
        unknown = sorted(set(replicas) - set(brokers))
        if unknown:
            return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"partition {partition} names brokers that are not alive: {unknown}")
    return dict(requested)


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


@dataclasses.dataclass(frozen=True)
class IsrProposal:
    broker_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


def judge_isr_proposal(
    proposal: IsrProposal,
    state: LeaderAndIsr,
    replicas: Sequence[int],
    live_broker_epochs: Mapping[int, int],
    controller_epoch: int,
) -> tuple[Rejection | None, LeaderAndIsr]:
    """Core's AlterPartition rules: (None, the state to write, or `state` itself when nothing
    changes) or (why not, `state`). A new ISR member must be a live broker; the wire carries
    no broker epochs per member, so its live registration's epoch stands for it."""
    request = AlterPartitionRequest(
        proposal.broker_id, proposal.leader_epoch, proposal.partition_epoch,
        tuple(IsrMember(b, live_broker_epochs.get(b, -1)) for b in proposal.new_isr),
    )
    error, decided = election.alter_partition(_core(state, replicas), request, live_broker_epochs)
    if error != ErrorCode.NONE:
        return Rejection(error, _why_not(error, proposal, state, replicas, live_broker_epochs)), state
    if (decided.isr, decided.partition_epoch) == (state.isr, state.partition_epoch):
        return None, state
    return None, _stored(decided, controller_epoch)


def _why_not(
    error: ErrorCode, proposal: IsrProposal, state: LeaderAndIsr, replicas: Sequence[int],
    live_broker_epochs: Mapping[int, int],
) -> str:
    if error == ErrorCode.FENCED_LEADER_EPOCH:
        return f"leader epoch {proposal.leader_epoch} is older than the current {state.leader_epoch}"
    if error == ErrorCode.UNKNOWN_LEADER_EPOCH:
        return (f"leader epoch {proposal.leader_epoch} is newer than this controller's {state.leader_epoch}; "
                "it may no longer be the active controller")
    if error == ErrorCode.INVALID_UPDATE_VERSION:
        return f"partition epoch {proposal.partition_epoch} is not the current {state.partition_epoch}"
    if error == ErrorCode.INELIGIBLE_REPLICA:
        gone = [b for b in proposal.new_isr if b not in live_broker_epochs]
        return f"brokers {gone} are not alive and cannot join the ISR"
    if proposal.broker_id != state.leader:
        return f"broker {proposal.broker_id} is not the leader (the leader is {state.leader})"
    return (f"the ISR {list(proposal.new_isr)} must be distinct replicas of {list(replicas)} "
            f"including the leader {state.leader}")


def _core(state: LeaderAndIsr, replicas: Sequence[int]) -> core.PartitionState:
    return core.PartitionState(leader=state.leader, leader_epoch=state.leader_epoch, isr=tuple(state.isr),
                               partition_epoch=state.partition_epoch, replicas=tuple(replicas))


def _stored(state: core.PartitionState, controller_epoch: int) -> LeaderAndIsr:
    return LeaderAndIsr(leader=state.leader, leader_epoch=state.leader_epoch, isr=state.isr,
                          controller_epoch=controller_epoch, partition_epoch=state.partition_epoch)
