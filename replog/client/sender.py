"""The producer's I/O side: drain ready batches into one request per leader, settle the answers.

Runs on the producer's I/O loop. Each pass asks the accumulator which leaders
have a batch to send, drains them (the head batch of each of a leader's
partitions, at most max_in_flight_requests_per_connection requests per
leader), encodes each batch once, and sends. An answer completes, retries
(after a backoff, maybe a metadata refresh) or fails each batch.

Requests go on one ProduceStream per leader, kept open: the broker appends a
stream's requests in the order they were written, as Kafka does a
connection's, and a stream message costs a fraction of a call.

An idempotent producer first gets a producer id (InitProducerId, from any
broker) and stamps it on every batch with the batch's sequence numbers. A
batch refused as out of order while an earlier one of its partition is being
retried is retried behind it; a batch that fails for good leaves a gap in its
partition's numbering, so the producer takes a new id and numbers from 0
again (the records before the failure stay written, once each).

A transactional producer's id and epoch come from its TransactionManager
(init_transactions() and every transaction's end). Its batches leave only once
their partition is in the transaction, marked transactional and with the
transactional id on the request (and, on transaction version 2, the version:
the leader adds the partition then); a batch that fails for good makes the
transaction abortable (or, fenced, the producer unusable) rather than taking a
new id, and while the transaction is given up its unsent batches fail.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

import grpc

from replog.api.broker.v1 import broker_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.client.accumulator import ProducerBatch, RecordAccumulator
from replog.client.broker_requests import partition_results, produce_request
from replog.client.cluster import ClusterMetadata
from replog.client.configs import ProducerConfig
from replog.client.errors import ClientError, ProduceError, ProducerClosedError
from replog.client.io import Channels
from replog.client.metadata import MetadataManager
from replog.client.retry import Action, backoff_ms, error_code_for_status, produce_action
from replog.client.transactions import TransactionManager
from replog.core.errors import ErrorCode
from replog.core.producer_state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE
from replog.rpc.request_stream import StreamError

log = logging.getLogger("replog.client")

SENDER_IDLE_WAIT_MS = 250  # how often an idle sender looks for expired batches and stale metadata
DEADLINE_MARGIN_MS = 2_000  # the gRPC deadline exceeds the broker's timeout_ms, so the broker's answer wins
UNSPECIFIED_ERROR = 0  # ERROR_CODE_UNSPECIFIED on the wire


class Sender:
    """The I/O thread's loop: drain ready batches into requests, handle their answers."""

    def __init__(
        self, config: ProducerConfig, accumulator: RecordAccumulator, metadata: MetadataManager, channels: Channels,
    ) -> None:
        self._config = config
        self._accumulator = accumulator
        self._metadata = metadata
        self._channels = channels
        self._in_flight: dict[int, int] = {}
        self._requests: set[asyncio.Task[None]] = set()
        self._wake: asyncio.Event | None = None
        self._rng = random.Random()
        self._producer_id = NO_PRODUCER_ID
        self._producer_epoch = NO_PRODUCER_EPOCH
        self._id_attempts = 0
        self._id_call: Any = None  # the InitProducerId in flight, which abort() cancels
        self._aborting = False
        self._txn: TransactionManager | None = None
        metadata.on_update(lambda _metadata: self.wakeup())

    def transact(self, transactions: TransactionManager) -> None:
        """Write for a transactional producer: its batches leave once their partition is in the transaction,
        with its producer id and epoch, marked transactional; queued ones fail when it is given up."""
        self._txn = transactions
        self._accumulator.open_to = transactions.added

    def use_producer(self, producer_id: int, producer_epoch: int) -> None:
        """Write with this producer id and epoch from now on, every partition numbered from 0 again."""
        self._producer_id, self._producer_epoch = producer_id, producer_epoch
        self._accumulator.reset_sequences()

    def wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        self._wake = asyncio.Event()
        self._metadata.request_update()
        try:
            await self._send_until_closed()
        except Exception as error:
            # A bug, not a cluster problem: fail every queued record loudly rather than hang.
            log.exception("the producer's I/O loop failed")
            self._accumulator.close()
            for batch in self._accumulator.abort_queued():
                batch.result.set_exception(ClientError(f"the producer's I/O loop failed: {error!r}"))
        if self._requests:
            await asyncio.gather(*self._requests, return_exceptions=True)

    async def _send_until_closed(self) -> None:
        config = self._config
        while True:
            self._wake.clear()
            now_ms = time.monotonic() * 1000
            metadata = self._metadata.current
            txn = self._txn
            if txn is not None:
                if txn.gives_up_queued:
                    for batch in self._accumulator.abort_queued():
                        batch.result.set_exception(txn.given_up(batch.tp, len(batch.rows)))
                txn.maybe_add_partitions()
            needs_id = config.enable_idempotence and self._producer_id == NO_PRODUCER_ID and txn is None
            if needs_id and not self._accumulator.closing_done():
                if not await self._init_producer_id(metadata):
                    self._expire(now_ms)
                    await self._pause(backoff_ms(self._id_attempts, config.retry_backoff_ms, jitter=self._rng.random()))
                    continue
            busy = [leader for leader, count in self._in_flight.items()
                    if count >= config.max_in_flight_requests_per_connection]
            check = self._accumulator.ready(metadata, now_ms, busy)
            if check.unknown_leader_topics or self._metadata.is_stale:
                self._metadata.add_topics(check.unknown_leader_topics)
                self._metadata.request_update()
            if check.leaders:
                drained = self._accumulator.drain(metadata, check.leaders, config.max_request_size, now_ms)
                for leader, batches in drained.items():
                    self._send(leader, metadata, batches, now_ms)
            self._expire(now_ms)
            if self._accumulator.closing_done():
                return
            await self._pause(min(check.next_ready_ms, SENDER_IDLE_WAIT_MS))

    async def _pause(self, wait_ms: float) -> None:
        """Until woken, or wait_ms."""
        if wait_ms > 0:
            try:
                await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
            except TimeoutError:
                pass

    def _expire(self, now_ms: float) -> None:
        config = self._config
        for batch in self._accumulator.expire(now_ms, config.delivery_timeout_ms):
            self._failed(batch, ProduceError(
                batch.tp.topic, batch.tp.partition, ErrorCode.REQUEST_TIMED_OUT,
                f"{len(batch.rows)} records expired: delivery_timeout_ms ({config.delivery_timeout_ms}) "
                "passed before they could be sent",
            ))

    def _failed(self, batch: ProducerBatch, error: ProduceError) -> None:
        """A batch failed for good (its place in the accumulator is already freed)."""
        if self._txn is not None:
            self._txn.batch_failed(error.error_code, error)
        else:
            self._lost_sequences(batch)
        batch.result.set_exception(error)

    async def _init_producer_id(self, metadata: ClusterMetadata) -> bool:
        """Ask a broker for a producer id; False (after logging why) if none was given."""
        self._id_attempts += 1
        if not metadata.brokers:
            self._metadata.request_update()
            return False
        broker_id, address = self._rng.choice(sorted(metadata.brokers.items()))
        self._id_call = self._channels.coordinator(address).InitProducerId(
            coordinator_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
            timeout=self._config.request_timeout_ms / 1000)
        try:
            answer = await self._id_call
        except grpc.aio.AioRpcError as error:
            log.info("no producer id from broker %d at %s: %s", broker_id, address, error.code().name)
            return False
        except asyncio.CancelledError:
            if not self._aborting:
                raise
            return False  # abort() gave up on it, and the loop ends once every batch is done
        finally:
            self._id_call = None
        if answer.error_code != ErrorCode.NONE:
            log.info("no producer id from broker %d: %s %s", broker_id, ErrorCode.of(answer.error_code).name,
                     answer.error_message)
            return False
        self._producer_id, self._producer_epoch, self._id_attempts = answer.producer_id, answer.producer_epoch, 0
        log.info("idempotent producer: producer id %d, epoch %d", self._producer_id, self._producer_epoch)
        return True

    def _lost_sequences(self, batch: ProducerBatch) -> None:
        """A numbered batch failed for good: its partition's numbering has a gap the leader would refuse
        every later batch for, so take a new producer id and number from 0 again."""
        if (self._config.enable_idempotence and batch.base_sequence != NO_SEQUENCE
                and batch.generation == self._accumulator.generation):
            # The caller hears of the failure from the batch's future; this is the producer's own recovery.
            log.info("records for %s failed for good: the producer takes a new producer id, so the leader does "
                     "not refuse the records after them as out of order", batch.tp)
            self._producer_id, self._producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            self._accumulator.reset_sequences()

    async def abort(self) -> None:
        """close() ran out of time: fail what is queued, give up on what is in flight (a producer id asked of a
        broker that does not answer too, or the loop would wait out its request timeout)."""
        self._aborting = True
        if self._id_call is not None:
            self._id_call.cancel()
        for batch in self._accumulator.abort_queued():
            self._fail_closed(batch)
        requests = list(self._requests)
        for request in requests:
            request.cancel()
        await asyncio.gather(*requests, return_exceptions=True)
        self.wakeup()

    def _fail_closed(self, batch: ProducerBatch) -> None:
        batch.result.set_exception(ProducerClosedError(
            f"the producer closed before {len(batch.rows)} records for {batch.tp} were acknowledged"
        ))

    def _send(self, leader: int, metadata: ClusterMetadata, batches: list[ProducerBatch], now_ms: float) -> None:
        config = self._config
        wall_ms = time.time() * 1000
        sendable, encoded = [], []
        for batch in batches:
            try:
                records = batch.encode(config.compression, int(wall_ms - (now_ms - batch.created_ms)),
                                       self._producer_id, self._producer_epoch, self._txn is not None)
            except (TypeError, ValueError) as error:
                # send() checks types, so this is a bug; fail the batch rather than the sender.
                self._accumulator.complete(batch)
                batch.result.set_exception(ProduceError(batch.tp.topic, batch.tp.partition,
                                                        ErrorCode.INVALID_RECORD, f"cannot encode the batch: {error}"))
                continue
            sendable.append(batch)
            encoded.append((batch.tp, records, metadata.leader_epoch_of(batch.tp)))
        if not sendable:
            return
        txn = self._txn
        message = produce_request(config.acks, config.request_timeout_ms, encoded,
                                  None if txn is None else txn.transactional_id,
                                  0 if txn is None else txn.transaction_version)
        self._in_flight[leader] = self._in_flight.get(leader, 0) + 1
        task = asyncio.get_running_loop().create_task(
            self._produce(leader, metadata.brokers[leader], message, sendable)
        )
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _produce(
        self, leader: int, address: str, message: broker_pb2.ProduceStreamRequest, batches: list[ProducerBatch]
    ) -> None:
        deadline_s = (self._config.request_timeout_ms + DEADLINE_MARGIN_MS) / 1000
        try:
            answer = await self._channels.broker_stream(address, "ProduceStream").request(message, deadline_s)
        except asyncio.CancelledError:
            for batch in batches:
                self._accumulator.complete(batch)
                self._fail_closed(batch)
            raise
        except StreamError as error:
            code = error_code_for_status(error.code())
            detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
            for batch in batches:
                self._settle(batch, code, detail)
        else:
            self._take_response(answer.response, batches)
        finally:
            self._in_flight[leader] -= 1
            self.wakeup()

    def _take_response(self, response: broker_pb2.ProduceResponse, batches: list[ProducerBatch]) -> None:
        # With acks=0 the leader answers before appending, so it has no outcome to report:
        # only an explicit error counts, an unset error code is no failure.
        acks_none = self._config.acks == 0
        results = partition_results(response)
        for batch in batches:
            result = results.get(batch.tp)
            if result is None:
                self._settle(batch, ErrorCode.UNKNOWN_SERVER_ERROR, "the broker's answer left the partition out")
                continue
            code = ErrorCode.of(result.error_code)
            if code is ErrorCode.NONE or (acks_none and result.error_code == UNSPECIFIED_ERROR):
                batch.appended_at_ms = result.log_append_time_ms
                timestamp_ms = result.log_append_time_ms if result.log_append_time_ms >= 0 else batch.timestamp_ms
                self._accumulator.complete(batch)
                batch.result.set_result((result.base_offset, timestamp_ms))
                continue
            if result.HasField("current_leader"):
                hint = result.current_leader
                self._metadata.set_current(self._metadata.current.with_leader_hint(
                    batch.tp, hint.leader_id, hint.leader_epoch, response.node_endpoints
                ))
            self._settle(batch, code, result.error_message)

    def _settle(self, batch: ProducerBatch, code: ErrorCode, detail: str) -> None:
        """A failed send of `batch`: retry it (after a backoff, maybe a metadata refresh) or fail it."""
        config = self._config
        now_ms = time.monotonic() * 1000
        action = produce_action(code, attempts=batch.attempts, retries=config.retries,
                                age_ms=now_ms - batch.created_ms, delivery_timeout_ms=config.delivery_timeout_ms)
        if (code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self._accumulator.has_earlier(batch)
                and now_ms - batch.created_ms < config.delivery_timeout_ms):
            action = Action.RETRY  # an earlier batch of the partition is coming again: this one follows it
        if action is Action.FAIL:
            self._accumulator.complete(batch)
            self._failed(batch, ProduceError(batch.tp.topic, batch.tp.partition, code, detail))
            return
        log.info("retrying %d records for %s after %s: %s", len(batch.rows), batch.tp, code.name, detail)
        if action is Action.REFRESH_AND_RETRY:
            self._metadata.request_update()
        wait_ms = backoff_ms(batch.attempts, config.retry_backoff_ms, jitter=self._rng.random())
        self._accumulator.requeue(batch, now_ms + wait_ms)
