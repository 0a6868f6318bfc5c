"""Request streams answered in order, as Kafka answers the requests of one connection.

A bidirectional stream carries many requests for the price of one call: in
grpc.aio a stream message costs about a third of a unary call's round trip
and half its CPU. `answer_in_order` starts each request as it arrives — in
arrival order, so a leader appends a producer's batches in the order they were
sent — lets later requests start while earlier ones wait, and sends the answers
in request order.

At shutdown `end_streams()` stops every open stream from taking more requests:
each answers what it has started and ends, so that the server's stop does not
wait out its grace period for clients that keep their streams open for good
(followers, consumers, producers). They find the partitions' new leaders, as
after any broken stream. Other streams that stay open (the metadata service's
WatchMetadata) take part through `until_shutdown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

from replog.rpc.request_metrics import REQUEST_DURATION

Request = TypeVar("Request")
Response = TypeVar("Response")

_END = object()  # the client closed its side of the stream, or the server is stopping
_OPEN: set[Callable[[], None]] = set()  # each open stream's way to stop taking requests


def end_streams() -> int:
    """Every open stream answers the requests it started and then ends; returns how many there were."""
    stops = list(_OPEN)
    for stop in stops:
        stop()
    return len(stops)


@contextlib.contextmanager
def until_shutdown(stop: Callable[[], None]) -> Iterator[None]:
    """For the length of the block, `end_streams()` calls `stop`: how a stream that stays open ends."""
    _OPEN.add(stop)
    try:
        yield
    finally:
        _OPEN.discard(stop)


async def answer_in_order(
    requests: AsyncIterator[Request],
    start: Callable[[Request], Awaitable[Response]],
    in_flight_max: int,
    rpc: str,
) -> AsyncIterator[Response]:
    """Yield start(request)'s answer for each request, in order, with up to in_flight_max started at once.

    `start` is called as each request arrives; whatever it does before its
    first await happens in arrival order. Each answer's time from arrival is
    recorded in replog_request_duration_seconds under `rpc`, as a call's is.
    """
    started: asyncio.Queue = asyncio.Queue(maxsize=in_flight_max)
    waiting = False  # the reader waits for the client's next request, and holds none
    ending = False

    async def read() -> None:
        nonlocal waiting
        incoming = aiter(requests)
        try:
            while not ending:
                waiting = True
                try:
                    request = await anext(incoming)
                except StopAsyncIteration:
                    break
                finally:
                    waiting = False
                await started.put((time.perf_counter(), asyncio.ensure_future(start(request))))
        except asyncio.CancelledError:
            if not ending:
                raise
        except Exception as error:  # the stream broke: the writer below raises it
            await started.put(error)
            return
        await started.put(_END)

    def stop() -> None:
        nonlocal ending
        ending = True
        if waiting:
            reader.cancel()  # no request in hand: nothing started is lost

    reader = asyncio.ensure_future(read())
    timer = REQUEST_DURATION.labels(rpc)
    try:
        with until_shutdown(stop):
            while (item := await started.get()) is not _END:
                if isinstance(item, Exception):
                    raise item
                arrived, answer = item
                response = await answer
                timer.observe(time.perf_counter() - arrived)
                yield response
    finally:
        reader.cancel()
        while not started.empty():
            item = started.get_nowait()
            if isinstance(item, tuple):
                item[1].cancel()
