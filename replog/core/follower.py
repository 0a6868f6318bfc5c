"""A replica's duties while it follows a leader: fetch, truncate where the logs diverge, append.

One fetch is in flight at a time. An answer is taken only if it belongs to
that fetch (by id), so that late, duplicated or reordered answers from the
network change nothing. The high watermark follows the leader's, but never
past our own log end offset and never backwards.
"""

from dataclasses import dataclass

from .config import ReplicaConfig
from .epoch_cache import EpochEndOffset
from .errors import ErrorCode
from .invariant import require
from .local_log import LocalLog
from .messages import NO_LEADER, FetchRequest, FetchResponse, PartitionState, SendFetch
from .outbox import Outbox
from .truncation import truncation_offset


@dataclass(frozen=True, slots=True)
class _InFlight:
    fetch_id: int
    sent_ms: int


class FollowerRole:
    def __init__(
        self,
        broker_id: int,
        state: PartitionState,
        config: ReplicaConfig,
        log: LocalLog,
        outbox: Outbox,
        now_ms: int,
    ) -> None:
        require(state.leader != broker_id, "broker %d asked to follow itself", broker_id)
        self.broker_id = broker_id
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        self.isr = state.isr
        self._config = config
        self._log = log
        self._outbox = outbox
        self._in_flight: _InFlight | None = None
        self._next_fetch_ms = now_ms
        self._maybe_fetch(now_ms)

    def update_isr(self, state: PartitionState) -> None:
        require(state.leader == self.leader_id, "ISR update for epoch %d names another leader", state.leader_epoch)
        self.partition_epoch = state.partition_epoch
        self.replicas = state.replicas
        self.isr = state.isr

    def reconfigure(self, config: ReplicaConfig) -> None:
        self._config = config

    # -- fetching -------------------------------------------------------------

    def _maybe_fetch(self, now_ms: int) -> None:
        if self.leader_id == NO_LEADER or self._in_flight is not None or now_ms < self._next_fetch_ms:
            return
        log = self._log
        request = FetchRequest(
            replica_id=self.broker_id,
            fetch_offset=log.log_end_offset,
            max_bytes=self._config.replica_fetch_bytes_max,
            last_fetched_epoch=log.latest_epoch,
            current_leader_epoch=self.leader_epoch,
            max_wait_ms=self._config.replica_fetch_wait_ms_max,
            log_start_offset=log.log_start_offset,
        )
        fetch_id = self._outbox.new_id()
        self._outbox.send(SendFetch(fetch_id, self.leader_id, request))
        self._in_flight = _InFlight(fetch_id, now_ms)

    def _owns(self, fetch_id: int) -> bool:
        return self._in_flight is not None and self._in_flight.fetch_id == fetch_id

    def fetch_response(self, fetch_id: int, response: FetchResponse, now_ms: int) -> None:
        if not self._owns(fetch_id):
            return
        self._in_flight = None
        if response.error == ErrorCode.NONE and response.diverging_epoch is not None:
            self._truncate_to_leader(response.diverging_epoch)
        elif response.error == ErrorCode.NONE:
            self._append(response, now_ms)
        elif response.error == ErrorCode.OFFSET_OUT_OF_RANGE and self._log.log_end_offset < response.log_start_offset:
            # The leader no longer has what we would fetch next (retention): start over from its log start.
            self._log.truncate_fully_and_start_at(response.log_start_offset)
        else:
            # Fenced (we are behind the controller), unknown epoch (the leader is
            # behind), not leader, and the rest: wait, then ask again.
            self._next_fetch_ms = now_ms + self._config.replica_fetch_backoff_ms
        self._maybe_fetch(now_ms)

    def fetch_failed(self, fetch_id: int, now_ms: int) -> None:
        """The fetch never got an answer (connection lost, deadline passed)."""
        if not self._owns(fetch_id):
            return
        self._in_flight = None
        self._next_fetch_ms = now_ms + self._config.replica_fetch_backoff_ms

    def _truncate_to_leader(self, diverging: EpochEndOffset) -> None:
        log = self._log
        offset = truncation_offset(log.epoch_cache, log.log_end_offset, diverging)
        changed = log.truncate_to(offset)
        # Each answer must shorten the log or the epoch cache; otherwise the next
        # fetch would ask the same question forever.
        require(changed, "diverging epoch %s from leader %d changed nothing", diverging, self.leader_id)

    def _append(self, response: FetchResponse, now_ms: int) -> None:
        log = self._log
        if response.batches:
            log.append_as_follower(response.records, response.batches, self.leader_epoch, now_ms)
        log.advance_high_watermark(min(response.high_watermark, log.log_end_offset))
        # The leader's log start moved (DeleteRecords, retention): ours follows, as far as we have records for.
        log.delete_records_before(min(response.log_start_offset, log.high_watermark))

    def tick(self, now_ms: int) -> None:
        in_flight = self._in_flight
        if in_flight is not None and now_ms - in_flight.sent_ms >= self._config.replica_fetch_timeout_ms:
            self._in_flight = None  # given up; its answer, should it come, is ignored
        self._maybe_fetch(now_ms)
