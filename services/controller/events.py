"""Controller events run one at a time, in arrival order (Kafka's ControllerEventManager).

Each event reads and changes the controller's view across several awaits
(ZooKeeper reads and writes); running them one after another is what keeps
that view consistent without locks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from replog.controller.metrics import controller_metrics

log = logging.getLogger("replog.controller")

T = TypeVar("T")

EVENTS_QUEUED_MAX = 1000


class ControllerBusy(Exception):
    """The event queue is full."""


class NotActive(Exception):
    """This controller is not the active one, or stopped being it during the request."""


class EventQueue:
    def __init__(self, capacity: int = EVENTS_QUEUED_MAX) -> None:
        self._queue: asyncio.Queue[tuple[str, Callable[[], Awaitable[Any]], asyncio.Future[Any], float]] = (
            asyncio.Queue(capacity))
        self._worker: asyncio.Task[None] | None = None
        # time.monotonic() when the running event started; None between events.
        self.running_since_s: float | None = None

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._work())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        while not self._queue.empty():
            _, _, future, _ = self._queue.get_nowait()
            future.cancel()
        controller_metrics().event_queue_size.set(0)

    def submit(self, name: str, job: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """Queue a job; the future completes with its result once it ran. Raises ControllerBusy."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait((name, job, future, time.monotonic()))
        except asyncio.QueueFull:
            raise ControllerBusy(f"{self._queue.qsize()} controller events are waiting") from None
        controller_metrics().event_queue_size.set(self._queue.qsize())
        return future

    async def run(self, name: str, job: Callable[[], Awaitable[T]]) -> T:
        return await self.submit(name, job)

    async def _work(self) -> None:
        while True:
            name, job, future, queued_s = await self._queue.get()
            metrics = controller_metrics()
            metrics.event_queue_size.set(self._queue.qsize())
            if future.cancelled():
                continue  # its caller gave up before it started
            self.running_since_s = started_s = time.monotonic()
            metrics.event_queue_time_seconds.observe(started_s - queued_s)
            try:
                result = await job()
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as error:  # handed to whoever waits on the event
                if not future.cancelled():
                    future.set_exception(error)
                else:
                    log.error("controller event %s failed: %r", name, error)
            else:
                if not future.cancelled():
                    future.set_result(result)
            finally:
                metrics.event_queue_processing_time_seconds.observe(time.monotonic() - started_s)
                self.running_since_s = None
