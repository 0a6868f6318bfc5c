"""Run an async job in response to bursts of events without ever missing the last one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class CoalescingJob:
    """`request()` runs the job soon; requests made while it runs earn exactly one more run.

    Watches fire in bursts (several brokers dying at once); one run per burst is
    enough, but a change that lands during a run must not be lost.
    """

    def __init__(self, job: Callable[[], Awaitable[None]]) -> None:
        self._job = job
        self._again = False
        self._task: asyncio.Task[None] | None = None

    def request(self) -> None:
        self._again = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self._again:
            self._again = False
            await self._job()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
