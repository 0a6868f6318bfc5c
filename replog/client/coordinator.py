"""Finding the coordinator of a group or of a transactional id, and calling it, on the client's I/O loop.

Any broker answers FindCoordinator (the first one asked creates
`__consumer_offsets` or `__transaction_state`, and says
COORDINATOR_NOT_AVAILABLE until it exists). The coordinator found is kept
until it answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or stops
answering; then it is looked up again. COORDINATOR_LOAD_IN_PROGRESS (a
coordinator still reading its partition after a failover) is waited out with
a backoff, and so are the other errors a caller names as passing (a
transaction coordinator's CONCURRENT_TRANSACTIONS).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc

from replog.api.coordinator.v1 import coordinator_pb2
from replog.client.coordinator_requests import (
    Outcome,
    commit_results,
    coordinator_found,
    fetched_offsets,
    find_coordinator_request,
    offset_commit_request,
    offset_fetch_request,
)
from replog.client.errors import ClientError, ClientTimeoutError, ClusterUnreachableError, ServerUnsupportedError
from replog.client.io import Channels
from replog.client.metadata import MetadataManager
from replog.client.retry import backoff_ms, error_code_for_status
from replog.client.types import OffsetAndMetadata
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

log = logging.getLogger("replog.client")

Coordinator = tuple[int, str]  # broker id, "host:port"

FIND_AGAIN = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
LOADING = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
ENDING_BACKOFF_MS = 1.0  # the first wait after CONCURRENT_TRANSACTIONS, doubling up to retry_backoff_ms

GROUP = "group"
TRANSACTION = "transactional id"
KEY_TYPES = {GROUP: coordinator_pb2.COORDINATOR_TYPE_GROUP, TRANSACTION: coordinator_pb2.COORDINATOR_TYPE_TRANSACTION}


class Coordinators:
    """The coordinators of the groups (or transactional ids) a client talks to, found on demand."""

    def __init__(self, metadata: MetadataManager, channels: Channels, *, request_timeout_ms: int,
                 retry_backoff_ms: int, key_type: str = GROUP, unreachable_ends: bool = False) -> None:
        """`unreachable_ends`: when no metadata service answers, raise ClusterUnreachableError at once (an
        Admin's way, as its other calls do) rather than ask again until the deadline (a consumer's or a
        producer's, which may start before their cluster)."""
        self._key_type = key_type
        self._unreachable_ends = unreachable_ends
        self._metadata = metadata
        self._channels = channels
        self._request_timeout_s = request_timeout_ms / 1000
        self._retry_backoff_ms = retry_backoff_ms
        self._found: dict[str, Coordinator] = {}
        self._next_broker = 0
        self._rng = random.Random()

    def forget(self, key: str) -> None:
        self._found.pop(key, None)

    async def find(self, key: str, deadline: float) -> Coordinator:
        """The key's coordinator, asking the brokers in turn until one names it or the deadline passes."""
        found = self._found.get(key)
        if found is not None:
            return found
        request = find_coordinator_request(key, KEY_TYPES[self._key_type])
        attempt = 0
        while True:
            problem = await self._ask_a_broker(key, request)
            found = self._found.get(key)
            if found is not None:
                return found
            attempt += 1
            await self._back_off(attempt, deadline, f"no coordinator found for {self._key_type} {key!r}", problem)

    async def _ask_a_broker(self, key: str, request: Any) -> str:
        """One FindCoordinator; remembers the coordinator, or says what went wrong."""
        try:
            metadata = self._metadata.current if self._metadata.current.brokers else await self._metadata.refresh()
        except ClusterUnreachableError as error:
            if self._unreachable_ends:
                raise
            return str(error)
        if not metadata.brokers:
            self._metadata.request_update()
            return "the cluster has no live broker"
        brokers = sorted(metadata.brokers.items())
        broker_id, address = brokers[self._next_broker % len(brokers)]
        try:
            response = await self._channels.coordinator(address).FindCoordinator(
                request, timeout=self._request_timeout_s)
        except grpc.aio.AioRpcError as error:
            self._next_broker += 1
            self._metadata.request_update()
            return _rpc_failure(error, f"broker {broker_id} at {address}")
        (code, message), found = coordinator_found(response, key)
        if found is not None:
            self._found[key] = found
            return ""
        if not code.retriable:
            raise ClientError(f"finding the coordinator of {self._key_type} {key!r} failed with {code.name}"
                              + (f": {message}" if message else ""), code)
        return f"{code.name}: {message}"

    async def call(self, key: str, method: str, request: Any, codes: Callable[[Any], Iterable[ErrorCode]],
                   timeout_s: float, passing: frozenset[ErrorCode] = LOADING) -> tuple[Any, Coordinator]:
        """Send `request` to the key's coordinator until an answer whose `codes` say neither that it moved
        nor anything `passing` (by default: still loading); returns the answer and the coordinator that
        gave it. ClientTimeoutError when timeout_s passes first."""
        deadline = time.monotonic() + timeout_s
        attempt = ending_attempt = 0
        while True:
            coordinator = await self.find(key, deadline)
            call_timeout_s = max(min(self._request_timeout_s, deadline - time.monotonic()), 0.001)
            try:
                response = await getattr(self._channels.coordinator(coordinator[1]), method)(
                    request, timeout=call_timeout_s)
            except grpc.aio.AioRpcError as error:
                self.forget(key)
                problem = _rpc_failure(error, f"the coordinator of {self._key_type} {key!r} (broker {coordinator[0]})")
            else:
                found = set(codes(response))
                if found & FIND_AGAIN:
                    self.forget(key)
                elif not found & passing:
                    return response, coordinator
                problem = f"broker {coordinator[0]} answered {', '.join(sorted(c.name for c in found))}"
                if ErrorCode.CONCURRENT_TRANSACTIONS in found:
                    # The last transaction's markers are going out: a matter of milliseconds, so the
                    # retries start short (Kafka's producer waits 20 ms; here the transaction has
                    # usually ended a millisecond or two after its EndTxn answer, docs/BENCHMARKS.md).
                    ending_attempt += 1
                    await self._back_off(ending_attempt, deadline, f"{method} for {self._key_type} {key!r} did "
                                         "not succeed", problem, ENDING_BACKOFF_MS)
                    continue
            attempt += 1
            await self._back_off(attempt, deadline, f"{method} for {self._key_type} {key!r} did not succeed", problem)

    async def commit_offsets(self, group_id: str, member_id: str, member_epoch: int,
                             offsets: Mapping[TopicPartition, OffsetAndMetadata],
                             timeout_s: float) -> dict[TopicPartition, Outcome]:
        """One OffsetCommit (sent again while the coordinator moves or loads): each partition's outcome."""
        request = offset_commit_request(group_id, member_id, member_epoch, offsets)
        response, _ = await self.call(group_id, "OffsetCommit", request,
                                      lambda r: [code for code, _ in commit_results(r).values()], timeout_s)
        results = commit_results(response)
        missing = (ErrorCode.UNKNOWN_SERVER_ERROR, "the coordinator's answer left the partition out")
        return {tp: results.get(tp, missing) for tp in offsets}

    async def committed_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None,
                                timeout_s: float, require_stable: bool = False
                                ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of these partitions (None: nothing committed), or of every
        partition it committed for. `require_stable` waits (within timeout_s) while an open transaction
        commits one of them, so the answer is never an offset that transaction is replacing (KIP-447)."""
        partitions = None if partitions is None else list(partitions)
        request = offset_fetch_request(group_id, partitions, require_stable)
        passing = LOADING | {ErrorCode.UNSTABLE_OFFSET_COMMIT} if require_stable else LOADING
        response, _ = await self.call(group_id, "OffsetFetch", request, _fetch_codes, timeout_s, passing)
        (code, message), offsets, failed = fetched_offsets(response)
        if code is ErrorCode.NONE and failed:
            tp, (code, message) = next(iter(sorted(failed.items())))
            message = f"{tp}: {message}"
        if code is not ErrorCode.NONE:
            raise ClientError(f"reading the committed offsets of group {group_id!r} failed: {code.name}: {message}",
                              code)
        return offsets if partitions is None else {tp: offsets.get(tp) for tp in partitions}

    async def _back_off(self, attempt: int, deadline: float, what: str, problem: str,
                        base_ms: float | None = None) -> None:
        """Wait before the next attempt: from retry_backoff_ms up, or from `base_ms` up to retry_backoff_ms."""
        jitter = self._rng.random()
        wait_ms = (backoff_ms(attempt, self._retry_backoff_ms, jitter=jitter) if base_ms is None
                   else backoff_ms(attempt, base_ms, jitter=jitter, max_ms=self._retry_backoff_ms))
        wait_s = wait_ms / 1000
        if time.monotonic() + wait_s >= deadline:
            raise ClientTimeoutError(f"{what} in time: {problem}" if problem else f"{what} in time")
        log.debug("%s yet (%s); retrying", what, problem)
        await asyncio.sleep(wait_s)


def _fetch_codes(response: Any) -> list[ErrorCode]:
    (code, _), _offsets, failed = fetched_offsets(response)
    return [code, *(c for c, _ in failed.values())]


def _rpc_failure(error: grpc.aio.AioRpcError, who: str) -> str:
    """A retriable gRPC failure as a sentence; raises for those that retrying will not fix."""
    if error.code() is grpc.StatusCode.UNIMPLEMENTED:
        raise ServerUnsupportedError(f"{who} does not serve this request: {error.details()}") from None
    code = error_code_for_status(error.code())
    detail = f"{who} answered {error.code().name}: {error.details()}"
    if not code.retriable:
        raise ClientError(detail, code) from None
    return detail
