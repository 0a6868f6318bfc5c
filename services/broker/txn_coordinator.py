"""The transaction coordinators this broker runs: one per partition of `__transaction_state` it leads.

The shards' loading, leadership and writes are `CoordinatorShards'`; the rules
are the core's (`replog.core.txn.coordinator`). For every operation, in this
order: the core decides and applies; its records are handed to the partition
(acks=all) in the same step; once they are committed the core hears of it
(`written`), its markers go out (`MarkerSender`) and the answer is given: a
marker never goes out for a decision that is not committed. Until the core has
heard, the transactional id's requests are answered CONCURRENT_TRANSACTIONS,
so its decisions reach the log in the order they were made. A failed write
takes the ids concerned back to their last records written, and a transaction
that was completing sends its markers again after a backoff, then COMPLETE_*.
Each partition's answer to a marker goes back to the core (`marker_written`),
which writes COMPLETE_* once every partition has its marker. A shard that
takes over sends the markers of every transaction it finds in PREPARE_* once
the high watermark covers what it replayed. The tick aborts transactions past
their transaction.timeout.ms and forgets idle transactional ids.

An AddPartitionsToTxn the core holds (it came while the producer's last
transaction completed, or while another add of the id was being written: a
partition leader's, on transactions v2) waits for the write of the records
that decide it (`AddAnswered`), and is answered with that write's outcome, or
at once when its partitions were in the transaction already; after
ADD_HOLD_MS undecided, it is taken back and answered CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from replog.broker import metrics
from replog.broker.coordinator_shards import (
    CoordinatorError,
    CoordinatorShards,
    Shard,
    ShardState,
    Submitted,
    coordinator_error,
)
from replog.broker.partitions import Partitions
from replog.broker.producer_ids import ProducerIdManager
from replog.broker.replicas import wall_ms
from replog.broker.txn_markers import MarkerItem, MarkerSender, backoff_s
from replog.broker.txn_settings import TxnTimers
from replog.core.errors import ErrorCode
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.core.txn import records as txn_records
from replog.core.txn.coordinator import ADD_HOLD_MS, TransactionCoordinator
from replog.core.txn.placement import TRANSACTION_STATE_TOPIC
from replog.core.txn.requests import (
    AddAnswered,
    AddHeld,
    AddPartitionsResponse,
    CoordinatorFenced,
    Event,
    ProducerFenced,
    Result,
    TransactionCompleted,
    TransactionTimedOut,
    TxnConfig,
)
from replog.core.txn.state import TxnState
from replog.protocol.batch import DecodedBatch
from replog.rpc import logs

log = logging.getLogger("replog.broker")

T = TypeVar("T")

TICK_INTERVAL_S = 0.25
# After ADD_HOLD_MS, how often a held add whose records are being written is looked at again.
HELD_WRITE_CHECK_S = 0.05
# Kafka appends to __transaction_state with request.timeout.ms.
WRITE_TIMEOUT_MS = 30_000
# Errors a partition leader answers a marker with that say it is there; the rest are retried and logged.
_QUIET_MARKER_ANSWERS = frozenset({ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_EPOCH})
# States no transactional id stays in: the fence is passed through in memory, DEAD is a tombstone.
_NEVER_HELD = (TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD)


class TransactionCoordinators(CoordinatorShards[TransactionCoordinator]):
    topic = TRANSACTION_STATE_TOPIC
    kind = "transactional id"
    # A failed write takes its transactional ids back to their last records written, in the core.
    reload_after_refused_write = False

    def __init__(self, partitions: Partitions, config: TxnConfig, timers: TxnTimers, producer_ids: ProducerIdManager,
                 markers: MarkerSender) -> None:
        super().__init__(partitions, WRITE_TIMEOUT_MS, TICK_INTERVAL_S)
        self.config = config
        self._timers = timers
        self.producer_ids = producer_ids
        self._markers = markers
        markers.answered = self._marker_answered
        self._last_abort_check = time.monotonic()
        self._last_expiry_check = time.monotonic()
        self._markers_since: dict[str, float] = {}  # transactional id -> when its markers first went out
        # transactional id -> (partitions, answer) of each of its held adds
        self._held: dict[str, list[tuple[frozenset[TopicPartition], asyncio.Future]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- CoordinatorShards ------------------------------------------------------------------------

    def new_core(self, driver: PartitionDriver) -> TransactionCoordinator:
        return TransactionCoordinator(self.config, self.producer_ids, driver.replica.leader_epoch)

    def replay_batch(self, shard: Shard[TransactionCoordinator], batch: DecodedBatch) -> int:
        applied = 0
        for record in batch.records:
            if record.key is None:
                continue
            try:
                shard.core.replay(txn_records.decode(record.key, record.value))
            except txn_records.RecordError as error:
                log.error("%s: skipping a record that is not a transaction record: %s", shard.driver.name, error)
                continue
            applied += 1
        return applied

    def loaded(self, shard: Shard[TransactionCoordinator]) -> None:
        result = shard.core.loaded(wall_ms())
        pending = sum(len(m.partitions) for m in result.markers)
        if pending:
            log.info("%s: transaction coordinator resends %d markers of %d ending transactions", shard.driver.name,
                     pending, len(result.markers))
        self._carry_out(shard, result)

    def describe(self, shard: Shard[TransactionCoordinator]) -> str:
        return f"{len(shard.core.transactions())} transactional ids"

    async def stop(self) -> None:
        await super().stop()
        await self._markers.stop()
        for task in list(self._tasks):
            task.cancel()

    # -- operations -------------------------------------------------------------------------------

    async def run(self, transactional_id: str, operation: Callable[[TransactionCoordinator], Result[T]]) -> T:
        """Run an operation on the transactional id's shard; answer once its records are committed (its
        markers are on their way by then)."""
        shard = self.shard_of(transactional_id)
        result = operation(shard.core)
        error = await self._finish(shard, result, self._start(shard, result))
        if error != ErrorCode.NONE:
            raise CoordinatorError(*coordinator_error(error, self.kind))
        if isinstance(result.response, AddHeld):
            return await self._held_answer(shard, transactional_id, result.response.partitions)
        return result.response

    async def _held_answer(self, shard: Shard[TransactionCoordinator], transactional_id: str,
                           partitions: frozenset[TopicPartition]) -> AddPartitionsResponse:
        """The answer of an add the core holds: the outcome of the write that decides it, or, when it is still
        undecided after ADD_HOLD_MS, CONCURRENT_TRANSACTIONS (it is taken back), as Kafka answers at once."""
        answer: asyncio.Future[AddPartitionsResponse] = asyncio.get_running_loop().create_future()
        entry = (partitions, answer)
        self._held.setdefault(transactional_id, []).append(entry)
        started = time.monotonic()
        wait_s = ADD_HOLD_MS / 1000
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(answer), wait_s)
                except TimeoutError:
                    pass
                if not self.is_current(shard):
                    raise CoordinatorError(*coordinator_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, self.kind))
                if shard.core.release_held(transactional_id, partitions):
                    log.info("transactional id %r: AddPartitionsToTxn held %d ms while the last transaction completed "
                             "(or another change of it was written); answered CONCURRENT_TRANSACTIONS",
                             transactional_id, ADD_HOLD_MS,
                             extra=logs.fields("txn_add_released", transactional_id=transactional_id))
                    return AddPartitionsResponse(ErrorCode.CONCURRENT_TRANSACTIONS,
                                                 f"{transactional_id!r} is still completing its last transaction; retry")
                wait_s = HELD_WRITE_CHECK_S  # decided, and its records are being written: their answer decides
        except asyncio.CancelledError:
            # The client went away (its deadline passed, or it died): nobody will take the transaction it
            # would have started, unless it is already being written.
            if self.is_current(shard):
                shard.core.release_held(transactional_id, partitions)
            raise
        finally:
            metrics.TXN_ADD_HELD.observe(time.monotonic() - started)
            waiting = self._held.get(transactional_id, [])
            if entry in waiting:
                waiting.remove(entry)
            if not waiting:
                self._held.pop(transactional_id, None)

    def _answer_held(self, result: Result) -> None:
        """Answer the held adds a result decided, once its records are written: every add of the id whose
        partitions the decision put in the transaction (one held after the decision too). A refused write
        leaves them to the core, which holds them again or lets them go, and to `_held_answer`'s next look."""
        for event in result.events:
            if isinstance(event, AddAnswered):
                for partitions, answer in self._held.get(event.transactional_id, []):
                    response = event.answer_for(partitions)
                    if response is not None and not answer.done():
                        answer.set_result(response)

    def read(self, transactional_id: str, query: Callable[[TransactionCoordinator], T]) -> T:
        return query(self.shard_of(transactional_id).core)

    def _carry_out(self, shard: Shard[TransactionCoordinator], result: Result, attempts: int = 0) -> None:
        """A result nobody waits for (a marker's answer, the timer, a load): its records go to the partition
        now, its markers once they are committed."""
        submitted = self._start(shard, result)
        self._spawn(self._finish(shard, result, submitted, attempts))

    def _start(self, shard: Shard[TransactionCoordinator], result: Result) -> list[Submitted]:
        """Hand the result's records to the partition, in the step that decided them."""
        self._log_records(shard, result.records)
        self._report(result.events)
        return self.submit_records(shard, result.records)

    async def _finish(self, shard: Shard[TransactionCoordinator], result: Result, submitted: list[Submitted],
                      attempts: int = 0) -> ErrorCode:
        """Tell the core how each batch went, then send the result's markers: the documented order. What a
        failed write leaves to do (markers again, COMPLETE_* again) follows after a backoff."""
        error = ErrorCode.NONE
        for records, waiter in submitted:
            completion = await waiter
            if completion.error != ErrorCode.NONE:
                error = completion.error if error == ErrorCode.NONE else error
                self.write_failed(shard, completion.error)
                log.warning("%s: transaction records of %s not written (%s); they go back to their last records "
                            "written", shard.driver.name, sorted({r.transactional_id for r in records}),
                            completion.error.name,
                            extra=logs.fields("txn_write_failed", topic=TRANSACTION_STATE_TOPIC,
                                              partition=shard.partition))
            if self.is_current(shard):
                follow = shard.core.written(records, completion.error, wall_ms())
                if follow.records and completion.error == ErrorCode.NONE:
                    self._carry_out(shard, follow)  # held adds, decided now that what they waited for is written
                elif follow.records or follow.markers:
                    self._spawn(self._retry(shard, follow, attempts + 1))
                else:
                    self._answer_held(follow)  # held adds whose partitions were in the transaction already
        if error == ErrorCode.NONE:
            self._answer_held(result)
            if result.markers and self.is_current(shard):
                for marker in result.markers:
                    self._markers_since.setdefault(marker.transactional_id, time.monotonic())
                self._markers.send(shard, result.markers, attempts)
        return error

    async def _retry(self, shard: Shard[TransactionCoordinator], result: Result, attempts: int) -> None:
        if result.records:  # markers wait out their own backoff in the sender
            await asyncio.sleep(backoff_s(attempts))
        if self.is_current(shard):
            await self._finish(shard, result, self._start(shard, result), attempts)

    def _marker_answered(self, item: MarkerItem, error: ErrorCode) -> None:
        shard = item.owner
        if not isinstance(shard, Shard) or not self.is_current(shard) or shard.state is not ShardState.ACTIVE:
            return  # a coordinator that is gone: its successor sends the markers again
        marker = item.marker
        if error not in _QUIET_MARKER_ANSWERS:
            log.info("%s marker for transactional id %r (producer %d epoch %d) on %s: %s; sending again",
                     "COMMIT" if marker.commit else "ABORT", marker.transactional_id, marker.producer_id,
                     marker.producer_epoch, item.partition, error.name,
                     extra=logs.fields("txn_marker_retry", transactional_id=marker.transactional_id,
                                       topic=item.partition.topic, partition=item.partition.partition))
        result = shard.core.marker_written(marker.transactional_id, marker.producer_id, marker.producer_epoch,
                                           item.partition, error, wall_ms())
        if result.records or result.markers or result.events:
            self._carry_out(shard, result, item.attempts + 1)

    def _spawn(self, work) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- time ---------------------------------------------------------------------------------------

    def tick(self) -> None:
        now = time.monotonic()
        abort = now - self._last_abort_check >= self._timers.abort_timed_out_interval_ms / 1000
        expire = now - self._last_expiry_check >= self._timers.remove_expired_interval_ms / 1000
        if abort:
            self._last_abort_check = now
        if expire:
            self._last_expiry_check = now
        for shard in self.active_shards():
            if abort:
                result = shard.core.tick(wall_ms())
                if result.records:
                    self._carry_out(shard, result)
            if expire:
                expired = shard.core.expire_transactional_ids(wall_ms())
                if expired.records:
                    log.info("%s: transactional ids %s expired (transactional.id.expiration.ms)", shard.driver.name,
                             list(expired.response))
                    self._carry_out(shard, expired)
        self._update_gauges()

    # -- logs and metrics ---------------------------------------------------------------------------

    def _log_records(self, shard: Shard[TransactionCoordinator], records) -> None:
        for record in records:
            metadata = record.metadata
            if metadata is None:
                log.info("transactional id %r forgotten", record.transactional_id,
                         extra=logs.fields("txn_state", transactional_id=record.transactional_id))
                continue
            log.info("transactional id %r: %s, producer %d epoch %d, partitions %s (%s)", record.transactional_id,
                     metadata.state.kafka_name, metadata.producer_id, metadata.producer_epoch,
                     "[" + ", ".join(str(p) for p in sorted(metadata.partitions)) + "]", shard.driver.name,
                     extra=logs.fields("txn_state", transactional_id=record.transactional_id,
                                       producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch))

    def _report(self, events: tuple[Event, ...]) -> None:
        for event in events:
            if isinstance(event, TransactionCompleted):
                since = self._markers_since.pop(event.transactional_id, None)
                if since is not None:
                    metrics.TXN_MARKER_LATENCY.observe(time.monotonic() - since)
                log.info("transactional id %r: producer %d %s after %d ms", event.transactional_id, event.producer_id,
                         "committed" if event.commit else "aborted", event.duration_ms,
                         extra=logs.fields("txn_completed", transactional_id=event.transactional_id,
                                           producer_id=event.producer_id))
            elif isinstance(event, ProducerFenced):
                log.info("transactional id %r: producer %d epoch %d fenced by a new instance; its transaction aborts",
                         event.transactional_id, event.producer_id, event.fenced_epoch,
                         extra=logs.fields("txn_producer_fenced", transactional_id=event.transactional_id,
                                           producer_id=event.producer_id, producer_epoch=event.fenced_epoch))
            elif isinstance(event, TransactionTimedOut):
                log.info("transactional id %r: producer %d's transaction passed its %d ms timeout; it aborts",
                         event.transactional_id, event.producer_id, event.timeout_ms,
                         extra=logs.fields("txn_timed_out", transactional_id=event.transactional_id,
                                           producer_id=event.producer_id))
            elif isinstance(event, CoordinatorFenced):
                self._markers_since.pop(event.transactional_id, None)
                log.warning("transactional id %r: %s has markers of a newer coordinator; this one stops sending",
                            event.transactional_id, event.partition,
                            extra=logs.fields("txn_coordinator_fenced", transactional_id=event.transactional_id))

    def _update_gauges(self) -> None:
        counts = dict.fromkeys((s.kafka_name for s in TxnState if s not in _NEVER_HELD), 0)
        for core in self.all_cores():
            for metadata in core.transactions():
                counts[metadata.state.kafka_name] += 1
        for state, count in counts.items():
            metrics.TRANSACTIONS.labels(state).set(count)
