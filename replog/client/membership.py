"""A consumer's side of its group (KIP-848), without I/O: what to heartbeat, and what the answers mean.

The coordinator computes every assignment; a member only heartbeats and follows
its answers. `Membership` says when the next heartbeat is due and what it
carries (`next_heartbeat`), and turns each answer (`on_answer`, `on_failure`)
into changes of the member's partitions, which the consumer carries out:

    Revoke(ps)  the coordinator takes ps away. Stop fetching them at once; in poll(),
                commit their positions (auto-commit), call on_partitions_revoked, then
                `revoked(ps)`: the next heartbeat, sent at once, leaves them out, and only
                then may the coordinator hand them to another member.
    Assign(ps)  new partitions: find their positions (the committed offset, else
                auto.offset.reset); in poll(), call on_partitions_assigned.
    Lose(ps)    the member was fenced: ps may be someone else's already, so they are dropped
                at once, without a commit; in poll(), call on_partitions_lost.

Revocation comes first (as Kafka's consumer does it): while partitions are
being given up, new ones wait. The member's states:

    UNSUBSCRIBED  not in the group: nothing to send
    JOINING       the next heartbeat joins: epoch 0, the whole subscription, what it owns
    MEMBER        in the group at `member_epoch`; heartbeats every interval, at once after
                  giving partitions up
    LEAVING       the next heartbeat leaves: epoch -1, or -2 for a static member
    FAILED        refused for good (`error`): an invalid group id or regex, an unknown
                  assignor, an instance id another process holds, a full group

The member id is made once (KIP-1082) and kept when the member is fenced
(FENCED_MEMBER_EPOCH: rejoin with epoch 0); the coordinator forgot a member
that gets UNKNOWN_MEMBER_ID, so it rejoins under a new id.
"""

from __future__ import annotations

import enum
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from replog.client.errors import ClientError
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2

Partitions = frozenset[TopicPartition]
NONE: Partitions = frozenset()

# Answers after which the same heartbeat is tried again (the coordinator moved, is loading, or
# did not answer); every other error but the two fencing ones ends the membership.
RETRIABLE = frozenset({
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION,
})


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    MEMBER = "member"
    LEAVING = "leaving"
    FAILED = "failed"


@dataclass(frozen=True)
class Subscription:
    """Topic names, or a regex the coordinator matches against whole topic names."""

    topics: tuple[str, ...] = ()
    regex: str | None = None


def subscription_of(topics: Iterable[str] | str | re.Pattern) -> Subscription:
    """A subscription from subscribe()'s argument: topic names, or a regex (a str or a re.Pattern).

    The regex is matched by the coordinator against whole topic names, so it
    must compile, and flags cannot travel with it (write them inline: "(?i)...").
    """
    if isinstance(topics, re.Pattern):
        if topics.flags != re.compile(topics.pattern).flags:
            raise ClientError(f"the subscription pattern {topics.pattern!r} has flags that cannot be sent to the "
                              "coordinator; write them inline, e.g. (?i)", ErrorCode.INVALID_SUBSCRIPTION_REGEX)
        topics = topics.pattern
    if isinstance(topics, str):
        if not topics:
            raise ClientError("the subscription regex is empty", ErrorCode.INVALID_SUBSCRIPTION_REGEX)
        try:
            re.compile(topics)
        except re.error as error:
            raise ClientError(f"the subscription regex {topics!r} does not compile: {error}",
                              ErrorCode.INVALID_SUBSCRIPTION_REGEX) from None
        return Subscription(regex=topics)
    names = list(topics)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ClientError(f"subscribe() takes topic names (or one regex), not {name!r}",
                              ErrorCode.INVALID_TOPIC_EXCEPTION)
    return Subscription(topics=tuple(sorted(set(names))))


@dataclass(frozen=True)
class HeartbeatParams:
    """One ConsumerGroupHeartbeat; None in a field means "unchanged" (left out)."""

    member_id: str
    member_epoch: int
    instance_id: str | None
    owned: Partitions
    rebalance_timeout_ms: int = 0  # 0: unchanged
    subscription: Subscription | None = None
    server_assignor: str | None = None


@dataclass(frozen=True)
class HeartbeatAnswer:
    error: ErrorCode
    message: str = ""
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None  # None: unchanged


@dataclass(frozen=True)
class Revoke:
    partitions: Partitions


