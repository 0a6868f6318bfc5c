"""A piece of the consumer's work on its I/O loop: a step run whenever it is woken or its wait is over.

The fetcher and the group member are such workers. The requests a step
starts run as tasks of their own and are cancelled when the worker stops. A
step that raises is a bug, not a cluster problem: poll() is made to say so
rather than wait forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from replog.client.errors import ClientError
from replog.client.fetch_buffer import FetchBuffer

log = logging.getLogger("replog.client")


class LoopWorker:
    name = "I/O loop"

    def __init__(self, buffer: FetchBuffer) -> None:
        self._buffer = buffer
        self._lock = buffer.lock
        # asyncio's events bind to the loop that first waits on them: the I/O loop.
        self._wake = asyncio.Event()
        self._stopped = False
        self._tasks: set[asyncio.Task] = set()

    def wakeup(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stopped = True
        self.wakeup()

    def _step(self) -> float:
        """Start what is due; returns how long to wait for a wakeup before the next step, in ms."""
        raise NotImplementedError

    async def run(self) -> None:
        try:
            while not self._stopped:
                self._wake.clear()
                wait_ms = self._step()
                try:
                    await asyncio.wait_for(self._wake.wait(), max(wait_ms, 0) / 1000)
                except TimeoutError:
                    pass
        except Exception as error:
            log.exception("the consumer's %s failed", self.name)
            with self._lock:
                self._buffer.failure = ClientError(f"the consumer's {self.name} failed: {error!r}")
                self._buffer.changed.notify_all()
        finally:
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
