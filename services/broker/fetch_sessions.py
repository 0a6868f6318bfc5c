"""Fetch sessions (KIP-227): a follower names only what changed, and is answered only what changed.

A follower fetches the same partitions from its leader many times a second.
In a session the leader keeps those partitions and their fetch positions, so
a request lists only partitions that are new or whose position moved, and an
answer lists only partitions with records, an error, a diverging epoch, or a
high watermark or log start offset the follower has not been told.

The leader still plans every partition of the session on every fetch: that
is how it learns each follower's log end offset and keeps the follower's lag
clock (replica.lag.time.max.ms) running for partitions that are idle.

Only followers get sessions, one per follower broker: a follower that starts
over (a new stream, a restart) replaces its own session instead of filling
the cache. A consumer's fetch is answered as a full fetch with session_id 0,
which KIP-227 lets a broker do for any request.
"""

from __future__ import annotations

import logging
import random
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from replog.core.errors import ErrorCode
from replog.core.invariant import require
from replog.core.topic_partition import TopicPartition

log = logging.getLogger("replog.broker")

SESSION_NONE = 0  # session_id: no session
EPOCH_OPEN = 0  # session_epoch with session_id 0: a full fetch that opens a session
EPOCH_FINAL = -1  # session_epoch: no session (with id 0), or close the named one
EPOCH_MAX = 2**31 - 1
# Sessions kept at once; one per follower broker is what the cluster needs
# (Kafka's max.incremental.fetch.session.cache.slots is 1,000).
FETCH_SESSIONS_MAX = 1_000


def next_epoch(epoch: int) -> int:
    """The session epoch after `epoch`: counting up from 1, wrapping from 2^31-1 back to 1."""
    return 1 if epoch == EPOCH_MAX else epoch + 1


@dataclass(slots=True)
class SessionPartition:
    """One partition of a session: where the follower reads (set by `update`), and what it was last told."""

    fetch_offset: int = -1
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    partition_max_bytes: int = 0
    told_high_watermark: int = -1
    told_log_start_offset: int = -1
    last_plan: object = None  # the leader's last plan for it, which a fetch may reuse (fetch.py)

    def update(self, asked) -> None:
        """Take the fields of a FetchPartition that (re)names this partition."""
        self.last_plan = None
        self.fetch_offset = asked.fetch_offset
        self.current_leader_epoch = asked.current_leader_epoch
        self.last_fetched_epoch = asked.last_fetched_epoch
        self.log_start_offset = asked.log_start_offset
        self.partition_max_bytes = asked.partition_max_bytes

    def worth_answering(self, high_watermark: int, log_start_offset: int) -> bool:
        """In an incremental answer: whether positions the follower was told have moved."""
        return high_watermark != self.told_high_watermark or log_start_offset != self.told_log_start_offset

    def told(self, high_watermark: int, log_start_offset: int) -> None:
        self.told_high_watermark = high_watermark
        self.told_log_start_offset = log_start_offset


@dataclass(slots=True)
class FetchSession:
    session_id: int
    replica_id: int
    next_epoch: int = 1  # the session_epoch the next request must carry
    partitions: dict[TopicPartition, SessionPartition] = field(default_factory=dict)

    def apply(self, topics: Iterable, forgotten_topics: Iterable) -> None:
        """Add or update the partitions a request names; drop the ones it forgets."""
        for topic in topics:
            for asked in topic.partitions:
                self.partitions.setdefault((topic.topic, asked.partition), SessionPartition()).update(asked)
        for topic in forgotten_topics:
            for partition in topic.partitions:
                self.partitions.pop((topic.topic, partition), None)

    def advance_epoch(self) -> None:
        self.next_epoch = next_epoch(self.next_epoch)


@dataclass(frozen=True, slots=True)
class SessionStart:
    """How a request stands towards the sessions: refused, sessionless, or in `session`."""

    error: ErrorCode = ErrorCode.NONE
    session: FetchSession | None = None
    full: bool = True  # answer every partition (a full fetch), not only the changed ones


SESSIONLESS = SessionStart()


class FetchSessions:
    """The leader's sessions, by id; at most one per follower broker and FETCH_SESSIONS_MAX in all."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._by_id: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self._by_replica: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def start(self, replica_id: int, session_id: int, session_epoch: int, topics, forgotten_topics) -> SessionStart:
        """Find, open or close the request's session, and apply its partition changes."""
        if session_id == SESSION_NONE:
            if session_epoch != EPOCH_OPEN or replica_id < 0:
                return SESSIONLESS
            session = self._open(replica_id)
            session.apply(topics, ())
            return SessionStart(session=session, full=True)
        session = self._by_id.get(session_id)
        if session is None or session.replica_id != replica_id:
            return SessionStart(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session_epoch == EPOCH_FINAL:
            self._close(session)
            return SESSIONLESS
        if session_epoch != session.next_epoch:
            return SessionStart(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        self._by_id.move_to_end(session_id)
        session.apply(topics, forgotten_topics)
        session.advance_epoch()
        return SessionStart(session=session, full=False)

    def _open(self, replica_id: int) -> FetchSession:
        previous = self._by_replica.get(replica_id)
        if previous is not None:
            self._close(self._by_id[previous])
        while len(self._by_id) >= FETCH_SESSIONS_MAX:
            evicted = next(iter(self._by_id.values()))
            log.warning("%d fetch sessions kept, the most allowed: closing session %d of broker %d, used least "
                        "recently", len(self._by_id), evicted.session_id, evicted.replica_id)
            self._close(evicted)
        session_id = self._rng.randrange(1, EPOCH_MAX)
        while session_id in self._by_id:
            session_id = self._rng.randrange(1, EPOCH_MAX)
        session = self._by_id[session_id] = FetchSession(session_id, replica_id)
        self._by_replica[replica_id] = session_id
        log.info("fetch session %d opened for broker %d%s", session_id, replica_id,
                 f" (it replaces session {previous})" if previous is not None else "")
        require(len(self._by_id) <= FETCH_SESSIONS_MAX, "%d fetch sessions kept", len(self._by_id))
        return session

    def _close(self, session: FetchSession) -> None:
        del self._by_id[session.session_id]
        if self._by_replica.get(session.replica_id) == session.session_id:
            del self._by_replica[session.replica_id]
