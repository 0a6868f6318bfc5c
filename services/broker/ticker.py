"""The broker's periodic duties on its loop: tick every partition, and now and then refresh the
gauges, checkpoint the offsets and clean the logs.

Each duty runs at its own interval from one 50 ms timer; none of them sleeps
or blocks the loop (checkpoint files are written in a thread).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

TICK_INTERVAL_S = 0.05


@dataclass
class Duty:
    """Something done every `interval_s`; `ready` may hold it back (a checkpoint still being written)."""

    interval_s: float
    run: Callable[[], None]
    ready: Callable[[], bool] = lambda: True
    last_s: float = 0.0


class Ticker:
    def __init__(self, tick: Callable[[], None], duties: list[Duty]) -> None:
        self._tick = tick
        self._duties = duties
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        started = time.monotonic()
        for duty in self._duties:
            duty.last_s = started
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_S)
            self._tick()
            now_s = time.monotonic()
            for duty in self._duties:
                if now_s - duty.last_s >= duty.interval_s and duty.ready():
                    duty.run()
                    duty.last_s = now_s
