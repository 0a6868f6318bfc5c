"""Where the consumer stands in each assigned partition, and how that changes (no I/O here).

Each partition is in one of these states:

    AWAIT_COMMITTED   a consumer with a group id starts where the group committed: ask the
                      coordinator (OffsetFetch); without a committed offset, reset
    AWAIT_RESET       no position yet (or OFFSET_OUT_OF_RANGE): ask the leader with ListOffsets
    AWAIT_VALIDATION  the leader changed: ask it where the epoch of the last record returned ends
                      (OffsetsForLeaderEpoch, KIP-320) before fetching again
    FETCHING          fetch from `fetch_offset`, which runs ahead of `position` by what is buffered
                      (unless the caller paused the partition: then nothing is fetched or returned)
    FAILED            an error the caller must see (log truncation, out of range with no reset
                      policy, an unrecoverable fetch error); fetching stops until a seek
    REVOKING          the group takes the partition away: nothing is fetched or returned any
                      more, and `position` (-1 when it had none) is what a last commit saves

`position` is the offset of the next record poll() returns; `last_epoch` is the
leader epoch of the record before it (-1 when unknown, e.g. after a seek), and
`leader_epoch` the leader epoch the position was last confirmed under. Every
seek, reset or validation bumps `generation`, so an answer to a request sent
before it is recognised and dropped.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from replog.client.errors import ClientError, LogTruncationError, NoOffsetForPartitionError, OffsetOutOfRangeError
from replog.client.types import OffsetAndMetadata
from replog.core.topic_partition import TopicPartition

EARLIEST = "earliest"
LATEST = "latest"
NO_RESET = "none"
RESET_STRATEGIES = (EARLIEST, LATEST, NO_RESET)
LIST_OFFSETS_TIMESTAMP = {EARLIEST: -2, LATEST: -1}


class State(enum.Enum):
    AWAIT_COMMITTED = "await committed"
    AWAIT_RESET = "await reset"
    AWAIT_VALIDATION = "await validation"
    FETCHING = "fetching"
    FAILED = "failed"
    REVOKING = "revoking"


# The states in which `position` is where the consumer stands: what a commit saves.
POSITIONED = frozenset({State.FETCHING, State.AWAIT_VALIDATION})


@dataclass
class PartitionFetchState:
    state: State
    reset_strategy: str
    position: int = -1
    last_epoch: int = -1
    leader_epoch: int = -1
    fetch_offset: int = -1
    generation: int = 0
    error: ClientError | None = None
    request_in_flight: bool = False  # a ListOffsets, OffsetsForLeaderEpoch or OffsetFetch for it is out
    paused: bool = False  # pause(): neither fetched nor returned until resume(); its position stays


class Assignment:
    """The partitions a consumer reads and its state in each; the rules, without the I/O.

    With `use_committed` (a consumer with a group id) new partitions start
    where the group committed; otherwise by auto_offset_reset.
    """

    def __init__(self, auto_offset_reset: str, use_committed: bool = False) -> None:
        if auto_offset_reset not in RESET_STRATEGIES:
            raise ValueError(f"auto_offset_reset must be one of {', '.join(RESET_STRATEGIES)}, "
                             f"not {auto_offset_reset!r}")
        self.auto_offset_reset = auto_offset_reset
        self.use_committed = use_committed
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}

    def assign(self, tps: list[TopicPartition]) -> None:
        """Keep the state of partitions still assigned; new ones start without a position."""
        self.partitions = {tp: self.partitions.get(tp) or self._new_partition() for tp in tps}

    def add(self, tps: Iterable[TopicPartition]) -> None:
        """The group assigned these partitions too."""
        for tp in tps:
            if tp not in self.partitions:
                self.partitions[tp] = self._new_partition()

    def revoke(self, tps: Iterable[TopicPartition]) -> None:
        """The group takes these away: stop fetching and returning their records; keep the positions."""
        for tp in tps:
            part = self.partitions.get(tp)
            if part is not None:
                positioned = part.state in POSITIONED
                self._restart(part, State.REVOKING)
                part.position = part.position if positioned else -1

    def remove(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)

    def finish_revocation(self, tps: Iterable[TopicPartition]) -> None:
        """Drop the partitions still being revoked (one lost and assigned again meanwhile stays)."""
        self.remove([tp for tp in tps if tp in self.partitions and self.partitions[tp].state is State.REVOKING])

    def committable(self, states: frozenset[State] = POSITIONED) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions of the partitions in `states` that have one, as offsets to commit."""
        return {tp: OffsetAndMetadata(part.position, "", part.last_epoch) for tp, part in self.partitions.items()
                if part.state in states and part.position >= 0}

    def _new_partition(self) -> PartitionFetchState:
        return PartitionFetchState(State.AWAIT_COMMITTED if self.use_committed else State.AWAIT_RESET,
                                   self.auto_offset_reset)

    def get(self, tp: TopicPartition) -> PartitionFetchState:
        try:
            return self.partitions[tp]
        except KeyError:
            raise ClientError(f"{tp} is not assigned to this consumer") from None

    # -- the caller's moves --------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read from `offset` next; its epoch is unknown, so no validation until records arrive."""
        if offset < 0:
            raise ValueError(f"offset must not be negative, not {offset}")
        part = self.get(tp)
        self._restart(part, State.FETCHING)
        part.position = part.fetch_offset = offset
        part.last_epoch = -1

    def seek_to(self, tp: TopicPartition, strategy: str) -> None:
        """Seek to the earliest or latest offset, looked up lazily (as Kafka's seekToBeginning/End)."""
        part = self.get(tp)
        self._restart(part, State.AWAIT_RESET)
        part.reset_strategy = strategy

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        """Fetch and return nothing of these until resume(); what was fetched already waits (Kafka's pause)."""
        for part in [self.get(tp) for tp in tps]:
            part.paused = True

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        for part in [self.get(tp) for tp in tps]:
            part.paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, part in self.partitions.items() if part.paused}

    def consumed(self, tp: TopicPartition, next_offset: int, last_epoch: int) -> None:
        """poll() returned records of `tp` up to next_offset - 1, the last one from last_epoch."""
        part = self.partitions.get(tp)
        if part is not None:
            part.position = next_offset
            if last_epoch >= 0:
                part.last_epoch = last_epoch

    def take_error(self) -> ClientError | None:
        """The first error to raise from poll(); each is raised once and the partition stays stopped."""
        for part in self.partitions.values():
            if part.state is State.FAILED and part.error is not None:
                error, part.error = part.error, None
                return error
        return None

    # -- what the fetcher learns -----------------------------------------------------------------

    def on_leader_epoch(self, tp: TopicPartition, leader_epoch: int) -> bool:
        """Metadata names `leader_epoch` as current; True when the position needs validation now."""
        part = self.partitions.get(tp)
        if part is None or leader_epoch <= part.leader_epoch:
            return False
        if part.state is State.FETCHING and part.last_epoch >= 0:
            self._restart(part, State.AWAIT_VALIDATION)
            part.fetch_offset = part.position
            part.leader_epoch = leader_epoch
            return True
        if part.state is not State.AWAIT_VALIDATION:
            part.leader_epoch = leader_epoch
        return False

    def on_committed(self, tp: TopicPartition, generation: int, committed: OffsetAndMetadata | None) -> None:
        """OffsetFetch answered for the partition: start at the committed offset, else reset.

        The committed leader epoch is the epoch of the record before the offset, so the position
        is validated against the current leader's log before fetching (KIP-320), as after a
        leader change.
        """
        part = self.partitions.get(tp)
        if part is None or part.generation != generation or part.state is not State.AWAIT_COMMITTED:
            return
        if committed is not None:
            self._restart(part, State.FETCHING)
            part.position = part.fetch_offset = committed.offset
            part.last_epoch, part.leader_epoch = committed.leader_epoch, -1
        elif self.auto_offset_reset == NO_RESET:
            self._restart(part, State.FAILED)
            part.error = NoOffsetForPartitionError(tp.topic, tp.partition)
        else:
            self._restart(part, State.AWAIT_RESET)
            part.reset_strategy = self.auto_offset_reset

    def on_reset(self, tp: TopicPartition, generation: int, offset: int, epoch: int, leader_epoch: int) -> None:
        """ListOffsets answered for the reset sent at `generation`."""
        part = self.partitions.get(tp)
        if part is None or part.generation != generation or part.state is not State.AWAIT_RESET:
            return
        self._restart(part, State.FETCHING)
        part.position = part.fetch_offset = offset
        part.last_epoch = epoch
        part.leader_epoch = max(part.leader_epoch, leader_epoch)
        part.reset_strategy = self.auto_offset_reset

    def on_validation(self, tp: TopicPartition, generation: int, end_epoch: int, end_offset: int) -> None:
        """OffsetsForLeaderEpoch answered: the leader's log ends at end_offset for epoch end_epoch."""
        part = self.partitions.get(tp)
        if part is None or part.generation != generation or part.state is not State.AWAIT_VALIDATION:
            return
        if end_offset < 0 or end_offset < part.position:
            self._restart(part, State.FAILED)
            part.error = LogTruncationError(tp.topic, tp.partition, part.position, end_offset, part.last_epoch)
            return
        self._restart(part, State.FETCHING)
        part.fetch_offset = part.position

    def on_out_of_range(self, tp: TopicPartition, generation: int) -> None:
        part = self.partitions.get(tp)
        if part is None or part.generation != generation or part.state is not State.FETCHING:
            return
        if self.auto_offset_reset == NO_RESET:
            self._restart(part, State.FAILED)
            part.error = OffsetOutOfRangeError(tp.topic, tp.partition, part.fetch_offset)
        else:
            self._restart(part, State.AWAIT_RESET)
            part.reset_strategy = self.auto_offset_reset

    def on_fatal(self, tp: TopicPartition, generation: int, error: ClientError) -> None:
        part = self.partitions.get(tp)
        if part is None or part.generation != generation:
            return
        self._restart(part, State.FAILED)
        part.error = error

    def _restart(self, part: PartitionFetchState, state: State) -> None:
        part.state = state
        part.generation += 1
        part.request_in_flight = False
        part.error = None
