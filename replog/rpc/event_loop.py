"""The event loop a replog service and the client's I/O thread run on: uvloop's where it is installed.

Every message a process sends or receives passes through its loop: grpc.aio hands it over from
its poller thread, and the loop runs the coroutine that reads or writes it. uvloop's loop does that
part of a message's way in C. On the end-to-end bench it took a quarter of a millisecond off the
median and a few tenths off p99 (docs/BENCHMARKS.md, "End-to-end latency"); throughput did not
move. `REPLOG_EVENT_LOOP=asyncio` picks asyncio's own loop (its debug mode, for one), and a
platform without uvloop gets asyncio's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

EVENT_LOOP_ENV = "REPLOG_EVENT_LOOP"
EVENT_LOOPS = ("uvloop", "asyncio")


class EventLoopError(ValueError):
    """REPLOG_EVENT_LOOP names no event loop."""


def loop_factory(env: Mapping[str, str] | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the loops of this process: uvloop's unless the environment asks for asyncio's or
    uvloop is not installed."""
    choice = (os.environ if env is None else env).get(EVENT_LOOP_ENV, "uvloop").strip() or "uvloop"
    if choice not in EVENT_LOOPS:
        raise EventLoopError(f"{EVENT_LOOP_ENV}={choice} is not an event loop; use uvloop or asyncio")
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:
            return asyncio.new_event_loop
        return uvloop.new_event_loop
    return asyncio.new_event_loop


def new_event_loop() -> asyncio.AbstractEventLoop:
    return loop_factory()()


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