@dataclass(frozen=True)
class Assign:
    partitions: Partitions


@dataclass(frozen=True)
class Lose:
    partitions: Partitions


Change = Revoke | Assign | Lose


class Membership:
    def __init__(self, *, instance_id: str | None, rebalance_timeout_ms: int, server_assignor: str | None,
                 new_member_id: Callable[[], str]) -> None:
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self._new_member_id = new_member_id
        self.member_id = new_member_id()
        self.member_epoch = JOIN_EPOCH
        self.state = MemberState.UNSUBSCRIBED
        self.subscription: Subscription | None = None
        self.owned: Partitions = NONE  # every partition the member holds, those being revoked included
        self.revoking: Partitions = NONE  # handed to poll() to give up, not given up yet
        self.target: Partitions = NONE  # the coordinator's last word
        self.heartbeat_interval_ms = 0
        self.error: tuple[ErrorCode, str] | None = None
        self._next_heartbeat_ms = 0.0
        self._asap = False  # a heartbeat was asked for while one was in flight: send the next at once
        self._in_flight: HeartbeatParams | None = None
        self._send_subscription = False
        self._rejoin_when_polled = False

    # -- the consumer's moves --------------------------------------------------------------------

    def subscribe(self, subscription: Subscription, now_ms: float) -> None:
        """Join with this subscription, or change it: the next heartbeat, at once, carries it."""
        self.subscription = subscription
        self._send_subscription = True
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.LEAVING, MemberState.FAILED):
            self.state, self.member_epoch, self.error = MemberState.JOINING, JOIN_EPOCH, None
        self.heartbeat_now(now_ms)

    def leave(self, now_ms: float) -> bool:
        """Leave the group with the next heartbeat, at once; False when there is nothing to leave."""
        self._rejoin_when_polled = False
        if self.state not in (MemberState.JOINING, MemberState.MEMBER):
            self._forget_partitions()
            self.state = MemberState.UNSUBSCRIBED
            return False
        self.state = MemberState.LEAVING
        self.heartbeat_now(now_ms)
        return True

    def poll_timer_expired(self, now_ms: float) -> list[Change]:
        """poll() was not called within max.poll.interval.ms: the application is stuck, so the member
        leaves and its partitions go to the others (Kafka's rule); the next poll() joins again."""
        if self.state is not MemberState.MEMBER:
            return []
        lost = self._forget_partitions()
        self.state = MemberState.LEAVING
        self._rejoin_when_polled = True
        self.heartbeat_now(now_ms)
        return [Lose(lost)] if lost else []

    def polled(self, now_ms: float) -> bool:
        """poll() was called: a member that left because it was not, joins again (True)."""
        if not self._rejoin_when_polled or self.subscription is None:
            return False
        self._rejoin_when_polled = False
        self.subscribe(self.subscription, now_ms)
        return True

    def revoked(self, partitions: Partitions, now_ms: float) -> list[Change]:
        """poll() gave these partitions up: heartbeat without them at once; then new ones may come."""
        done = partitions & self.revoking
        if not done:
            return []
        self.revoking -= done
        self.owned -= done
        self.heartbeat_now(now_ms)
        return self._reconcile()

    # -- heartbeats ------------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        return self.state in (MemberState.JOINING, MemberState.MEMBER, MemberState.LEAVING)

    def heartbeat_due_ms(self) -> float | None:
        """When the next heartbeat should leave; None while one is in flight or none is needed."""
        if self._in_flight is not None or not self.in_group:
            return None
        return self._next_heartbeat_ms

    def next_heartbeat(self) -> HeartbeatParams:
        if self.state is MemberState.LEAVING:
            epoch = LEAVE_STATIC_EPOCH if self.instance_id is not None else LEAVE_EPOCH
            params = HeartbeatParams(self.member_id, epoch, self.instance_id, self.owned)
        elif self.state is MemberState.JOINING:
            params = HeartbeatParams(self.member_id, JOIN_EPOCH, self.instance_id, self.owned,
                                     self.rebalance_timeout_ms, self.subscription, self.server_assignor)
        else:
            params = HeartbeatParams(self.member_id, self.member_epoch, self.instance_id, self.owned,
                                     subscription=self.subscription if self._send_subscription else None)
        self._in_flight = params
        self._asap = False
        return params

    def on_answer(self, answer: HeartbeatAnswer, now_ms: float, retry_backoff_ms: float) -> list[Change]:
        sent, self._in_flight = self._in_flight, None
        if sent is None or sent.member_id != self.member_id:
            return []  # an answer for a member id given up meanwhile
        if sent.member_epoch < 0:
            if self.state is MemberState.LEAVING:  # not joining again already
                self._forget_partitions()
                self.state = MemberState.UNSUBSCRIBED
            return []
        if self.state is MemberState.LEAVING:
            return []
        if answer.error is ErrorCode.NONE:
            return self._accepted(sent, answer, now_ms)
        if answer.error in RETRIABLE:
            self.on_failure(now_ms, retry_backoff_ms)
            return []
        if answer.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            if answer.error is ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = self._new_member_id()
            return self._rejoin(now_ms)
        lost = self._forget_partitions()
        self.state, self.error = MemberState.FAILED, (answer.error, answer.message)
        return [Lose(lost)] if lost else []

    def on_failure(self, now_ms: float, retry_backoff_ms: float) -> None:
        """No answer (or a coordinator that moved or is loading): send the same again after a backoff,
        with the whole subscription in case the coordinator that answers next never saw it."""
        self._in_flight = None
        if self.state is MemberState.MEMBER:
            self._send_subscription = True
        self._next_heartbeat_ms = now_ms + retry_backoff_ms

    def heartbeat_now(self, now_ms: float) -> None:
        self._next_heartbeat_ms = min(self._next_heartbeat_ms, now_ms)
        self._asap = True

    # -- the answers' consequences -----------------------------------------------------------------

    def _accepted(self, sent: HeartbeatParams, answer: HeartbeatAnswer, now_ms: float) -> list[Change]:
        if sent.subscription is not None and sent.subscription == self.subscription:
            self._send_subscription = False
        self.state = MemberState.MEMBER
        self.member_epoch = answer.member_epoch
        self.heartbeat_interval_ms = answer.heartbeat_interval_ms
        self._next_heartbeat_ms = now_ms if self._asap else now_ms + answer.heartbeat_interval_ms
        if answer.assignment is not None:
            self.target = answer.assignment
        return self._reconcile()

    def _reconcile(self) -> list[Change]:
        """Revoke what the target left out; once nothing is being revoked, take what it added."""
        revoke = self.owned - self.target - self.revoking
        if revoke:
            self.revoking |= revoke
            return [Revoke(revoke)]
        if self.revoking:
            return []
        add = self.target - self.owned
        if not add:
            return []
        self.owned |= add
        return [Assign(add)]

    def _rejoin(self, now_ms: float) -> list[Change]:
        lost = self._forget_partitions()
        self.state, self.member_epoch = MemberState.JOINING, JOIN_EPOCH
        self._send_subscription = True
        self.heartbeat_now(now_ms)
        return [Lose(lost)] if lost else []

    def _forget_partitions(self) -> Partitions:
        lost = self.owned
        self.owned = self.revoking = self.target = NONE
        return lost


