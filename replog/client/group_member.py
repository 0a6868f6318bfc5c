"""The consumer's group on its I/O loop: heartbeats, where new partitions start, and commits.

`membership.Membership` decides; this carries it out. Heartbeats leave when
due (one at a time); their answers' changes are applied to the fetch
assignment at once (revoked partitions stop fetching, lost ones are dropped,
new ones wait for their committed offsets) and queued for poll(), which runs
the application's callbacks. Partitions without a position ask the
coordinator for their committed offset (OffsetFetch). Commits leave one at a
time, in order, so a later commit never lands before an earlier one; one
refused with STALE_MEMBER_EPOCH is sent again after the next heartbeat
answer, with the member's new epoch.

Auto-commit (enable.auto.commit) commits, every auto_commit_interval_ms, the
positions poll() found when it was last called: the records earlier polls
returned, which the application had finished with when it polled again
(Kafka's rule). It never goes back: a position at or below the last offset
committed for a partition is not sent again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from replog.client.configs import ConsumerConfig
from replog.client.coordinator import Coordinators
from replog.client.coordinator_requests import heartbeat_answer, heartbeat_request
from replog.client.errors import ClientError, ClientTimeoutError, CommitFailedError
from replog.client.fetch_buffer import FetchBuffer
from replog.client.fetch_state import POSITIONED, State
from replog.client.fetcher import Fetcher
from replog.client.loop_worker import LoopWorker
from replog.client.membership import (
    Assign,
    Change,
    HeartbeatAnswer,
    Membership,
    MemberState,
    PendingCallbacks,
    Revoke,
    Subscription,
)
from replog.client.types import OffsetAndMetadata
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

log = logging.getLogger("replog.client")

IDLE_WAIT_MS = 250
COMMITTABLE = POSITIONED | {State.REVOKING}  # what an automatic commit may save


def now_ms() -> float:
    return time.monotonic() * 1000


def names(partitions) -> str:
    return "[" + ", ".join(str(tp) for tp in sorted(partitions)) + "]"


class GroupMember(LoopWorker):
    """Runs on the consumer's I/O loop; `consumed` and the membership are shared under the buffer's lock."""

    name = "group member"

    def __init__(self, config: ConsumerConfig, buffer: FetchBuffer, fetcher: Fetcher,
                 coordinators: Coordinators, membership: Membership, callbacks: PendingCallbacks) -> None:
        super().__init__(buffer)
        self.group_id = config.group_id or ""
        self._config = config
        self._assignment = buffer.assignment
        self._fetcher = fetcher
        self._coordinators = coordinators
        self.membership = membership
        self._callbacks = callbacks
        self._request_timeout_s = config.request_timeout_ms / 1000
        self.consumed: dict[TopicPartition, OffsetAndMetadata] = {}  # positions when poll() was last called
        self._committed: dict[TopicPartition, int] = {}  # the last offset committed per partition
        self._answered = asyncio.Event()  # set (and replaced) on every heartbeat answer
        self._commit_lock = asyncio.Lock()  # commits leave one at a time, in order
        self._next_auto_commit_ms = now_ms() + config.auto_commit_interval_ms
        self._lookups_paused_until_ms = 0.0
        self._polled_at_ms = now_ms()

    def _step(self) -> float:
        now = now_ms()
        self._check_poll_timer(now)
        with self._lock:
            due_ms = self.membership.heartbeat_due_ms()
            lookups = self._claim_lookups(now)
        waits = [IDLE_WAIT_MS]
        if due_ms is not None:
            if due_ms <= now:
                self._spawn(self._heartbeat())
            else:
                waits.append(due_ms - now)
        if lookups:
            self._spawn(self._look_up_committed(lookups))
        if self._config.auto_commit:
            if now >= self._next_auto_commit_ms:
                self._next_auto_commit_ms = now + self._config.auto_commit_interval_ms
                self._spawn(self._auto_commit())
            waits.append(self._next_auto_commit_ms - now)
        return min(waits)

    # -- membership --------------------------------------------------------------------------------

    def polled(self) -> bool:
        """poll() was called (with the lock held): the application is alive. True when the member
        joins again, having left because poll() was not called in time (wake the loop)."""
        self._polled_at_ms = now_ms()
        return self.membership.polled(self._polled_at_ms)

    def _check_poll_timer(self, now: float) -> None:
        with self._lock:
            if now - self._polled_at_ms <= self._config.max_poll_interval_ms \
                    or self.membership.state is not MemberState.MEMBER:
                return
            log.warning("group %s: poll() was not called for %d ms (max_poll_interval_ms): member %s leaves the group, "
                        "and the next poll() joins again", self.group_id, now - self._polled_at_ms,
                        self.membership.member_id)
            self._apply(self.membership.poll_timer_expired(now))

    def subscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._polled_at_ms = now_ms()
            self.membership.subscribe(subscription, now_ms())
        self.wakeup()

    def revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """poll() gave these up (committed, called back, dropped): tell the coordinator at once."""
        with self._lock:
            topics = self._apply(self.membership.revoked(partitions, now_ms()))
        self._follow(topics)

    async def leave(self, timeout_s: float) -> None:
        """Leave the group now (epoch -1, or -2 for a static member), waiting up to timeout_s for the answer."""
        with self._lock:
            if not self.membership.leave(now_ms()):
                return
        self.wakeup()
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                if not self.membership.in_group:
                    return
            try:
                await self._next_answer(deadline)
            except ClientTimeoutError:
                log.warning("group %s: member %s could not leave within %g s; the coordinator removes it once "
                            "its session times out", self.group_id, self.membership.member_id, timeout_s)
                with self._lock:
                    self.membership.leave(now_ms())
                return

    async def _heartbeat(self) -> None:
        with self._lock:
            if self.membership.heartbeat_due_ms() is None:
                return
            params = self.membership.next_heartbeat()
        request = heartbeat_request(self.group_id, self._config.client_id, params)
        try:
            try:
                response, _ = await self._coordinators.call(
                    self.group_id, "ConsumerGroupHeartbeat", request, lambda r: [ErrorCode.of(r.error_code)],
                    self._request_timeout_s)
                answer = heartbeat_answer(response)
            except ClientError as error:
                if isinstance(error, ClientTimeoutError) or error.error_code.retriable:
                    log.warning("group %s: heartbeat failed (%s); retrying", self.group_id, error)
                    with self._lock:
                        self.membership.on_failure(now_ms(), self._config.retry_backoff_ms)
                    return
                answer = HeartbeatAnswer(error.error_code, str(error))
            self._log_answer(params.member_epoch, answer)
            with self._lock:
                topics = self._apply(self.membership.on_answer(answer, now_ms(), self._config.retry_backoff_ms))
            self._follow(topics)
        finally:
            # Whoever waits for an answer (a stale commit, a leave) finds the membership updated.
            self._answered.set()
            self._answered = asyncio.Event()
            self.wakeup()

    def _log_answer(self, sent_epoch: int, answer: HeartbeatAnswer) -> None:
        if answer.error is ErrorCode.NONE:
            return
        level = logging.INFO if answer.error in (ErrorCode.NOT_COORDINATOR, ErrorCode.FENCED_MEMBER_EPOCH,
                                                 ErrorCode.UNKNOWN_MEMBER_ID) else logging.WARNING
        log.log(level, "group %s: heartbeat of member %s at epoch %d answered %s: %s", self.group_id,
                self.membership.member_id, sent_epoch, answer.error.name, answer.message)

    def _apply(self, changes: list[Change]) -> set[str]:
        """Carry the changes out on the fetch assignment and queue them for poll(); call with the lock
        held. Returns the topics whose metadata the fetcher must follow now."""
        topics: set[str] = set()
        for change in changes:
            if isinstance(change, Revoke):
                self._assignment.revoke(change.partitions)
                what = "gives up"
            elif isinstance(change, Assign):
                self._assignment.add(change.partitions)
                topics |= {tp.topic for tp in change.partitions}
                what = "gets"
            else:
                self._assignment.remove(change.partitions)
                what = "lost"
            self._callbacks.push(change)
            log.info("group %s: member %s at epoch %d %s %s", self.group_id, self.membership.member_id,
                     self.membership.member_epoch, what, names(change.partitions))
        if changes:
            self._buffer.drop_stale()
            self._buffer.changed.notify_all()
        return topics

    def _follow(self, topics: set[str]) -> None:
        if topics:
            self._fetcher.follow(sorted(topics))
        self._fetcher.wakeup()
        self.wakeup()

    # -- where new partitions start ------------------------------------------------------------------

    def _claim_lookups(self, now: float) -> list[tuple[TopicPartition, int]]:
        if now < self._lookups_paused_until_ms:
            return []
        claimed = []
        for tp, part in self._assignment.partitions.items():
            if part.state is State.AWAIT_COMMITTED and not part.request_in_flight:
                part.request_in_flight = True
                claimed.append((tp, part.generation))
        return claimed

    async def _look_up_committed(self, items: list[tuple[TopicPartition, int]]) -> None:
        try:
            found = await self._coordinators.committed_offsets(self.group_id, [tp for tp, _ in items],
                                                               self._request_timeout_s)
        except ClientError as error:
            log.warning("group %s: the committed offsets could not be read (%s); retrying", self.group_id, error)
            found = None
        with self._lock:
            for tp, generation in items:
                part = self._assignment.partitions.get(tp)
                if part is not None and part.generation == generation:
                    part.request_in_flight = False
                if found is not None:
                    committed = found.get(tp)
                    self._committed[tp] = committed.offset if committed is not None else -1
                    self._assignment.on_committed(tp, generation, committed)
            self._buffer.changed.notify_all()
        if found is None:
            self._lookups_paused_until_ms = now_ms() + self._config.retry_backoff_ms
            asyncio.get_running_loop().call_later(self._config.retry_backoff_ms / 1000, self.wakeup)
        self._fetcher.wakeup()

    async def committed(self, partitions: list[TopicPartition], timeout_s: float
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await self._coordinators.committed_offsets(self.group_id, partitions, timeout_s)

    # -- commits --------------------------------------------------------------------------------------

    async def _auto_commit(self) -> None:
        with self._lock:
            offsets = dict(self.consumed)
        if not offsets:
            return
        try:
            await self.commit(offsets, self._request_timeout_s, automatic=True)
        except ClientError as error:
            log.warning("group %s: auto-commit failed: %s", self.group_id, error)

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_s: float, *,
                     automatic: bool = False) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit offsets; returns what was committed. `automatic` commits (auto-commit, before a
        revocation, at close) keep to partitions still owned and never go back."""
        deadline = time.monotonic() + timeout_s
        done: dict[TopicPartition, OffsetAndMetadata] = {}
        async with self._commit_lock:
            pending = dict(offsets)
            while True:
                with self._lock:
                    if automatic:
                        pending = self._still_to_commit(pending)
                    identity = self._commit_identity()
                if not pending:
                    return done
                if identity is None:
                    await self._next_answer(deadline)  # joining: commit once in the group
                    continue
                member_id, member_epoch = identity
                results = await self._coordinators.commit_offsets(
                    self.group_id, member_id, member_epoch, pending, max(deadline - time.monotonic(), 0.001))
                for tp, (code, _) in results.items():
                    if code is ErrorCode.NONE:
                        done[tp] = pending[tp]
                        self._committed[tp] = pending[tp].offset
                self._raise_failures(member_id, member_epoch, results)
                pending = {tp: pending[tp] for tp, (code, _) in results.items() if code is ErrorCode.STALE_MEMBER_EPOCH}
                if not pending:
                    return done
                log.info("group %s: commit at member epoch %d was stale; committing again after the next "
                         "heartbeat", self.group_id, member_epoch)
                await self._next_answer(deadline)

    def _still_to_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> dict:
        partitions = self._assignment.partitions
        return {tp: offset for tp, offset in offsets.items()
                if tp in partitions and partitions[tp].state in COMMITTABLE
                and offset.offset > self._committed.get(tp, -1)}

    def _commit_identity(self) -> tuple[str, int] | None:
        """(member id, member epoch) to commit with: -1 outside the group; None while joining."""
        membership = self.membership
        if membership.state is MemberState.JOINING:
            return None
        if membership.state in (MemberState.MEMBER, MemberState.LEAVING):
            return membership.member_id, membership.member_epoch
        if membership.state is MemberState.FAILED:
            code, message = membership.error or (ErrorCode.UNKNOWN_SERVER_ERROR, "")
            raise CommitFailedError(f"the consumer is no longer in group {self.group_id!r} ({code.name}: "
                                    f"{message}); nothing can be committed", code)
        return "", -1

    def _raise_failures(self, member_id: str, member_epoch: int, results: dict) -> None:
        failed = {tp: outcome for tp, outcome in results.items()
                  if outcome[0] not in (ErrorCode.NONE, ErrorCode.STALE_MEMBER_EPOCH)}
        if not failed:
            return
        tp, (code, message) = sorted(failed.items())[0]
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
            who = f"member {member_id} at epoch {member_epoch}" if member_epoch >= 0 else "a consumer outside the group"
            raise CommitFailedError(f"the commit to group {self.group_id!r} was refused: {who} may not commit "
                                    f"({code.name}: {message}); the partitions may belong to another member now",
                                    code)
        raise CommitFailedError(f"the commit of {tp} to group {self.group_id!r} failed: {code.name}: {message}", code)

    async def _next_answer(self, deadline: float) -> None:
        """Heartbeat now, and wait for its answer (ClientTimeoutError at the deadline)."""
        with self._lock:
            self.membership.heartbeat_now(now_ms())
        self.wakeup()
        answered = self._answered
        try:
            await asyncio.wait_for(answered.wait(), max(deadline - time.monotonic(), 0))
        except TimeoutError:
            raise ClientTimeoutError(f"group {self.group_id!r}: no heartbeat answer in time") from None
