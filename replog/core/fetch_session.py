"""Fetch sessions (KIP-227), both halves: a follower names only what changed, and is answered only what changed.

A follower fetches the same partitions from its leader many times a second.
In a session the leader keeps those partitions and their fetch positions, so
a request names only partitions that are new or whose position moved, and an
answer lists only partitions with records, an error, a diverging epoch, or a
high watermark or log start offset the follower has not been told.

The leader still plans every partition of a session on every fetch: that is
how it hears each follower's position, which keeps the follower's lag clock
(replica.lag.time.max.ms) running for partitions that are idle.

Only followers get sessions, one per follower broker: a follower that starts
over (a new stream, a restart) replaces its own session instead of filling the
cache. A consumer's fetch is answered as a full fetch with session id 0, which
KIP-227 lets a leader do for any request.

The leader's half classifies each request by its session id and epoch, and a
table says what follows:

    request                                  action
    ---------------------------------------  ------------------------------------
    id 0, epoch 0, from a follower           open a session; answer in full
    id 0, any other epoch, or a consumer     no session; answer in full
    id known, epoch -1                       close it; answer in full, sessionless
    id unknown (or another follower's)       refuse: FETCH_SESSION_ID_NOT_FOUND
    id known, epoch not the next one         refuse: INVALID_FETCH_SESSION_EPOCH
    id known, the next epoch                 update it; answer incrementally

The follower's half is a state machine:

    state     event                   next state
    --------  ----------------------  ----------
    none      send (a full fetch)     opening
    opening   answered with an id     active
    opening   answered with id 0      none
    active    send (incremental)      active
    active    answered                active
    any       refused, or broken      none

Time is an argument (logical time): sessions are evicted least recently used
first when the cache is full, as the caller's clock orders them.
"""

import enum
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .errors import ErrorCode
from .invariant import require
from .messages import FetchPlan, FetchRequest
from .topic_partition import TopicPartition

SESSION_NONE = 0  # session id: no session
EPOCH_OPEN = 0  # session epoch with session id 0: a full fetch that opens a session
EPOCH_FINAL = -1  # session epoch: no session (with id 0), or close the named one
EPOCH_MAX = 2**31 - 1
# Sessions kept at once; one per follower broker is what a cluster needs
# (Kafka's max.incremental.fetch.session.cache.slots is 1,000).
FETCH_SESSIONS_MAX = 1_000
# Tries at drawing a session id not in use before the cache gives up (a bug).
SESSION_ID_DRAWS_MAX = 100


def next_epoch(epoch: int) -> int:
    """The session epoch after `epoch`: counting up from 1, wrapping from 2^31-1 back to 1."""
    return 1 if epoch == EPOCH_MAX else epoch + 1


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """Where a fetcher reads one partition, as a fetch request names it."""

    fetch_offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    max_bytes: int = 0

    def request(self, replica_id: int, replica_epoch: int, max_wait_ms: int) -> FetchRequest:
        """The core's fetch of this partition by the given fetcher."""
        return FetchRequest(
            replica_id=replica_id,
            fetch_offset=self.fetch_offset,
            max_bytes=self.max_bytes,
            last_fetched_epoch=self.last_fetched_epoch,
            current_leader_epoch=self.current_leader_epoch,
            replica_epoch=replica_epoch,
            max_wait_ms=max_wait_ms,
            log_start_offset=self.log_start_offset,
        )


# -- the leader's half -----------------------------------------------------------------------


class RequestKind(enum.Enum):
    OPEN = "open"
    SESSIONLESS = "sessionless"
    CLOSE = "close"
    UNKNOWN_SESSION = "unknown session"
    WRONG_EPOCH = "wrong epoch"
    INCREMENTAL = "incremental"


class Action(enum.Enum):
    OPEN_AND_ANSWER_IN_FULL = "open a session, answer in full"
    ANSWER_IN_FULL = "answer in full, no session"
    CLOSE_AND_ANSWER_IN_FULL = "close the session, answer in full"
    REFUSE = "refuse"
    ANSWER_INCREMENTALLY = "update the session, answer incrementally"


