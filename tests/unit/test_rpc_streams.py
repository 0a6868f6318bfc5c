"""Request streams answer in order, and at shutdown end once what they started is answered."""

import asyncio

import pytest

from replog.rpc.streams import answer_in_order, end_streams


class Requests:
    """A client's side of a stream: requests put in by the test, the stream kept open until closed."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue = asyncio.Queue()

    def send(self, request) -> None:
        self._queue.put_nowait(request)

    def close(self) -> None:
        self._queue.put_nowait(StopAsyncIteration)

    def __aiter__(self):
        return self

    async def __anext__(self):
        request = await self._queue.get()
        if request is StopAsyncIteration:
            raise StopAsyncIteration
        return request


async def collect(stream, into: list) -> None:
    async for answer in stream:
        into.append(answer)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 10))


def test_answers_come_in_request_order_however_long_each_takes():
    async def scenario():
        requests, answers = Requests(), []
        delays = {1: 0.05, 2: 0.0, 3: 0.02}

        async def start(request):
            await asyncio.sleep(delays[request])
            return request * 10

        for request in (1, 2, 3):
            requests.send(request)
        requests.close()
        await collect(answer_in_order(requests, start, 8, "Test"), answers)
        return answers

    assert run(scenario()) == [10, 20, 30]


def test_ending_the_streams_answers_what_was_started_and_takes_nothing_more():
    async def scenario():
        requests, answers, started = Requests(), [], []
        release = asyncio.Event()

        async def answer(request):
            await release.wait()
            return request

        def start(request):
            started.append(request)  # what a broker does at once (a produce appends here)
            return answer(request)

        serving = asyncio.ensure_future(collect(answer_in_order(requests, start, 8, "Test"), answers))
        requests.send(1)
        requests.send(2)
        while len(started) < 2:
            await asyncio.sleep(0.001)
        assert end_streams() == 1
        requests.send(3)  # too late: the stream takes no more
        release.set()
        await serving  # the stream ends although the client never closed it
        assert end_streams() == 0  # an ended stream is no longer open
        return answers, started

    answers, started = run(scenario())
    assert answers == [1, 2]
    assert started == [1, 2]


def test_a_stream_waiting_for_its_next_request_ends_at_once():
    async def scenario():
        requests, answers = Requests(), []

        async def start(request):
            return request

        serving = asyncio.ensure_future(collect(answer_in_order(requests, start, 8, "Test"), answers))
        requests.send(7)
        while not answers:
            await asyncio.sleep(0.001)
        end_streams()
        await asyncio.wait_for(serving, 1)
        return answers

    assert run(scenario()) == [7]


def test_a_broken_stream_still_raises():
    class Broken(Requests):
        async def __anext__(self):
            raise ConnectionError("the client went away")

    async def scenario():
        async def start(request):
            return request

        await collect(answer_in_order(Broken(), start, 8, "Test"), [])

    with pytest.raises(ConnectionError):
        run(scenario())
