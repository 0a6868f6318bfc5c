"""One partition's replica on one broker, as a state machine without I/O.

In the manner of etcd's RawNode: the driver feeds in requests, answers and
ticks (time is an argument, never read from a clock), then takes a `Ready`
batch of work and carries it out in order — persist (log operations, then
checkpoints), then send messages, then complete producers — before it answers
the request that caused it. Queries that need no I/O (a fetch's plan, a
LeaderAndIsr's error) are returned directly.

The role is one of three states; LeaderAndIsr and StopReplica move between
them, and the role decides which inputs are served:

    role      change (from LeaderAndIsr / StopReplica)   next role
    --------  ------------------------------------------  ---------
    offline   become leader                               leader
    offline   become follower                             follower
    leader    become leader (a newer epoch)               leader
    leader    become follower                             follower
    leader    update ISR (same epoch, newer partition)    leader
    follower  become leader                               leader
    follower  become follower (a newer epoch)             follower
    follower  update ISR (same epoch, newer partition)    follower
    any       stop                                        offline
"""

import enum
from collections.abc import Iterable, Mapping

from .config import ReplicaConfig
from .epoch_cache import UNDEFINED_EPOCH_END_OFFSET, EpochEndOffset, EpochEntry
from .errors import ErrorCode
from .follower import FollowerRole
from .invariant import require
from .leader import LeaderRole, answers_produce
from .local_log import LocalLog
from .messages import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_EPOCH,
    AlterPartitionResponse,
    CompleteDeleteRecords,
    CompleteProduce,
    DeleteRecordsRequest,
    FetchPlan,
    FetchRequest,
    FetchResponse,
    ListedOffset,
    PartitionState,
    ProduceRequest,
    Ready,
)
from .outbox import Outbox
from .producer_state import ProducerAppend, ProducerEntry


class Role(enum.Enum):
    OFFLINE = "offline"
    LEADER = "leader"
    FOLLOWER = "follower"


class Change(enum.Enum):
    BECOME_LEADER = "become leader"
    BECOME_FOLLOWER = "become follower"
    UPDATE_ISR = "update ISR"
    STOP = "stop"


class Input(enum.Enum):
    # Members are singletons compared by identity: hash them by identity too, not by name in
    # Python code, as each fetch of each partition looks its input up in SERVES.
    __hash__ = object.__hash__

    PRODUCE = "produce"
    FETCH = "fetch"
    OFFSETS_FOR_LEADER_EPOCH = "offsets for leader epoch"
    LIST_OFFSETS = "list offsets"
    DELETE_RECORDS = "delete records"
    FETCH_RESPONSE = "fetch response"
    ALTER_PARTITION_RESPONSE = "alter partition response"


# How often silent idempotent producers are looked for (producer.id.expiration.ms is a day by default).
PRODUCER_EXPIRY_CHECK_MS = 1_000

ROLE_TRANSITIONS: Mapping[tuple[Role, Change], Role] = {
    (Role.OFFLINE, Change.BECOME_LEADER): Role.LEADER,
    (Role.OFFLINE, Change.BECOME_FOLLOWER): Role.FOLLOWER,
    (Role.OFFLINE, Change.STOP): Role.OFFLINE,
    (Role.LEADER, Change.BECOME_LEADER): Role.LEADER,
    (Role.LEADER, Change.BECOME_FOLLOWER): Role.FOLLOWER,
    (Role.LEADER, Change.UPDATE_ISR): Role.LEADER,
    (Role.LEADER, Change.STOP): Role.OFFLINE,
    (Role.FOLLOWER, Change.BECOME_LEADER): Role.LEADER,
    (Role.FOLLOWER, Change.BECOME_FOLLOWER): Role.FOLLOWER,
    (Role.FOLLOWER, Change.UPDATE_ISR): Role.FOLLOWER,
    (Role.FOLLOWER, Change.STOP): Role.OFFLINE,
}

# What each role serves. Requests outside its set are answered
# NOT_LEADER_OR_FOLLOWER; answers outside it are dropped (they belong to a
# role this replica no longer has).
SERVES: Mapping[Role, frozenset[Input]] = {
    Role.LEADER: frozenset(
        {Input.PRODUCE, Input.FETCH, Input.OFFSETS_FOR_LEADER_EPOCH, Input.LIST_OFFSETS, Input.DELETE_RECORDS,
         Input.ALTER_PARTITION_RESPONSE}
    ),
    Role.FOLLOWER: frozenset({Input.FETCH_RESPONSE}),
    Role.OFFLINE: frozenset(),
}


