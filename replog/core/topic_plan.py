"""New topics and new partitions: the checks a CreateTopics or CreatePartitions entry must pass, and placement.

Each refusal is Kafka's error code with one sentence. A topic that passes comes
back as a `TopicPlan` (the replicas of every partition and the configs to
store); its partitions start as `election.initial_state` has them.
"""

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from .errors import ErrorCode
from .outcome import Rejection
from .placement import assign_replicas, broker_order
from .topic_configs import InvalidConfig, validate_topic_configs

TOPIC_NAME_LENGTH_MAX = 249
# One topic is created in one ZooKeeper multi, which must stay under ZooKeeper's
# request size limit (jute.maxbuffer, 1 MiB): about 350 bytes per partition.
PARTITIONS_PER_TOPIC_MAX = 2000
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")

Assignments = tuple[tuple[int, tuple[int, ...]], ...]  # (partition, replicas) as requested


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A CreateTopics entry. -1 asks for the default; assignments replace placement."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Assignments = ()
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """A CreatePartitions entry: the topic's new total count, and optionally the new partitions' replicas."""

    name: str
    count: int
    assignments: Assignments = ()


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    num_partitions: int  # num.partitions
    replication_factor: int  # default.replication.factor


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """A validated topic: replicas of every partition and the configs to store."""

    name: str
    replicas: Mapping[int, tuple[int, ...]]
    configs: Mapping[str, str]

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0])


@dataclass(frozen=True, slots=True)
class TopicOutcome:
    """CreateTopics' answer for one topic."""

    name: str
    error: ErrorCode
    message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1


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
    caller draws them at random so that topics do not all lead on one broker.
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
        problem = _replicas_problem(partition, replicas, brokers)
        if problem is not None:
            return problem
    if len(sizes) > 1:
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "every partition must have the same number of replicas")
    return assignments


def plan_new_partitions(
    request: NewPartitions,
    current: Mapping[int, tuple[int, ...]],
    *,
    reassigning: bool,
    brokers: Mapping[int, str | None],
    replica_shift: int,
) -> dict[int, tuple[int, ...]] | Rejection:
    """The replicas of the partitions that grow a topic from its `current` replicas to
    `request.count` partitions (CreatePartitions).

    Requested assignments (partition, replicas) must name the new partitions in
    order; without them the new partitions are placed as creation places them,
    continuing the round robin from the broker that leads partition 0.
    """
    topic, count, requested = request.name, request.count, request.assignments
    size = len(current)
    if count <= size:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"topic {topic!r} has {size} partitions; the new count must be larger, not {count} "
                         "(partitions are never removed)")
    if count - size > PARTITIONS_PER_TOPIC_MAX:
        return Rejection(ErrorCode.INVALID_PARTITIONS,
                         f"at most {PARTITIONS_PER_TOPIC_MAX} partitions are added at once, not {count - size}")
    if reassigning:
        return Rejection(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                         f"topic {topic!r} has a reassignment in progress; add partitions once it is done")
    factor = len(current[0])
    if not requested:
        if factor > len(brokers):
            return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"topic {topic!r} has replication factor {factor}, more than the {len(brokers)} "
                             "live brokers")
        ordered = broker_order(brokers)
        first = current[0][0]
        start_index = ordered.index(first) if first in ordered else 0
        return assign_replicas(brokers, count - size, factor, start_index=start_index,
                               replica_shift=replica_shift, first_partition=size)
    expected = list(range(size, count))
    if [p for p, _ in requested] != expected:
        return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"give the replicas of partitions {expected[0]} to {expected[-1]}, in order")
    for partition, replicas in requested:
        problem = _replicas_problem(partition, replicas, brokers, factor)
        if problem is not None:
            return problem
    return dict(requested)


def _replicas_problem(
    partition: int, replicas: Sequence[int], brokers: Mapping[int, str | None], factor: int | None = None
) -> Rejection | None:
    """Why requested replicas cannot be: none, a broker twice, not `factor` of them, or a broker not live."""
    unknown = sorted(set(replicas) - set(brokers))
    if not replicas:
        why = f"partition {partition} has no replicas"
    elif len(set(replicas)) != len(replicas):
        why = f"partition {partition} names a broker twice: {list(replicas)}"
    elif factor is not None and len(replicas) != factor:
        why = f"partition {partition} needs {factor} replicas, not {list(replicas)}"
    elif unknown:
        why = f"partition {partition} names brokers that are not alive: {unknown}"
    else:
        return None
    return Rejection(ErrorCode.INVALID_REPLICA_ASSIGNMENT, why)
