"""A replica's duties while it leads one leader epoch.

Appends producers' batches, serves fetches (learning each follower's log end
offset from them), advances the high watermark, answers acks=all producers,
and proposes ISR changes to the controller. Everything lives for one leader
epoch: a new epoch builds a new LeaderRole.
"""

from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from .config import ReplicaConfig
from .epoch_cache import EpochEndOffset
from .errors import ErrorCode
from .invariant import require
from .isr import (
    UNKNOWN_OFFSET,
    CommittedIsr,
    FollowerProgress,
    IsrEvent,
    IsrState,
    PendingExpand,
    PendingShrink,
    Proposal,
    can_join_isr,
    high_watermark_candidate,
    out_of_sync_replicas,
    transition,
)
from .local_log import LocalLog
from .messages import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    DELETE_TO_HIGH_WATERMARK,
    AlterPartitionRequest,
    AlterPartitionResponse,
    CompleteDeleteRecords,
    CompleteProduce,
    DeleteRecordsRequest,
    FetchPlan,
    FetchRequest,
    IsrChanged,
    IsrMember,
    PartitionState,
    ProduceRequest,
    ProposeIsr,
)
from .outbox import Outbox
from .producer_state import CachedBatch
from .truncation import diverging_epoch


def check_acks(acks: int) -> ErrorCode:
    """A produce request's acks must be 0, 1 or all (-1); anything else is refused before its
    records are looked at."""
    return ErrorCode.NONE if acks in (ACKS_NONE, ACKS_LEADER, ACKS_ALL) else ErrorCode.INVALID_REQUIRED_ACKS


def answers_produce(acks: int) -> bool:
    """Whether a CompleteProduce follows a produce request: acks=0 producers wait for nothing,
    and Kafka sends them no response at all."""
    return acks != ACKS_NONE


@dataclass(frozen=True, slots=True)
class _Waiter:
    """An acks=all request waiting for the high watermark to pass its last offset."""

    request_id: Any
    base_offset: int
    last_offset: int
    deadline_ms: int
    first_max_timestamp: int = -1  # a retried batch's, as first appended


@dataclass(frozen=True, slots=True)
class _DeleteWaiter:
    """A DeleteRecords waiting for every ISR member's log to start at `offset` or later."""

    request_id: Any
    offset: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class _LastPlan:
    """A follower's last fetch, the log's version after it was planned, and its plan."""

    request: FetchRequest
    log_version: int
    plan: FetchPlan