def check_leader_epoch(requested_epoch: int, current_epoch: int) -> ErrorCode:
    """KIP-320's fencing: an older epoch is fenced, a newer one not known here yet."""
    if requested_epoch == NO_EPOCH or requested_epoch == current_epoch:
        return ErrorCode.NONE
    if requested_epoch < current_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


class PartitionReplica:
    def __init__(
        self,
        broker_id: int,
        config: ReplicaConfig | None = None,
        *,
        log_start_offset: int = 0,
        log_end_offset: int = 0,
        epoch_entries: Iterable[EpochEntry] = (),
        high_watermark: int = 0,
        now_ms: int = 0,
        producer_entries: Iterable[ProducerEntry] = (),
    ) -> None:
        """A replica starts offline, from what its log, epoch checkpoint and HW checkpoint say, and
        the idempotent producers its log holds batches of."""
        self.broker_id = broker_id
        self.config = config or ReplicaConfig()
        self._outbox = Outbox()
        self._log = LocalLog(
            self._outbox,
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            epoch_entries=epoch_entries,
            high_watermark=high_watermark,
            producer_entries=producer_entries,
            verify_transactions=bool(self.config.transaction_partition_verification_enable),
        )
        self._role: Role = Role.OFFLINE
        self._leader: LeaderRole | None = None
        self._follower: FollowerRole | None = None
        # A restarted replica knows at least the epochs its own log has seen.
        self._leader_epoch = self._log.latest_epoch
        self._partition_epoch = -1
        self._now_ms = now_ms
        self._producers_expired_ms = now_ms
        # The live brokers as UpdateMetadata last named them (None until it has): a leader's low watermark
        # counts the followers on them.
        self._alive_brokers: frozenset[int] | None = None

    # -- what the replica is --------------------------------------------------

    @property
    def role(self) -> Role:
        return self._role

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @property
    def now_ms(self) -> int:
        """The latest time an input brought; the replica's clock never goes back."""
        return self._now_ms

    @property
    def partition_epoch(self) -> int:
        return self._partition_epoch

    @property
    def leader_id(self) -> int | None:
        if self._leader is not None:
            return self.broker_id
        if self._follower is not None:
            return self._follower.leader_id
        return None

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR as this replica knows it."""
        if self._leader is not None:
            return self._leader.isr
        if self._follower is not None:
            return self._follower.isr
        return ()

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self._leader.maximal_isr if self._leader is not None else self.isr

    @property
    def leadership(self) -> LeaderRole | None:
        return self._leader

    @property
    def high_watermark(self) -> int:
        return self._log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def epoch_entries(self) -> tuple[EpochEntry, ...]:
        return self._log.epoch_entries

    @property
    def producers(self) -> tuple[ProducerEntry, ...]:
        """The idempotent producers this replica knows, for snapshots and for describing them."""
        return self._log.producers.entries()

    @property
    def producer_count(self) -> int:
        return len(self._log.producers)

    def producer(self, producer_id: int) -> ProducerEntry | None:
        """What this replica knows of one producer: its epoch and last sequences (a coordinator writing its own
        transactional batches numbers them from it)."""
        return self._log.producers.get(producer_id)

    def needs_verification(self, append: ProducerAppend) -> bool:
        """Whether a transactional batch must wait for the coordinator's word before it is appended
        (KIP-890): the first one of the producer's transaction here."""
        return self._log.producers.needs_verification(append)

    def verified(self, append: ProducerAppend, now_ms: int) -> None:
        """The coordinator said this partition is in the producer's ongoing transaction."""
        self._log.producers.verified(append.producer_id, append.producer_epoch, now_ms)

    @property
    def last_stable_offset(self) -> int:
        return self._log.last_stable_offset

    @property
    def open_transactions(self) -> tuple[tuple[int, int], ...]:
        """(producer id, first offset) of each transaction open here, oldest first."""
        return self._log.producers.open_transactions()

    @property
    def under_replicated(self) -> bool:
        return self._leader is not None and len(self._leader.isr) < len(self._leader.replicas)

    @property
    def under_min_isr(self) -> bool:
        return self._leader is not None and len(self._leader.isr) < self.config.min_insync_replicas

    def _serves(self, what: Input) -> bool:
        return what in SERVES[self._role]

    def _advance_clock(self, now_ms: int) -> None:
        require(now_ms >= self._now_ms, "time went backwards: %d after %d", now_ms, self._now_ms)
        self._now_ms = now_ms

    # -- from the controller --------------------------------------------------

    def handle_leader_and_isr(self, state: PartitionState, now_ms: int) -> ErrorCode:
        """Apply one partition's LeaderAndIsr. The controller (or broker) epoch is the driver's to check."""
        self._advance_clock(now_ms)
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if state.leader_epoch < self._leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if self._role is not Role.OFFLINE and state.leader_epoch == self._leader_epoch:
            if state.partition_epoch <= self._partition_epoch:
                return ErrorCode.NONE  # already applied: a resend or a duplicate
            change = Change.UPDATE_ISR
        elif state.leader == self.broker_id:
            change = Change.BECOME_LEADER
        else:
            change = Change.BECOME_FOLLOWER
        self._change(change, state, now_ms)
        return ErrorCode.NONE

    def stop(self, now_ms: int, error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> None:
        """StopReplica, or a failed log: waiting producers get `error` (KAFKA_STORAGE_ERROR for a disk)."""
        self._advance_clock(now_ms)
        if self._leader is not None:
            self._leader.resign(error)
        self._change(Change.STOP, None, now_ms)

    def _change(self, change: Change, state: PartitionState | None, now_ms: int) -> None:
        next_role = ROLE_TRANSITIONS.get((self._role, change))
        require(next_role is not None, "no transition from %s on %s", self._role.value, change.value)
        if state is not None and change is Change.UPDATE_ISR:
            role = self._leader if self._leader is not None else self._follower
            role.update_isr(state)
            self._partition_epoch = state.partition_epoch
            return
        if self._leader is not None:
            self._leader.resign(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._leader = self._follower = None
        if state is not None:
            self._leader_epoch = state.leader_epoch
            self._partition_epoch = state.partition_epoch
            if next_role is Role.LEADER:
                self._leader = LeaderRole(self.broker_id, state, self.config, self._log, self._outbox, now_ms,
                                          self._alive_brokers)
            elif next_role is Role.FOLLOWER:
                self._follower = FollowerRole(self.broker_id, state, self.config, self._log, self._outbox, now_ms)
        self._role = next_role

    def handle_alter_partition_response(self, proposal_id: int, response: AlterPartitionResponse, now_ms: int) -> None:
        self._advance_clock(now_ms)
        if self._serves(Input.ALTER_PARTITION_RESPONSE):
            self._leader.alter_partition_response(proposal_id, response, now_ms)
            self._partition_epoch = self._leader.partition_epoch

    def reconfigure(self, config: ReplicaConfig) -> None:
        """A topic's config changed (min.insync.replicas): it rules from the next request on."""
        self.config = config
        if self._leader is not None:
            self._leader.reconfigure(config)
        if self._follower is not None:
            self._follower.reconfigure(config)

    # -- from clients and other brokers ---------------------------------------

    def _request_error(self, current_leader_epoch: int, what: Input) -> ErrorCode:
        # The epoch check comes first (Kafka's order): a fetcher that is ahead of
        # us learns to wait, one that is behind learns to refresh its metadata.
        if self._role is not Role.OFFLINE and current_leader_epoch != self._leader_epoch:
            error = check_leader_epoch(current_leader_epoch, self._leader_epoch)
            if error != ErrorCode.NONE:
                return error
        return ErrorCode.NONE if self._serves(what) else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def handle_produce(self, request: ProduceRequest, now_ms: int) -> bool:
        """Append as leader; the answer comes as a CompleteProduce in a Ready. Returns whether
        one will come: never for acks=0 (answers_produce)."""
        self._advance_clock(now_ms)
        error = self._request_error(request.current_leader_epoch, Input.PRODUCE)
        if error != ErrorCode.NONE:
            if answers_produce(request.acks):
                self._outbox.complete(CompleteProduce(request.request_id, error))
        else:
            self._leader.produce(request, now_ms)
        return answers_produce(request.acks)

    def handle_delete_records(self, request: DeleteRecordsRequest, now_ms: int) -> None:
        """DeleteRecords, the leader's: the answer comes as a CompleteDeleteRecords in a Ready."""
        self._advance_clock(now_ms)
        error = self._request_error(request.current_leader_epoch, Input.DELETE_RECORDS)
        if error != ErrorCode.NONE:
            self._outbox.complete(CompleteDeleteRecords(request.request_id, error))
        else:
            self._leader.delete_records(request, now_ms)

    @property
    def low_watermark(self) -> int:
        """The lowest log start offset over the replicas in sync or on live brokers, as the leader knows it; -1
        elsewhere."""
        return self._leader.low_watermark if self._leader is not None else -1

    @property
    def alive_brokers(self) -> frozenset[int] | None:
        """The live brokers UpdateMetadata last named; None before it has."""
        return self._alive_brokers

    def handle_alive_brokers(self, alive_brokers: Iterable[int]) -> None:
        """The cluster's live brokers, from the controller's UpdateMetadata: whose log start the low watermark
        waits for."""
        self._alive_brokers = frozenset(alive_brokers)
        if self._leader is not None:
            self._leader.alive_brokers_changed(self._alive_brokers)

    def handle_fetch(self, request: FetchRequest, now_ms: int) -> FetchPlan:
        """Decide how to answer a fetch; a follower's fetch also tells the leader its log end offset."""
        self._advance_clock(now_ms)
        error = self._request_error(request.current_leader_epoch, Input.FETCH)
        if error != ErrorCode.NONE:
            return FetchPlan(error)
        return self._leader.fetch(request, now_ms)

    def handle_offsets_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[ErrorCode, EpochEndOffset]:
        error = self._request_error(current_leader_epoch, Input.OFFSETS_FOR_LEADER_EPOCH)
        if error != ErrorCode.NONE:
            return error, UNDEFINED_EPOCH_END_OFFSET
        return ErrorCode.NONE, self._leader.offsets_for_leader_epoch(leader_epoch)

    def handle_list_offsets(
        self, current_leader_epoch: int, timestamp_ms: int, found: tuple[int, int] | None = None,
        *, read_committed: bool = False,
    ) -> ListedOffset:
        """ListOffsets, the leader's to answer under the same epoch fencing as a fetch:
        EARLIEST_TIMESTAMP is the log start offset, LATEST_TIMESTAMP the high watermark (what a
        consumer may read; the last stable offset for a read_committed one), and a timestamp the first record at or after it, `found` by the
        log as (offset, timestamp), when that record is committed (below the high watermark)."""
        error = self._request_error(current_leader_epoch, Input.LIST_OFFSETS)
        if error != ErrorCode.NONE:
            return ListedOffset(error)
        if timestamp_ms == EARLIEST_TIMESTAMP:
            return ListedOffset(ErrorCode.NONE, self.log_start_offset, leader_epoch=self._leader_epoch)
        if timestamp_ms == LATEST_TIMESTAMP:
            latest = self._log.last_stable_offset if read_committed else self.high_watermark
            return ListedOffset(ErrorCode.NONE, latest, leader_epoch=self._leader_epoch)
        if found is not None and found[0] < self.high_watermark:
            return ListedOffset(ErrorCode.NONE, found[0], found[1], self._leader_epoch)
        return ListedOffset(ErrorCode.NONE, leader_epoch=self._leader_epoch)

    def handle_fetch_response(self, fetch_id: int, response: FetchResponse, now_ms: int) -> None:
        self._advance_clock(now_ms)
        if self._serves(Input.FETCH_RESPONSE):
            self._follower.fetch_response(fetch_id, response, now_ms)

    def handle_fetch_failure(self, fetch_id: int, now_ms: int) -> None:
        self._advance_clock(now_ms)
        if self._serves(Input.FETCH_RESPONSE):
            self._follower.fetch_failed(fetch_id, now_ms)

    # -- from the log and the clock -------------------------------------------

    def advance_log_start_offset(self, offset: int) -> None:
        """Retention removed the log before `offset`."""
        self._log.advance_log_start_offset(offset)

    def restore_producers(self, entries: Iterable[ProducerEntry], log_end_offset: int) -> None:
        """After a truncation, the idempotent producers and open transactions as the log holds them up to
        `log_end_offset` (its end): what the driver rebuilt from the newest producer snapshot at or below it
        and the batches and markers after that."""
        self._log.restore_producers(entries, log_end_offset)

    def tick(self, now_ms: int) -> None:
        """Expire waiting producers and silent idempotent ones, shrink the ISR, retry proposals and fetches."""
        self._advance_clock(now_ms)
        if now_ms - self._producers_expired_ms >= PRODUCER_EXPIRY_CHECK_MS:
            self._log.producers.expire(now_ms, self.config.producer_id_expiration_ms)
            self._producers_expired_ms = now_ms
        if self._leader is not None:
            self._leader.tick(now_ms)
        elif self._follower is not None:
            self._follower.tick(now_ms)

    # -- the work for the driver ----------------------------------------------

    def has_ready(self) -> bool:
        return not self._outbox.empty

    def ready(self) -> Ready:
        """Take the work decided so far; apply it in the order Ready documents."""
        return self._outbox.take(lambda: self._log.epoch_entries, self._log.high_watermark)
