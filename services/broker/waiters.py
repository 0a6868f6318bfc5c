"""What waits on the broker's loop for a partition: acks=all producers, DeleteRecords, and long-polling fetches.

A producer's request waits for the CompleteProduce its partition's core sends
(never for acks=0: the core says whether one follows), a DeleteRecords for its
CompleteDeleteRecords. A fetch with nothing to
answer waits until one of the partitions it reads moves (an append, a high
watermark, a role) or its max wait passes: never a sleep loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Generic, TypeVar

import prometheus_client

from replog.broker import metrics
from replog.core.topic_partition import TopicPartition

Answer = TypeVar("Answer")


class AnswerWaiters(Generic[Answer]):
    """Requests waiting for their partition's core to answer them, by request id: acks=1 and acks=all
    produce requests (CompleteProduce), or DeleteRecords (CompleteDeleteRecords)."""

    def __init__(self, size: prometheus_client.Gauge) -> None:
        self._waiting: dict[int, asyncio.Future[Answer]] = {}
        self._last_id = 0
        size.set_function(lambda: len(self._waiting))  # read when scraped

    def __len__(self) -> int:
        return len(self._waiting)

    def new_request_id(self) -> int:
        self._last_id += 1
        return self._last_id

    def wait(self, request_id: int) -> asyncio.Future[Answer]:
        waiter: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiter
        return waiter

    def forget(self, request_id: int) -> None:
        """The core said no answer will come (acks=0)."""
        self._waiting.pop(request_id, None)

    def complete(self, completion: Answer) -> None:
        waiter = self._waiting.pop(completion.request_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(completion)


class FetchWaiters:
    """Long-polling fetches, by the partitions they read."""

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, set[asyncio.Future[None]]] = {}

    def wake(self, key: TopicPartition) -> None:
        for waiter in self._by_partition.get(key, ()):
            _wake(waiter)

    async def wait(self, keys: Iterable[TopicPartition], timeout_s: float) -> None:
        """Wait until one of these partitions moves, or `timeout_s` passes."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        keys = tuple(keys)
        for key in keys:
            self._by_partition.setdefault(key, set()).add(waiter)
        timer = loop.call_later(timeout_s, _wake, waiter)
        metrics.FETCH_PURGATORY.inc()
        try:
            await waiter
        finally:
            metrics.FETCH_PURGATORY.dec()
            timer.cancel()
            for key in keys:
                waiting = self._by_partition.get(key)
                if waiting is not None:
                    waiting.discard(waiter)
                    if not waiting:
                        del self._by_partition[key]


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