ACTIONS: Mapping[RequestKind, tuple[Action, ErrorCode]] = {
    RequestKind.OPEN: (Action.OPEN_AND_ANSWER_IN_FULL, ErrorCode.NONE),
    RequestKind.SESSIONLESS: (Action.ANSWER_IN_FULL, ErrorCode.NONE),
    RequestKind.CLOSE: (Action.CLOSE_AND_ANSWER_IN_FULL, ErrorCode.NONE),
    RequestKind.UNKNOWN_SESSION: (Action.REFUSE, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
    RequestKind.WRONG_EPOCH: (Action.REFUSE, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
    RequestKind.INCREMENTAL: (Action.ANSWER_INCREMENTALLY, ErrorCode.NONE),
}


@dataclass(slots=True)
class SessionPartition:
    """One partition of a session: where the follower reads, and what it was last told."""

    position: PartitionFetch
    told_high_watermark: int = -1
    told_log_start_offset: int = -1
    # The core's fetch at `position`, kept while the position and the fetcher's epoch stay: a
    # follower fetches many times a second, mostly from where it fetched before.
    _request: FetchRequest | None = None

    def move(self, position: PartitionFetch) -> None:
        self.position = position
        self._request = None

    def request(self, replica_id: int, replica_epoch: int, max_wait_ms: int) -> FetchRequest:
        request = self._request
        if request is None or request.replica_epoch != replica_epoch or request.max_wait_ms != max_wait_ms:
            request = self._request = self.position.request(replica_id, replica_epoch, max_wait_ms)
        return request

    def worth_answering(self, plan: FetchPlan, has_news: bool) -> bool:
        """In an incremental answer: news (records, an error reading them), an error, a divergence,
        or positions the follower was not told."""
        return (
            has_news
            or plan.error != ErrorCode.NONE
            or plan.diverging_epoch is not None
            or plan.high_watermark != self.told_high_watermark
            or plan.log_start_offset != self.told_log_start_offset
            or plan.start_moved  # told before, but the follower still starts earlier: tell it again
        )

    def told(self, plan: FetchPlan) -> None:
        self.told_high_watermark = plan.high_watermark
        self.told_log_start_offset = plan.log_start_offset


@dataclass(slots=True)
class FetchSession:
    session_id: int
    replica_id: int
    last_used_ms: int
    next_epoch: int = 1  # the session epoch the next request must carry
    partitions: dict[TopicPartition, SessionPartition] = field(default_factory=dict)

    def update(self, named: Mapping[TopicPartition, PartitionFetch], forgotten: Iterable[TopicPartition]) -> None:
        """Add or move the partitions a request names; drop the ones it forgets."""
        for key, position in named.items():
            known = self.partitions.get(key)
            if known is None:
                self.partitions[key] = SessionPartition(position)
            else:
                known.move(position)
        for key in forgotten:
            self.partitions.pop(key, None)


@dataclass(frozen=True, slots=True)
class SessionStart:
    """How a request stands towards the sessions: refused, sessionless, or in `session`."""

    error: ErrorCode = ErrorCode.NONE
    session: FetchSession | None = None
    full: bool = True  # answer every partition (a full fetch), not only those with something new

    @property
    def session_id(self) -> int:
        return self.session.session_id if self.session is not None else SESSION_NONE

    def requests(self, named: Mapping[TopicPartition, PartitionFetch], replica_id: int, replica_epoch: int,
                 max_wait_ms: int) -> dict[TopicPartition, FetchRequest]:
        """What the fetch reads: every partition of its session, at the position the session holds
        (so that the leader hears the follower's position in each, named or not), or, without a
        session, the partitions the request names."""
        if self.session is None:
            return {key: position.request(replica_id, replica_epoch, max_wait_ms) for key, position in named.items()}
        return {key: partition.request(replica_id, replica_epoch, max_wait_ms)
                for key, partition in self.session.partitions.items()}

    def include(self, key: TopicPartition, plan: FetchPlan, has_news: bool) -> bool:
        """Whether the answer lists this partition (`has_news`: records, or an error reading them);
        a session notes what its follower is told."""
        if self.session is None:
            return True
        partition = self.session.partitions[key]
        if not (self.full or partition.worth_answering(plan, has_news)):
            return False
        partition.told(plan)
        return True


SESSIONLESS = SessionStart()


class FetchSessionCache:
    """The leader's sessions, by id; at most one per follower broker and FETCH_SESSIONS_MAX in all.

    `new_session_id` draws a candidate id (the broker draws at random, so that a
    follower's stale id is unlikely to name another's session); the cache
    never uses an id twice at once.
    """

    def __init__(self, new_session_id: Callable[[], int], sessions_max: int = FETCH_SESSIONS_MAX) -> None:
        self._new_session_id = new_session_id
        self._sessions_max = sessions_max
        self._by_id: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self._by_replica: dict[int, int] = {}
        self.evicted: list[FetchSession] = []  # sessions closed to make room, for the caller to report

    def __len__(self) -> int:
        return len(self._by_id)

    def classify(self, replica_id: int, session_id: int, session_epoch: int) -> RequestKind:
        if session_id == SESSION_NONE:
            if session_epoch == EPOCH_OPEN and replica_id >= 0:
                return RequestKind.OPEN
            return RequestKind.SESSIONLESS
        session = self._by_id.get(session_id)
        if session is None or session.replica_id != replica_id:
            return RequestKind.UNKNOWN_SESSION
        if session_epoch == EPOCH_FINAL:
            return RequestKind.CLOSE
        if session_epoch != session.next_epoch:
            return RequestKind.WRONG_EPOCH
        return RequestKind.INCREMENTAL

    def start(
        self,
        replica_id: int,
        session_id: int,
        session_epoch: int,
        named: Mapping[TopicPartition, PartitionFetch],
        forgotten: Iterable[TopicPartition],
        now_ms: int,
    ) -> SessionStart:
        """Find, open or close the request's session, and apply its partition changes."""
        action, error = ACTIONS[self.classify(replica_id, session_id, session_epoch)]
        if action is Action.REFUSE:
            return SessionStart(error)
        if action is Action.ANSWER_IN_FULL:
            return SESSIONLESS
        if action is Action.CLOSE_AND_ANSWER_IN_FULL:
            self._close(self._by_id[session_id])
            return SESSIONLESS
        if action is Action.OPEN_AND_ANSWER_IN_FULL:
            session = self._open(replica_id, now_ms)
            session.update(named, ())
            return SessionStart(session=session, full=True)
        session = self._by_id[session_id]
        self._by_id.move_to_end(session_id)
        session.last_used_ms = now_ms
        session.update(named, forgotten)
        session.next_epoch = next_epoch(session.next_epoch)
        return SessionStart(session=session, full=False)

    def session_of(self, replica_id: int) -> FetchSession | None:
        session_id = self._by_replica.get(replica_id)
        return None if session_id is None else self._by_id[session_id]

    def _open(self, replica_id: int, now_ms: int) -> FetchSession:
        previous = self.session_of(replica_id)
        if previous is not None:
            self._close(previous)
        while len(self._by_id) >= self._sessions_max:
            evicted = next(iter(self._by_id.values()))
            self.evicted.append(evicted)
            self._close(evicted)
        session = FetchSession(self._draw_id(), replica_id, now_ms)
        self._by_id[session.session_id] = session
        self._by_replica[replica_id] = session.session_id
        require(len(self._by_id) <= self._sessions_max, "%d fetch sessions kept", len(self._by_id))
        return session

    def _draw_id(self) -> int:
        for _ in range(SESSION_ID_DRAWS_MAX):
            session_id = self._new_session_id()
            if session_id != SESSION_NONE and session_id not in self._by_id:
                return session_id
        require(False, "no free fetch session id after %d draws", SESSION_ID_DRAWS_MAX)
        return SESSION_NONE

    def _close(self, session: FetchSession) -> None:
        del self._by_id[session.session_id]
        if self._by_replica.get(session.replica_id) == session.session_id:
            del self._by_replica[session.replica_id]


# -- the follower's half ---------------------------------------------------------------------


class FollowerState(enum.Enum):
    NONE = "none"
    OPENING = "opening"
    ACTIVE = "active"


class FollowerEvent(enum.Enum):
    SEND = "send"
    ANSWERED = "answered"
    ANSWERED_WITHOUT_SESSION = "answered without a session"
    FAILED = "refused or broken"


FOLLOWER_TRANSITIONS: Mapping[tuple[FollowerState, FollowerEvent], FollowerState] = {
    (FollowerState.NONE, FollowerEvent.SEND): FollowerState.OPENING,
    (FollowerState.OPENING, FollowerEvent.ANSWERED): FollowerState.ACTIVE,
    (FollowerState.OPENING, FollowerEvent.ANSWERED_WITHOUT_SESSION): FollowerState.NONE,
    (FollowerState.ACTIVE, FollowerEvent.SEND): FollowerState.ACTIVE,
    (FollowerState.ACTIVE, FollowerEvent.ANSWERED): FollowerState.ACTIVE,
    (FollowerState.ACTIVE, FollowerEvent.ANSWERED_WITHOUT_SESSION): FollowerState.ACTIVE,
    (FollowerState.NONE, FollowerEvent.FAILED): FollowerState.NONE,
    (FollowerState.OPENING, FollowerEvent.FAILED): FollowerState.NONE,
    (FollowerState.ACTIVE, FollowerEvent.FAILED): FollowerState.NONE,
}


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What a follower's next fetch says: its session, and which partitions to name and forget."""

    session_id: int
    session_epoch: int
    named: tuple[TopicPartition, ...]
    forgotten: tuple[TopicPartition, ...]


class FollowerSession:
    """The follower's half of a session with one leader: what the leader holds, and the next epoch."""

    def __init__(self) -> None:
        self.state = FollowerState.NONE
        self.session_id = SESSION_NONE
        self._epoch = EPOCH_OPEN
        self._held: dict[TopicPartition, PartitionFetch] = {}

    def _move(self, event: FollowerEvent) -> None:
        next_state = FOLLOWER_TRANSITIONS.get((self.state, event))
        require(next_state is not None, "fetch session: no transition from %s on %s", self.state.value,
                event.value)
        self.state = next_state

    def next_request(self, wanted: Mapping[TopicPartition, PartitionFetch]) -> SessionRequest:
        """The session stamp for a fetch of `wanted`, and the partitions it must name and forget."""
        if self.state is FollowerState.ACTIVE:
            named = tuple(key for key, position in wanted.items() if self._held.get(key) != position)
            forgotten = tuple(key for key in self._held if key not in wanted)
            request = SessionRequest(self.session_id, self._epoch, named, forgotten)
            self._epoch = next_epoch(self._epoch)
        else:
            request = SessionRequest(SESSION_NONE, EPOCH_OPEN, tuple(wanted), ())
        self._move(FollowerEvent.SEND)
        self._held = dict(wanted)
        return request

    def answered(self, session_id: int) -> None:
        """The leader answered; a full fetch's answer names the session it opened (0: none)."""
        if self.state is FollowerState.OPENING and session_id != SESSION_NONE:
            self.session_id = session_id
            self._epoch = 1  # the first incremental epoch
        self._move(FollowerEvent.ANSWERED if session_id != SESSION_NONE else FollowerEvent.ANSWERED_WITHOUT_SESSION)

    def failed(self) -> None:
        """The leader refused the session, or the stream broke: the next fetch starts over in full."""
        self._move(FollowerEvent.FAILED)
        self.session_id = SESSION_NONE
        self._epoch = EPOCH_OPEN
        self._held = {}
