"""Rolling restarts: which member to restart next, and whether it may stop now, as pure functions.

One rule serves every platform (`replog k8s roll`, `replog dev roll`); the front ends only
observe the cluster into a `ClusterView` and carry out the decisions:

1. Controllers go first, the active one last: each standby restart costs nothing, and the active
   controller moves only once, to a controller that already runs the new version. Then brokers.
2. Brokers one at a time, those that host no under-replicated partition first (a restart that
   finds the cluster already short of replicas is the one most likely to hold up).
3. A broker may stop only if no partition it is in the ISR of would fall below its
   `min.insync.replicas` without it, and no partition it hosts is below that minimum already
   (Strimzi's KafkaRoller rule): acks=all producers never see NOT_ENOUGH_REPLICAS because of a
   restart. A partition whose replicas are no more than its minimum can never keep that minimum
   through any restart; it is reported, and does not hold the roll (it would hold it for ever).
4. After a restart the roll goes on once the restarted broker is registered again and every ISR
   is full again: each partition's ISR holds every replica whose broker is registered. (A broker
   that is gone for good does not stall the roll; rule 3 still guards its partitions.)
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from .invariant import require


class MemberKind(str, Enum):
    CONTROLLER = "controller"
    BROKER = "broker"


@dataclass(frozen=True, slots=True)
class Member:
    kind: MemberKind
    id: int

    def __str__(self) -> str:
        return f"{self.kind.value} {self.id}"


@dataclass(frozen=True, slots=True)
class PartitionView:
    """One partition as the metadata service shows it, with its topic's effective minimum ISR."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_insync_replicas: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def can_stay_writable(self) -> bool:
        """False when the replicas alone are no more than the minimum: any restart takes it below."""
        return len(self.replicas) > self.min_insync_replicas


@dataclass(frozen=True, slots=True)
class ClusterView:
    controllers: tuple[int, ...]  # the controllers to restart (running or not)
    active_controller: int | None
    brokers: tuple[int, ...]  # the brokers to restart
    registered_brokers: frozenset[int]  # brokers registered in ZooKeeper now
    partitions: tuple[PartitionView, ...]


@dataclass(frozen=True, slots=True)
class Hold:
    """Why a member may not be restarted (or the roll may not go on) yet."""

    member: Member
    reason: str
    partitions: tuple[PartitionView, ...] = ()

    def __str__(self) -> str:
        if not self.partitions:
            return f"{self.member}: {self.reason}"
        named = ", ".join(f"{p} (ISR {_ids(p.isr)}, min.insync.replicas={p.min_insync_replicas})"
                          for p in self.partitions[:PARTITIONS_NAMED_MAX])
        more = len(self.partitions) - PARTITIONS_NAMED_MAX
        return f"{self.member}: {self.reason}: {named}" + (f" and {more} more" if more > 0 else "")


PARTITIONS_NAMED_MAX = 5


def roll_order(view: ClusterView) -> tuple[Member, ...]:
    """Every member to restart, in order: standby controllers, the active one, then the brokers."""
    standby = sorted(c for c in view.controllers if c != view.active_controller)
    active = [view.active_controller] if view.active_controller in view.controllers else []
    brokers = sorted(view.brokers, key=lambda b: (_under_replicated_hosted(view, b), b))
    order = tuple(Member(MemberKind.CONTROLLER, c) for c in standby + active)
    order += tuple(Member(MemberKind.BROKER, b) for b in brokers)
    require(len(set(order)) == len(order), "a member appears twice in the roll order %s", order)
    return order


def _under_replicated_hosted(view: ClusterView, broker_id: int) -> int:
    return sum(1 for p in view.partitions if broker_id in p.replicas and p.under_replicated)


def hold_before_stop(view: ClusterView, member: Member) -> Hold | None:
    """None when `member` may be stopped now; otherwise what holds it."""
    if member.kind is MemberKind.CONTROLLER:
        return None
    blocking = tuple(p for p in view.partitions if _would_fall_below_minimum(p, member.id))
    if blocking:
        return Hold(member, "stopping it would leave partitions below min.insync.replicas", blocking)
    return None


def _would_fall_below_minimum(partition: PartitionView, broker_id: int) -> bool:
    if broker_id not in partition.replicas or not partition.can_stay_writable:
        return False
    if len(partition.isr) < partition.min_insync_replicas:
        return True  # already below: this broker's replica may be the one that brings it back
    return broker_id in partition.isr and len(partition.isr) - 1 < partition.min_insync_replicas


def never_writable_through_a_restart(view: ClusterView) -> tuple[PartitionView, ...]:
    """Partitions any broker restart takes below their minimum (replicas <= min.insync.replicas)."""
    return tuple(p for p in view.partitions if not p.can_stay_writable)


def hold_after_restart(view: ClusterView, member: Member) -> Hold | None:
    """None once a restarted member has rejoined: a broker registered, and every ISR full again."""
    if member.kind is MemberKind.CONTROLLER:
        if view.active_controller is None:
            return Hold(member, "no controller is active yet")
        return None
    if member.id not in view.registered_brokers:
        return Hold(member, "not registered yet")
    behind = tuple(p for p in view.partitions
                   if any(r in view.registered_brokers and r not in p.isr for r in p.replicas))
    if behind:
        return Hold(member, "waiting for every ISR to be full again", behind)
    return None


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids) or "empty"
