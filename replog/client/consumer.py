"""The consumer: partitions assigned by hand or by its group, fetched from their leaders, returned by poll().

Leader changes are followed through the metadata; after one, the position is
checked against the new leader's log (KIP-320) before fetching resumes, so a
truncated log is reported as LogTruncationError instead of being skipped over
or read twice. The I/O side is `fetcher.Fetcher`; the shared state
`fetch_buffer.FetchBuffer`; the rules for positions `fetch_state.Assignment`.

With a group_id the consumer also has a `group_member.GroupMember` on its I/O
loop: subscribe() makes it a member of the group (KIP-848), commits go to the
group's coordinator, and partitions start at the group's committed offsets.
The application's callbacks run on its own thread, inside poll() (and
unsubscribe() and close()), never on the I/O thread.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from replog.client.configs import ConsumerConfig
from replog.client.coordinator import Coordinators
from replog.client.errors import ClientError, GroupMembershipError
from replog.client.fetch_buffer import FetchBuffer
from replog.client.fetch_state import EARLIEST, LATEST, LIST_OFFSETS_TIMESTAMP, Assignment, State
from replog.client.fetcher import Fetcher
from replog.client.group_member import COMMITTABLE, GroupMember
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.membership import Assign, Lose, Membership, MemberState, PendingCallbacks, Revoke, subscription_of
from replog.client.metadata import MetadataManager
from replog.client.types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    offsets_to_commit,
)
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.rpc.channels import ClientSecurity

log = logging.getLogger("replog.client")

CLOSE_TIMEOUT_S = 30.0  # Kafka's default for close()
_client_ids = itertools.count(1)

PartitionsCallback = Callable[[set[TopicPartition]], object]
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], object]


@dataclass(frozen=True)
class _Listener:
    """The application's rebalance callbacks (Kafka's ConsumerRebalanceListener)."""

    assigned: PartitionsCallback | None = None
    revoked: PartitionsCallback | None = None
    lost: PartitionsCallback | None = None


@dataclass(frozen=True)
class _CommitCompleted:
    """A commit_async() finished: its callback runs in the next poll()."""

    callback: CommitCallback
    offsets: dict[TopicPartition, OffsetAndMetadata]
    error: Exception | None


class Consumer:
    """Reads partitions; not thread-safe (one thread calls poll(), as in Kafka)."""

    def __init__(
        self,
        bootstrap: str | Sequence[str],
        *,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        client_id: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        max_poll_interval_ms: int = 300_000,
        group_remote_assignor: str | None = None,
        auto_offset_reset: str = LATEST,
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 50 << 20,
        max_partition_fetch_bytes: int = 1 << 20,
        max_poll_records: int = 500,
        isolation_level: str = "read_uncommitted",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        sequence = next(_client_ids)
        self.config = ConsumerConfig(
            group_id=group_id,
            group_instance_id=group_instance_id,
            client_id=client_id if client_id is not None else
            (f"consumer-{group_id}-{sequence}" if group_id else f"consumer-{sequence}"),
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms,
            max_poll_interval_ms=max_poll_interval_ms,
            group_remote_assignor=group_remote_assignor,
            auto_offset_reset=auto_offset_reset,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            max_poll_records=max_poll_records,
            isolation_level=isolation_level,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        addresses = parse_bootstrap(bootstrap)
        self._buffer = FetchBuffer(Assignment(auto_offset_reset, use_committed=group_id is not None))
        self._assignment = self._buffer.assignment
        self._lock = self._buffer.lock
        self._closed = False
        self._subscribed = False  # subscribe() and assign() exclude each other
        self._listener = _Listener()
        self._callbacks = PendingCallbacks()
        self._io = IoThread("replog-consumer-io")
        self._channels = Channels(security)
        self._metadata = MetadataManager(
            addresses, self._channels, request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
        )
        self._fetcher = Fetcher(self.config, self._buffer, self._metadata, self._channels)
        self._tasks = [self._io.submit(self._fetcher.run())]
        self._member: GroupMember | None = None
        if group_id is not None:
            coordinators = Coordinators(self._metadata, self._channels, request_timeout_ms=request_timeout_ms,
                                             retry_backoff_ms=retry_backoff_ms)
            # KIP-1082: the member id is made here, once, and kept across fencing.
            membership = Membership(instance_id=group_instance_id, rebalance_timeout_ms=max_poll_interval_ms,
                                    server_assignor=group_remote_assignor, new_member_id=lambda: str(uuid.uuid4()))
            self._member = GroupMember(self.config, self._buffer, self._fetcher, coordinators, membership,
                                       self._callbacks)
            self._tasks.append(self._io.submit(self._member.run()))

    # -- assignment and positions --------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly these partitions (replacing any earlier assignment)."""
        if self._subscribed:
            raise ClientError("assign() and subscribe() cannot be mixed on one consumer: it is subscribed; "
                              "call unsubscribe() first")
        tps = [TopicPartition(*tp) for tp in partitions]
        with self._lock:
            self._assignment.assign(tps)
            self._buffer.drop_stale()
        self._io.call_soon(self._fetcher.follow, sorted({tp.topic for tp in tps}))

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer owns: assigned by hand, or by its group (those it is giving up
        included, until on_partitions_revoked has run)."""
        with self._lock:
            if self._subscribed and self._member is not None:
                return set(self._member.membership.owned)
            return set(self._assignment.partitions)

    def subscribe(self, topics: Iterable[str] | str | re.Pattern, on_partitions_assigned: PartitionsCallback | None = None,
                  on_partitions_revoked: PartitionsCallback | None = None,
                  on_partitions_lost: PartitionsCallback | None = None) -> None:
        """Join the group and read the partitions it assigns: of these topics, or of the topics a regex
        (a str or a re.Pattern) matches whole, new ones included.

        The callbacks run inside poll() with the set of partitions: assigned before
        their first records; revoked before they go to another member (after their
        positions are committed, with auto-commit); lost when the member was fenced
        and they may belong to another member already (no commit; without
        on_partitions_lost, on_partitions_revoked is called, as in Kafka). An empty
        list of topics unsubscribes.
        """
        member = self._group("subscribe()")
        if not self._subscribed and self._assignment.partitions:
            raise ClientError("subscribe() and assign() cannot be mixed on one consumer: it has partitions "
                              "assigned by hand; call unsubscribe() first")
        subscription = subscription_of(topics)
        if subscription.regex is None and not subscription.topics:
            self.unsubscribe()
            return
        self._listener = _Listener(on_partitions_assigned, on_partitions_revoked, on_partitions_lost)
        self._subscribed = True
        self._io.call_soon(member.subscribe, subscription)

    def unsubscribe(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Leave the group (after committing, with auto-commit, and on_partitions_revoked), or drop the
        partitions assigned by hand."""
        if self._subscribed:
            self._leave_group(timeout)
            self._subscribed = False
        with self._lock:
            self._assignment.assign([])
            self._buffer.drop_stale()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._lock:
            self._assignment.seek(TopicPartition(*partition), offset)
            self._buffer.drop_stale()
        self._wake_fetcher()

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        with self._lock:
            for tp in list(self._assignment.partitions) if partitions is None else partitions:
                self._assignment.seek_to(TopicPartition(*tp), strategy)
            self._buffer.drop_stale()
        self._wake_fetcher()

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions, and poll() returns none of their records, until resume().
        Positions stay, and so does the assignment: a group sees no change (Kafka's pause)."""
        with self._lock:
            self._assignment.pause([TopicPartition(*tp) for tp in partitions])

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch and return these partitions' records again, from their positions."""
        with self._lock:
            self._assignment.resume([TopicPartition(*tp) for tp in partitions])
            self._buffer.changed.notify_all()
        self._wake_fetcher()

    def paused(self) -> set[TopicPartition]:
        with self._lock:
            return self._assignment.paused()

    def position(self, partition: TopicPartition, timeout: float | None = 60.0) -> int:
        """The offset of the next record poll() returns, looking it up first if needed."""
        tp = TopicPartition(*partition)
        self._wake_fetcher()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                part = self._assignment.get(tp)
                if part.state is State.FAILED:
                    raise part.error or ClientError(f"{tp} stopped after an error; seek to continue")
                if part.state is State.REVOKING and part.position < 0:
                    raise ClientError(f"{tp} is being given up and has no position")
                if part.state not in (State.AWAIT_RESET, State.AWAIT_COMMITTED):
                    return part.position
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise ClientError(f"the position of {tp} was not found within {timeout:g} s",
                                      ErrorCode.REQUEST_TIMED_OUT)
                self._buffer.changed.wait(remaining)

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float = 60.0
    ) -> dict[TopicPartition, int]:
        return self._offsets([TopicPartition(*tp) for tp in partitions], EARLIEST, timeout)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float = 60.0
    ) -> dict[TopicPartition, int]:
        """The high watermark of each partition (the offset after the last committed record); under
        read_committed the last stable offset (below it no transaction is still open)."""
        return self._offsets([TopicPartition(*tp) for tp in partitions], LATEST, timeout)

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float = 60.0
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the first offset whose record's timestamp is at or after the time given (ms
        since the Unix epoch), with that timestamp; None where no record is that late (Kafka's offsetsForTimes).
        Under read_committed only offsets below the last stable offset are found."""
        asked = {TopicPartition(*tp): timestamp for tp, timestamp in timestamps.items()}
        for tp, timestamp in asked.items():
            if timestamp.__class__ is not int or timestamp < 0:
                raise ValueError(f"the time to look up for {tp} must be ms since the Unix epoch, not {timestamp!r}")
        found = self._io.run(self._fetcher.list_offsets_until_done(asked, timeout), timeout + 5,
                             what="looking up offsets by time")
        return {tp: OffsetAndTimestamp(offset, timestamp, epoch) if offset >= 0 else None
                for tp, (offset, epoch, timestamp) in found.items()}

    def _offsets(self, tps: list[TopicPartition], strategy: str, timeout: float) -> dict[TopicPartition, int]:
        found = self._io.run(
            self._fetcher.list_offsets_until_done({tp: LIST_OFFSETS_TIMESTAMP[strategy] for tp in tps}, timeout),
            timeout + 5, what=f"looking up the {strategy} offsets")
        return {tp: offset for tp, (offset, _epoch, _timestamp) in found.items()}

    # -- polling ---------------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0) -> list[ConsumerRecord]:
        """Records of the partitions this consumer owns, waiting up to timeout_ms for some to arrive.

        First runs the callbacks of what changed (assigned, revoked, lost partitions,
        finished commit_async() calls). Raises the errors of partitions that stopped
        (LogTruncationError, OffsetOutOfRangeError, FetchError), once each (the other
        partitions go on), and GroupMembershipError while the group refuses the consumer.
        """
        self._check_open()
        deadline = time.monotonic() + timeout_ms / 1000
        if self._member is not None:
            with self._lock:
                # The application is done with what earlier polls returned: auto-commit may save it.
                self._member.consumed = self._assignment.committable()
                rejoining = self._member.polled()
            if rejoining:
                self._io.call_soon(self._member.wakeup)
        while True:
            self._run_callbacks()
            with self._lock:
                if self._callbacks:
                    continue
                error = self._buffer.take_error() or self._group_error()
                if error is not None:
                    raise error
                records = self._buffer.collect(self.config.max_poll_records)
                if records:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._buffer.changed.wait(remaining)
        self._wake_fetcher()
        return records

    def _group_error(self) -> ClientError | None:
        membership = self._member.membership if self._member is not None else None
        if membership is None or membership.state is not MemberState.FAILED or membership.error is None:
            return None
        code, message = membership.error
        return GroupMembershipError(f"group {self.config.group_id!r} refused this consumer: {code.name}: {message}",
                                    code)

    def _run_callbacks(self) -> None:
        """Tell the application what changed, on its thread; the first exception of a callback is
        raised once every pending change is carried out."""
        failure: Exception | None = None
        while True:
            with self._lock:
                change = self._callbacks.pop()
            if change is None:
                break
            try:
                self._deliver(change)
            except Exception as error:  # the application's own callback failed
                failure = failure or error
        if failure is not None:
            raise failure

    def _deliver(self, change: object) -> None:
        listener = self._listener
        if isinstance(change, Revoke):
            try:
                if self.config.auto_commit:
                    self._commit_before_giving_up(change.partitions)
                _call(listener.revoked, change.partitions)
            finally:
                with self._lock:
                    self._assignment.finish_revocation(change.partitions)
                    self._buffer.drop_stale()
                self._io.call_soon(self._member.revoked, change.partitions)
        elif isinstance(change, Assign):
            _call(listener.assigned, change.partitions)
        elif isinstance(change, Lose):
            _call(listener.lost or listener.revoked, change.partitions)
        elif isinstance(change, _CommitCompleted):
            change.callback(change.offsets, change.error)

    def _commit_before_giving_up(self, partitions: frozenset[TopicPartition]) -> None:
        with self._lock:
            positions = {tp: o for tp, o in self._assignment.committable(COMMITTABLE).items() if tp in partitions}
        if not positions:
            return
        try:
            self._io.run(self._member.commit(positions, self._request_timeout_s, automatic=True),
                         self._request_timeout_s + 5, what="committing before giving partitions up")
        except ClientError as error:
            log.warning("group %s: the positions of %s were not committed before giving them up (%s); their next "
                        "owner starts at the last commit", self.config.group_id, sorted(positions), error)

    def _wake_fetcher(self) -> None:
        if not self._closed:
            self._io.call_soon(self._fetcher.wakeup)

    # -- commits -----------------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
               timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """Commit offsets to the group and wait: the positions (what poll() returned) of every partition
        owned, or the given ones (the next offset to read, per partition). Returns what was committed.

        A commit refused as stale (the member's epoch moved) is sent again after the next heartbeat;
        CommitFailedError when the member was fenced or removed, or a partition does not exist.
        """
        member = self._group("commit()")
        offsets = self._offsets_to_commit(offsets)
        if not offsets:
            return {}
        timeout_s = timeout if timeout is not None else self._request_timeout_s
        return self._io.run(member.commit(offsets, timeout_s), timeout_s + 5, what="committing offsets")

    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """commit() without waiting; callback(offsets, error or None) runs inside a later poll() (or close())."""
        member = self._group("commit_async()")
        offsets = self._offsets_to_commit(offsets)
        if not offsets:
            return
        future = self._io.submit(member.commit(offsets, self._request_timeout_s))

        def completed(done) -> None:
            error = None if done.cancelled() else done.exception()
            if done.cancelled():
                error = ClientError("the commit was cancelled: the consumer closed")
            if callback is None:
                if error is not None:
                    log.warning("group %s: commit_async failed: %s", self.config.group_id, error)
                return
            with self._lock:
                self._callbacks.push(_CommitCompleted(callback, offsets, error))
                self._buffer.changed.notify_all()

        future.add_done_callback(completed)

    def committed(self, partitions: Iterable[TopicPartition | tuple[str, int]],
                  timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of these partitions; None where it has none."""
        member = self._group("committed()")
        tps = [TopicPartition(*tp) for tp in partitions]
        timeout_s = timeout if timeout is not None else self._request_timeout_s
        return self._io.run(member.committed(tps, timeout_s), timeout_s + 5, what="reading committed offsets")

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, the member's epoch and its id, for a transactional producer's
        send_offsets_to_transaction(): the group coordinator then takes the offsets only from the member
        that owns the partitions now. Outside the group's membership (assign()), epoch -1 and no id."""
        member = self._group("group_metadata()")
        membership = member.membership
        if not self._subscribed:
            return ConsumerGroupMetadata(member.group_id, -1, "", self.config.group_instance_id)
        return ConsumerGroupMetadata(member.group_id, membership.member_epoch, membership.member_id,
                                     self.config.group_instance_id)

    def _offsets_to_commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None
                           ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            with self._lock:
                return self._assignment.committable()
        return offsets_to_commit(offsets)

    def _group(self, what: str) -> GroupMember:
        self._check_open()
        if self._member is None:
            raise ClientError(f"{what} needs a consumer group: create the Consumer with group_id=...",
                              ErrorCode.INVALID_GROUP_ID)
        return self._member

    @property
    def _request_timeout_s(self) -> float:
        return self.config.request_timeout_ms / 1000

    # -- leaving ---------------------------------------------------------------------------------

    def _leave_group(self, timeout_s: float) -> None:
        """Commit (auto-commit), call on_partitions_revoked for what is owned, and leave the group at once."""
        member = self._member
        deadline = time.monotonic() + timeout_s
        failure: Exception | None = None
        try:
            self._run_callbacks()
        except Exception as error:
            failure = error
        with self._lock:
            # What the application holds: a revocation that came after the callbacks above is part of
            # this one (and not called back again later).
            self._callbacks.drop_changes()
            owned = frozenset(self._assignment.partitions)
            positions = self._assignment.committable(COMMITTABLE)
        if self.config.auto_commit and positions and owned:
            self._commit_quietly(positions, deadline)
        try:
            if owned:
                _call(self._listener.revoked, owned)
        except Exception as error:
            failure = failure or error
        remaining_s = max(deadline - time.monotonic(), 0.1)
        self._io.run(member.leave(remaining_s), remaining_s + 5, what="leaving the group")
        with self._lock:
            self._assignment.assign([])
            self._buffer.drop_stale()
        if failure is not None:
            raise failure

    def _commit_quietly(self, positions: dict[TopicPartition, OffsetAndMetadata], deadline: float) -> None:
        timeout_s = max(deadline - time.monotonic(), 0.1)
        try:
            self._io.run(self._member.commit(positions, timeout_s, automatic=True), timeout_s + 5,
                         what="committing the positions")
        except ClientError as error:
            log.warning("group %s: the positions were not committed (%s)", self.config.group_id, error)

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Commit the positions (auto-commit), leave the group at once, and stop; bounded by timeout."""
        if self._closed:
            return
        try:
            if self._member is not None:
                if self._subscribed:
                    self._leave_group(timeout)
                elif self.config.auto_commit:
                    with self._lock:
                        positions = self._assignment.committable()
                    if positions:
                        self._commit_quietly(positions, time.monotonic() + timeout)
                self._run_callbacks()
        finally:
            self._closed = True
            self._shut_down()

    def _shut_down(self) -> None:
        self._io.call_soon(self._fetcher.stop)
        if self._member is not None:
            self._io.call_soon(self._member.stop)
        try:
            for task in self._tasks:
                task.result(10)
        finally:
            self._io.run(self._channels.close(), 10, what="closing the consumer's connections")
            self._io.stop()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientError("the consumer is closed")

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _call(callback: PartitionsCallback | None, partitions: frozenset[TopicPartition]) -> None:
    if callback is not None:
        callback(set(partitions))