class PendingCallbacks:
    """The changes poll() still has to tell the application about, in order.

    A loss overrides what is pending for its partitions: a revocation not
    carried out yet becomes part of the loss (nothing is committed for a
    partition that may be someone else's), and partitions whose assignment
    the application never heard of are dropped from both.
    """

    def __init__(self) -> None:
        self._changes: deque[Change | object] = deque()

    def __bool__(self) -> bool:
        return bool(self._changes)

    def push(self, change: Change | object) -> None:
        if isinstance(change, Lose):
            unheard = frozenset().union(*(c.partitions for c in self._changes if isinstance(c, Assign)))
            kept: deque[Change | object] = deque()
            for pending in self._changes:
                if isinstance(pending, (Assign, Revoke)):
                    pending = replace(pending, partitions=pending.partitions - change.partitions)
                    if not pending.partitions:
                        continue
                kept.append(pending)
            self._changes = kept
            change = Lose(change.partitions - unheard)
            if not change.partitions:
                return
        self._changes.append(change)

    def drop_changes(self) -> None:
        """Forget the pending changes of partitions (the consumer leaves: it gives up all at once)."""
        self._changes = deque(c for c in self._changes if not isinstance(c, (Assign, Revoke, Lose)))

    def pop(self) -> Change | object | None:
        return self._changes.popleft() if self._changes else None
