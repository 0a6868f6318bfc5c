"""The calling side of a request stream (ProduceStream, FetchStream): a call's semantics for a message's cost.

Each request written on the stream gets the next answer read from it, as the
broker answers a stream's requests in order. Several requests may wait at
once. When the stream breaks — the server goes away, or an answer is later
than its timeout — every waiting request fails with the same StreamError, as
every request on a closed Kafka connection does, and the next request opens a
new stream.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import grpc


class StreamError(Exception):
    """A request on the stream got no answer; code() and details() read as on a failed call."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class RequestStream:
    """One bidirectional stream to one server, opened on first use and again after it breaks."""

    def __init__(self, open_call: Callable[[], grpc.aio.StreamStreamCall]) -> None:
        self._open_call = open_call
        self._call: grpc.aio.StreamStreamCall | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._writing = asyncio.Lock()  # one write at a time, and answers expected in write order

    async def request(self, message: Any, timeout_s: float) -> Any:
        """Send one request and return its answer; raise StreamError when none comes within timeout_s.

        The time limit covers the write too: a stream to a server that stopped
        answering (paused, or cut off) may never take the message.
        """
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout_s):
                await self._send(message, answer)
                return await asyncio.shield(answer)
        except TimeoutError:
            if self._call is not None:  # stuck: every request on it is as late as this one
                self._break(self._call, StreamError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                                    f"no answer within {timeout_s:g} s"))
            if answer.done():
                return answer.result()
            raise StreamError(grpc.StatusCode.DEADLINE_EXCEEDED, f"no answer within {timeout_s:g} s") from None

    async def _send(self, message: Any, answer: asyncio.Future[Any]) -> None:
        async with self._writing:
            call = self._open()
            self._waiting.append(answer)
            try:
                await call.write(message)
            except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError) as error:
                self._break(call, _stream_error(error))

    def close(self) -> None:
        if self._call is not None:
            self._break(self._call, StreamError(grpc.StatusCode.CANCELLED, "the stream was closed"))

    def _open(self) -> grpc.aio.StreamStreamCall:
        if self._call is None:
            self._call = self._open_call()
            self._reader = asyncio.get_running_loop().create_task(self._read(self._call))
        return self._call

    async def _read(self, call: grpc.aio.StreamStreamCall) -> None:
        try:
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    raise StreamError(grpc.StatusCode.UNAVAILABLE, "the server ended the stream")
                if not self._waiting:
                    raise StreamError(grpc.StatusCode.INTERNAL, "the server sent an answer nobody asked for")
                answer = self._waiting.popleft()
                if not answer.done():
                    answer.set_result(response)
        except (grpc.aio.AioRpcError, grpc.aio.UsageError, StreamError) as error:
            self._break(call, _stream_error(error))

    def _break(self, call: grpc.aio.StreamStreamCall, error: StreamError) -> None:
        """Fail every request waiting on `call` and forget it (a newer stream is left alone)."""
        if call is not self._call:
            return
        self._call = None
        call.cancel()
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        self._reader = None
        waiting, self._waiting = self._waiting, collections.deque()
        for answer in waiting:
            if not answer.done():
                answer.set_exception(error)
                answer.exception()  # its requester may be gone (cancelled): no "never retrieved" warning


def _stream_error(error: Exception) -> StreamError:
    if isinstance(error, StreamError):
        return error
    if isinstance(error, grpc.aio.AioRpcError):
        return StreamError(error.code(), error.details() or "")
    return StreamError(grpc.StatusCode.UNAVAILABLE, f"the stream broke: {error!r}")