class LeaderRole:
    def __init__(
        self,
        broker_id: int,
        state: PartitionState,
        config: ReplicaConfig,
        log: LocalLog,
        outbox: Outbox,
        now_ms: int,
        alive_brokers: frozenset[int] | None = None,
    ) -> None:
        require(state.leader == broker_id, "broker %d asked to lead for %d", broker_id, state.leader)
        require(broker_id in state.isr, "leader %d is not in its ISR %s", broker_id, state.isr)
        self.broker_id = broker_id
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        self._config = config
        self._log = log
        self._outbox = outbox
        self._alive_brokers = alive_brokers
        self._isr: IsrState = CommittedIsr(state.isr)
        # ISR members get a full lag time to fetch from their new leader (restarted at the first tick).
        self._progress = {
            replica: FollowerProgress(last_caught_up_time_ms=now_ms if replica in state.isr else 0)
            for replica in state.replicas
            if replica != broker_id
        }
        self._ticked = False
        self._waiters: deque[_Waiter] = deque()
        self._delete_waiters: list[_DeleteWaiter] = []
        self._last_plans: dict[int, _LastPlan] = {}
        self._no_proposal_before_ms = now_ms
        log.start_epoch(state.leader_epoch)
        self.epoch_start_offset = log.log_end_offset
        self._maybe_advance_high_watermark()

    # -- what the ISR is ------------------------------------------------------

    @property
    def isr(self) -> tuple[int, ...]:
        return self._isr.isr

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self._isr.maximal_isr

    @property
    def isr_state(self) -> IsrState:
        return self._isr

    def follower_log_end_offset(self, replica: int) -> int:
        return self._progress[replica].log_end_offset

    @property
    def low_watermark(self) -> int:
        """The lowest log start offset over this leader, its in-sync followers and its followers on live
        brokers, as their fetches last said (-1 until each has fetched): below it, no replica that serves or
        may lead has records left. Kafka's low watermark counts the live brokers' replicas; the in-sync ones
        count here even while their broker is down, since a clean election may make one of them the leader.
        Until this broker has heard which brokers are alive, every follower counts."""
        return min((start for _, start in self._counted_log_starts()), default=self._log.log_start_offset)

    def _counted_log_starts(self) -> list[tuple[int, int]]:
        """Each counted replica and its log start: this leader's first, then the followers'."""
        alive, isr = self._alive_brokers, self._isr.isr
        return [(self.broker_id, self._log.log_start_offset)] + [
            (replica, follower.log_start_offset) for replica, follower in self._progress.items()
            if alive is None or replica in alive or replica in isr]

    def alive_brokers_changed(self, alive_brokers: frozenset[int]) -> None:
        """The cluster's live brokers (UpdateMetadata): a follower out of the ISR whose broker died holds no
        DeleteRecords back, and one that came back holds the next ones until it has fetched."""
        self._alive_brokers = alive_brokers
        self._complete_delete_waiters()

    # -- produce --------------------------------------------------------------

    def produce(self, request: ProduceRequest, now_ms: int) -> None:
        acks = request.acks
        if check_acks(acks) != ErrorCode.NONE:
            self._answer(request, ErrorCode.INVALID_REQUIRED_ACKS)
            return
        if request.record_count <= 0:
            self._answer(request, ErrorCode.CORRUPT_MESSAGE)
            return
        if acks == ACKS_ALL and len(self._isr.isr) < self._config.min_insync_replicas:
            isr = sorted(self._isr.isr)
            self._answer(request, ErrorCode.NOT_ENOUGH_REPLICAS, message=(
                f"the ISR {isr} has fewer replicas than min.insync.replicas={self._config.min_insync_replicas}"))
            return
        if acks == ACKS_ALL and len(self._waiters) >= self._config.produce_waiters_max:
            # Nothing was appended: the producer may retry without duplicating.
            self._answer(request, ErrorCode.REQUEST_TIMED_OUT)
            return
        if request.marker is not None:
            check = self._log.producers.check_marker(request.marker)
        elif request.producer is not None:
            check = self._log.producers.check(request.producer)
        else:
            check = None
        if check is not None and check.duplicate_of is not None:
            self._answer_retry(request, check.duplicate_of, now_ms)
            return
        if check is not None and check.error != ErrorCode.NONE:
            self._answer(request, check.error, message=check.message)
            return
        base_offset = self._log.append_as_leader(request.records, request.record_count, self.leader_epoch,
                                                 request.producer, now_ms, request.marker)
        if acks == ACKS_LEADER:
            self._answer(request, ErrorCode.NONE, base_offset)
        elif acks == ACKS_ALL:
            last_offset = base_offset + request.record_count - 1
            self._waiters.append(_Waiter(request.request_id, base_offset, last_offset, now_ms + request.timeout_ms))
        self._maybe_advance_high_watermark()

    def _answer_retry(self, request: ProduceRequest, original: CachedBatch, now_ms: int) -> None:
        """A retried batch is not appended again: it is answered with the offsets it got the first time,
        once those are committed when it asks for acks=all (Kafka's DUPLICATE_SEQUENCE_NUMBER case)."""
        if request.acks != ACKS_ALL or original.last_offset < self._log.high_watermark:
            self._answer(request, ErrorCode.NONE, original.first_offset, first_max_timestamp=original.max_timestamp)
            return
        waiter = _Waiter(request.request_id, original.first_offset, original.last_offset, now_ms + request.timeout_ms,
                         original.max_timestamp)
        index = len(self._waiters)
        while index > 0 and self._waiters[index - 1].last_offset > original.last_offset:
            index -= 1
        self._waiters.insert(index, waiter)

    def _answer(self, request: ProduceRequest, error: ErrorCode, base_offset: int = -1, message: str = "",
                first_max_timestamp: int = -1) -> None:
        if answers_produce(request.acks):
            self._outbox.complete(CompleteProduce(request.request_id, error, base_offset, message, first_max_timestamp))

    # -- DeleteRecords --------------------------------------------------------

    def delete_records(self, request: DeleteRecordsRequest, now_ms: int) -> None:
        """Move the log start up to the request's offset (the high watermark for -1), then answer once the
        followers on live brokers and in the ISR have too: each learns the leader's log start from its next
        fetch answer."""
        log = self._log
        offset = log.high_watermark if request.offset == DELETE_TO_HIGH_WATERMARK else request.offset
        if not 0 <= offset <= log.high_watermark:
            self._outbox.complete(CompleteDeleteRecords(
                request.request_id, ErrorCode.OFFSET_OUT_OF_RANGE, self.low_watermark,
                f"offset {request.offset} is outside the partition's records: they run from {log.log_start_offset} "
                f"to its high watermark {log.high_watermark} (-1 asks for the high watermark)"))
            return
        log.delete_records_before(offset)
        self._delete_waiters.append(_DeleteWaiter(request.request_id, offset, now_ms + request.timeout_ms))
        self._complete_delete_waiters()

    def _complete_delete_waiters(self) -> None:
        if not self._delete_waiters:
            return
        low = self.low_watermark
        done = [waiter for waiter in self._delete_waiters if waiter.offset <= low]
        if done:
            self._delete_waiters = [waiter for waiter in self._delete_waiters if waiter.offset > low]
            for waiter in done:
                self._outbox.complete(CompleteDeleteRecords(waiter.request_id, ErrorCode.NONE, low))

    def _expire_delete_waiters(self, now_ms: int) -> None:
        expired = [waiter for waiter in self._delete_waiters if waiter.deadline_ms <= now_ms]
        if expired:
            self._delete_waiters = [waiter for waiter in self._delete_waiters if waiter.deadline_ms > now_ms]
            low = self.low_watermark
            for waiter in expired:
                behind = [(replica, start) for replica, start in self._counted_log_starts() if start < waiter.offset]
                named = ", ".join(f"{replica} at {start}" for replica, start in behind)
                unknown = " (-1: not fetched from this leader yet)" if any(start < 0 for _, start in behind) else ""
                self._outbox.complete(CompleteDeleteRecords(
                    waiter.request_id, ErrorCode.REQUEST_TIMED_OUT, low,
                    f"the leader's log starts at {self._log.log_start_offset}, but not yet every live or in-sync "
                    f"replica's: {'broker' if len(behind) == 1 else 'brokers'} {named}{unknown}"))

    # -- fetch ----------------------------------------------------------------

    def fetch(self, request: FetchRequest, now_ms: int) -> FetchPlan:
        log = self._log
        if request.from_follower and request.replica_id not in self._progress:
            return FetchPlan(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if request.from_follower:
            last = self._last_plans.get(request.replica_id)
            if last is not None and last.log_version == log.version and (last.request is request or last.request == request):
                # The same fetch against the same log plans the same (a follower asks many times a
                # second): hear it, which moves no offset, only the follower's clocks.
                self._hear_follower(request, now_ms)
                return last.plan
        diverging = diverging_epoch(
            log.epoch_cache, log.log_end_offset, request.last_fetched_epoch, request.fetch_offset
        )
        if diverging is not None:
            if diverging.undefined:
                return self._plan(ErrorCode.OFFSET_OUT_OF_RANGE, request)
            return self._plan(ErrorCode.NONE, request, diverging=diverging)
        if not log.log_start_offset <= request.fetch_offset <= log.log_end_offset:
            return self._plan(ErrorCode.OFFSET_OUT_OF_RANGE, request)
        if not request.from_follower:  # consumers read committed records only; read_committed ones, decided ones
            end_offset = log.last_stable_offset if request.read_committed else log.high_watermark
            return self._plan(ErrorCode.NONE, request, end_offset=max(end_offset, request.fetch_offset))
        self._record_follower_fetch(request, now_ms)
        plan = self._plan(ErrorCode.NONE, request, end_offset=max(log.log_end_offset, request.fetch_offset))
        self._last_plans[request.replica_id] = _LastPlan(request, log.version, plan)
        return plan

    def _plan(
        self,
        error: ErrorCode,
        request: FetchRequest,
        *,
        diverging: EpochEndOffset | None = None,
        end_offset: int | None = None,
    ) -> FetchPlan:
        log = self._log
        return FetchPlan(
            error=error,
            high_watermark=log.high_watermark,
            last_stable_offset=log.last_stable_offset,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            diverging_epoch=diverging,
            read_offset=request.fetch_offset,
            max_offset=request.fetch_offset if end_offset is None else end_offset,
            max_bytes=request.max_bytes,
            start_moved=request.from_follower and 0 <= request.log_start_offset < log.log_start_offset,
        )

    def _record_follower_fetch(self, request: FetchRequest, now_ms: int) -> None:
        if self._hear_follower(request, now_ms):
            self._maybe_advance_high_watermark()

    def _hear_follower(self, request: FetchRequest, now_ms: int) -> bool:
        """Take the follower's fetch position (False for a fetch from an earlier incarnation)."""
        follower = self._progress[request.replica_id]
        if request.replica_epoch < follower.broker_epoch:
            # A fetch from before the follower restarted, delivered late: what it
            # says about the follower's log may have been lost in the crash.
            return False
        follower.record_fetch(request.fetch_offset, self._log.log_end_offset, now_ms, request.replica_epoch,
                              request.log_start_offset)
        self._maybe_expand_isr(request.replica_id, now_ms)
        self._complete_delete_waiters()
        return True

    def offsets_for_leader_epoch(self, requested_epoch: int) -> EpochEndOffset:
        return self._log.epoch_cache.end_offset_for(requested_epoch, self._log.log_end_offset)

    # -- the high watermark and waiting producers -----------------------------

    def _maybe_advance_high_watermark(self) -> None:
        candidate = high_watermark_candidate(self._log.log_end_offset, self._isr.maximal_isr, self._progress)
        if self._log.advance_high_watermark(candidate):
            self._complete_committed_waiters()

    def _complete_committed_waiters(self) -> None:
        high_watermark = self._log.high_watermark
        if self._waiters and self._waiters[0].last_offset < high_watermark:
            # Waiters were failed when the ISR shrank below min.insync.replicas,
            # so a success here is always a commit by enough replicas.
            require(
                len(self._isr.maximal_isr) >= self._config.min_insync_replicas,
                "acks=all waiters outlived an ISR %s below min.insync.replicas",
                self._isr.maximal_isr,
            )
        while self._waiters and self._waiters[0].last_offset < high_watermark:
            waiter = self._waiters.popleft()
            self._outbox.complete(CompleteProduce(waiter.request_id, ErrorCode.NONE, waiter.base_offset,
                                                  first_max_timestamp=waiter.first_max_timestamp))

    def _fail_waiters(self, error: ErrorCode) -> None:
        while self._waiters:
            self._outbox.complete(CompleteProduce(self._waiters.popleft().request_id, error))

    def _expire_waiters(self, now_ms: int) -> None:
        if not any(waiter.deadline_ms <= now_ms for waiter in self._waiters):
            return
        for waiter in self._waiters:
            if waiter.deadline_ms <= now_ms:
                self._outbox.complete(CompleteProduce(waiter.request_id, ErrorCode.REQUEST_TIMED_OUT))
        self._waiters = deque(waiter for waiter in self._waiters if waiter.deadline_ms > now_ms)

    # -- ISR changes ----------------------------------------------------------

    def _maybe_expand_isr(self, replica: int, now_ms: int) -> None:
        if not isinstance(self._isr, CommittedIsr) or now_ms < self._no_proposal_before_ms:
            return
        if replica in self._isr.isr:
            return
        follower = self._progress[replica]
        if can_join_isr(follower.log_end_offset, self._log.high_watermark, self.epoch_start_offset):
            proposal = self._propose(self._isr.isr + (replica,), now_ms)
            self._isr = transition(
                self._isr, IsrEvent.PROPOSE_EXPAND, PendingExpand(self._isr.isr, replica, proposal)
            )

    def _maybe_shrink_isr(self, now_ms: int) -> None:
        if not isinstance(self._isr, CommittedIsr) or now_ms < self._no_proposal_before_ms:
            return
        lagging = out_of_sync_replicas(
            self._isr.isr, self._progress, self._log.log_end_offset, now_ms, self._config.replica_lag_time_ms_max
        )
        if lagging:
            kept = tuple(replica for replica in self._isr.isr if replica not in lagging)
            proposal = self._propose(kept, now_ms)
            self._isr = transition(self._isr, IsrEvent.PROPOSE_SHRINK, PendingShrink(self._isr.isr, lagging, proposal))

    def _propose(self, new_isr: tuple[int, ...], now_ms: int) -> Proposal:
        members = tuple(
            IsrMember(replica, -1 if replica == self.broker_id else self._progress[replica].broker_epoch)
            for replica in new_isr
        )
        request = AlterPartitionRequest(self.broker_id, self.leader_epoch, self.partition_epoch, members)
        proposal = Proposal(self._outbox.new_id(), request, now_ms)
        self._outbox.send(ProposeIsr(proposal.proposal_id, request))
        return proposal

    def _resend_unanswered_proposal(self, now_ms: int) -> None:
        pending = self._isr
        if isinstance(pending, CommittedIsr):
            return
        proposal = pending.proposal
        if now_ms - proposal.sent_ms >= self._config.alter_partition_retry_ms:
            # The same proposal id: whichever copy is answered first settles it.
            self._outbox.send(ProposeIsr(proposal.proposal_id, proposal.request))
            self._isr = replace(pending, proposal=replace(proposal, sent_ms=now_ms))

    def alter_partition_response(self, proposal_id: int, response: AlterPartitionResponse, now_ms: int) -> None:
        pending = self._isr
        if isinstance(pending, CommittedIsr) or pending.proposal.proposal_id != proposal_id:
            return  # late, duplicated, or superseded by a LeaderAndIsr
        state = response.state
        if (
            response.error == ErrorCode.NONE
            and state is not None
            and state.leader_epoch == self.leader_epoch
            and state.partition_epoch > self.partition_epoch
        ):
            self.partition_epoch = state.partition_epoch
            self._commit_isr(state.isr, IsrEvent.ACCEPTED)
            return
        # Rejected (fenced, stale partition epoch, ineligible replica) or already
        # overtaken: back to the last committed ISR; propose again later, once a
        # LeaderAndIsr has brought the current partition epoch.
        self._isr = transition(pending, IsrEvent.REJECTED, CommittedIsr(pending.isr))
        self._no_proposal_before_ms = now_ms + self._config.alter_partition_retry_ms

    def update_isr(self, state: PartitionState) -> None:
        """A LeaderAndIsr for our epoch with a newer partition epoch (the controller changed the ISR)."""
        require(state.leader == self.broker_id, "ISR update for epoch %d names another leader", state.leader_epoch)
        require(self.broker_id in state.isr, "leader %d is not in its ISR %s", self.broker_id, state.isr)
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        for replica in state.replicas:
            if replica != self.broker_id:
                self._progress.setdefault(replica, FollowerProgress())
        for replica in list(self._progress):
            if replica not in state.replicas:
                del self._progress[replica]
        self._commit_isr(state.isr, IsrEvent.LEADER_AND_ISR)

    def reconfigure(self, config: ReplicaConfig) -> None:
        self._config = config
        if len(self._isr.isr) < config.min_insync_replicas:
            # Raised above the ISR: the acks=all producers waiting now were accepted under the
            # old minimum, and a commit by fewer replicas than the new one is no longer enough.
            self._fail_waiters(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)

    def _commit_isr(self, isr: tuple[int, ...], event: IsrEvent) -> None:
        before = self._isr.isr
        self._isr = transition(self._isr, event, CommittedIsr(isr))
        if isr != before:
            self._outbox.isr_changed(IsrChanged(before, isr))
        if len(isr) < self._config.min_insync_replicas:
            self._fail_waiters(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        self._maybe_advance_high_watermark()
        self._complete_delete_waiters()  # a follower no longer in the ISR (on a dead broker) or assigned holds none

    # -- time and the end of leadership ---------------------------------------

    def tick(self, now_ms: int) -> None:
        if not self._ticked:
            self._restart_lag_clocks(now_ms)
        self._expire_waiters(now_ms)
        self._expire_delete_waiters(now_ms)
        self._resend_unanswered_proposal(now_ms)
        self._maybe_shrink_isr(now_ms)

    def _restart_lag_clocks(self, now_ms: int) -> None:
        """A leader serves no fetch before its broker gets back to its loop, which one LeaderAndIsr
        opening a thousand partitions can hold for seconds: ISR members that have not fetched
        yet get their full lag time from the first tick, not from when leadership was decided."""
        self._ticked = True
        for replica in self._isr.isr:
            follower = self._progress.get(replica)
            if follower is not None and follower.log_end_offset == UNKNOWN_OFFSET:
                follower.last_caught_up_time_ms = max(follower.last_caught_up_time_ms, now_ms)

    def resign(self, error: ErrorCode) -> None:
        """Leadership ends: every waiting producer and DeleteRecords learns it now, not at its timeout."""
        self._fail_waiters(error)
        for waiter in self._delete_waiters:
            self._outbox.complete(CompleteDeleteRecords(waiter.request_id, error))
        self._delete_waiters = []
