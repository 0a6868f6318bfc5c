"""The simulator's consumer groups: the production group coordinator (replog.core.group) and
consumers that follow KIP-848's client rules, in logical time.

A `Consumer` owns what its last answer assigned it, minus what it has given
up: when an answer leaves out partitions it owns, it gives them up at once
(a real consumer first finishes and commits them) and says so in its next
heartbeat. `owners()` is the consumers' own view: which consumer holds each
partition, the view the "never two owners" property is about.
"""

from dataclasses import dataclass, field

from replog.core.errors import ErrorCode
from replog.core.group.coordinator import GroupCoordinatorShard
from replog.core.group.member import JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH
from replog.core.group.requests import GroupConfig, HeartbeatRequest, HeartbeatResponse
from replog.core.topic_partition import TopicPartition

GROUP = "g"
CONFIG = GroupConfig(session_timeout_ms=3_000, heartbeat_interval_ms=500)


@dataclass
class Cluster:
    topics: dict[str, int] = field(default_factory=lambda: {"t": 6})
    shard: GroupCoordinatorShard = field(default_factory=lambda: GroupCoordinatorShard(CONFIG))
    now_ms: int = 0
    log: list = field(default_factory=list)  # every record written, in order

    def write(self, result):
        self.log.extend(result.records)
        return result

    def tick(self, ms: int = 0) -> None:
        self.now_ms += ms
        self.write(self.shard.tick(self.now_ms, self.now_ms))

    def replayed(self) -> GroupCoordinatorShard:
        """A new coordinator that read the whole log, as after a failover."""
        shard = GroupCoordinatorShard(self.shard.config)
        for record in self.log:
            shard.replay(record)
        shard.loaded(self.now_ms, self.now_ms)
        return shard


@dataclass
class Consumer:
    cluster: Cluster
    member_id: str
    topics: tuple[str, ...] = ("t",)
    regex: str | None = None
    instance_id: str | None = None
    epoch: int = JOIN_EPOCH
    owned: set[TopicPartition] = field(default_factory=set)
    last: HeartbeatResponse | None = None

    def heartbeat(self, epoch: int | None = None, **overrides) -> HeartbeatResponse:
        joining = self.epoch == JOIN_EPOCH
        request = HeartbeatRequest(
            GROUP, self.member_id, self.epoch if epoch is None else epoch, instance_id=self.instance_id,
            rebalance_timeout_ms=10_000 if joining else 0,
            subscribed_topic_names=self.topics if joining else None,
            subscribed_topic_regex=self.regex if joining else None,
            owned=as_mapping(self.owned), client_id=f"client-{self.member_id}",
        )
        for name, value in overrides.items():
            request = _replace(request, name, value)
        response = self.cluster.write(self.cluster.shard.heartbeat(request, self.cluster.topics, self.cluster.now_ms,
                                                                   self.cluster.now_ms)).response
        self.last = response
        if response.error == ErrorCode.NONE and request.member_epoch >= 0:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                # Give up what is no longer assigned; take the new partitions.
                self.owned = {TopicPartition(t, p) for t, ps in response.assignment.items() for p in ps}
        elif response.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.epoch, self.owned = JOIN_EPOCH, set()
        return response

    def leave(self, static: bool = False) -> HeartbeatResponse:
        response = self.heartbeat(epoch=LEAVE_STATIC_EPOCH if static else LEAVE_EPOCH)
        self.epoch, self.owned = JOIN_EPOCH, set()
        return response


def _replace(request: HeartbeatRequest, name: str, value) -> HeartbeatRequest:
    from dataclasses import replace
    return replace(request, **{name: value})


def as_mapping(owned: set[TopicPartition]) -> dict[str, frozenset[int]]:
    result: dict[str, set[int]] = {}
    for tp in owned:
        result.setdefault(tp.topic, set()).add(tp.partition)
    return {topic: frozenset(ps) for topic, ps in result.items()}


def owners(consumers) -> dict[TopicPartition, list[str]]:
    """Which consumers hold each partition, by their own account."""
    held: dict[TopicPartition, list[str]] = {}
    for consumer in consumers:
        for tp in consumer.owned:
            held.setdefault(tp, []).append(consumer.member_id)
    return held


def assert_one_owner_each(consumers) -> None:
    doubles = {tp: ids for tp, ids in owners(consumers).items() if len(ids) > 1}
    assert not doubles, f"partitions with two owners: {doubles}"


def settle(cluster: Cluster, consumers, rounds: int = 20) -> None:
    """Heartbeat every consumer, round after round, 500 ms apart, checking the one-owner rule each time."""
    for _ in range(rounds):
        cluster.now_ms += 500
        for consumer in consumers:
            consumer.heartbeat()
            assert_one_owner_each(consumers)
