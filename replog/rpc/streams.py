"""Request streams answered in order, as Kafka answers the requests of one connection.

A bidirectional stream carries many requests for the price of one call: in
grpc.aio a stream message costs about a third of a unary call's round trip
and half its CPU. `answer_in_order` starts each request as it arrives — in
arrival order, so a leader appends a producer's batches in the order they were
sent — lets later requests start while earlier ones wait, and sends the answers
in request order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from replog.rpc.server import REQUEST_DURATION

Request = TypeVar("Request")
Response = TypeVar("Response")

_END = object()  # the client closed its side of the stream


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

    async def read() -> None:
        try:
            async for request in requests:
                await started.put((time.perf_counter(), asyncio.ensure_future(start(request))))
        except Exception as error:  # the stream broke: the writer below raises it
            await started.put(error)
            return
        await started.put(_END)

    reader = asyncio.ensure_future(read())
    timer = REQUEST_DURATION.labels(rpc)
    try:
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
