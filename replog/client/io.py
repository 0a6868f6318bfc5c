"""The client's network side: one asyncio loop on a daemon thread, and one gRPC channel per address.

The public API is synchronous, as Kafka's Java client is; the work happens on
the loop, and results come back through concurrent.futures.Future.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import grpc

from replog.api.broker.v1 import broker_pb2_grpc
from replog.api.controller.v1 import controller_pb2_grpc
from replog.api.coordinator.v1 import coordinator_pb2_grpc
from replog.api.metadata.v1 import metadata_pb2_grpc
from replog.client.errors import ClientError, ClientTimeoutError
from replog.rpc import channels, event_loop
from replog.rpc.request_stream import RequestStream

T = TypeVar("T")

STOP_SETTLE_S = 1.0  # how long a stopping loop waits for its last tasks

# Fetch responses and produce requests hold several MB; the broker's own limit
# (socket.request.max.bytes) is what bounds them.
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
]


def parse_bootstrap(bootstrap: str | list[str] | tuple[str, ...]) -> list[str]:
    """Split "host:port[,host:port...]" (or a list of them) into addresses."""
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    addresses = [item.strip() for item in items if item.strip()]
    if not addresses:
        raise ClientError("no bootstrap address given; pass HOST:PORT of a metadata service")
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClientError(f"bootstrap address {address!r} is not HOST:PORT")
    return addresses


class IoThread:
    """An asyncio loop running on its own daemon thread until `stop()`."""

    def __init__(self, name: str) -> None:
        try:
            self.loop = event_loop.new_event_loop()
        except event_loop.EventLoopError as error:
            raise ClientError(str(error)) from None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None, what: str = "the request") -> T:
        """Run a coroutine on the loop and wait for its result (its exception is raised here)."""
        future = self.submit(coroutine)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ClientTimeoutError(f"{what} did not finish within {timeout_s:g} s") from None

    def call_soon(self, callback: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(callback, *args)

    @property
    def is_current(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if self._thread.is_alive() and not self.is_current:
            # grpc settles closed calls in tasks of its own: let them end before the loop does.
            asyncio.run_coroutine_threadsafe(_settle_tasks(), self.loop).result(STOP_SETTLE_S + 1)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _settle_tasks() -> None:
    """Wait up to STOP_SETTLE_S for the loop's other tasks; cancel what is left."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=STOP_SETTLE_S)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=STOP_SETTLE_S)


class Channels:
    """One grpc.aio channel per address, reused by every request to it. Used only on the loop."""

    def __init__(self, security: channels.ClientSecurity | None = None) -> None:
        self._security = security
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[tuple[str, type], Any] = {}
        self._streams: dict[tuple[str, str], RequestStream] = {}

    def _stub(self, address: str, stub_type: type) -> Any:
        stub = self._stubs.get((address, stub_type))
        if stub is None:
            channel = self._channels.get(address)
            if channel is None:
                channel = self._channels[address] = channels.aio_channel(address, CHANNEL_OPTIONS, self._security)
            stub = self._stubs[(address, stub_type)] = stub_type(channel)
        return stub

    def broker(self, address: str) -> broker_pb2_grpc.BrokerServiceStub:
        return self._stub(address, broker_pb2_grpc.BrokerServiceStub)

    def broker_stream(self, address: str, method: str) -> RequestStream:
        """The broker's `method` stream (ProduceStream, FetchStream), kept open from request to request."""
        stream = self._streams.get((address, method))
        if stream is None:
            stream = self._streams[(address, method)] = RequestStream(getattr(self.broker(address), method))
        return stream

    def metadata(self, address: str) -> metadata_pb2_grpc.MetadataServiceStub:
        return self._stub(address, metadata_pb2_grpc.MetadataServiceStub)

    def controller(self, address: str) -> controller_pb2_grpc.ControllerServiceStub:
        return self._stub(address, controller_pb2_grpc.ControllerServiceStub)

    def coordinator(self, address: str) -> coordinator_pb2_grpc.CoordinatorServiceStub:
        return self._stub(address, coordinator_pb2_grpc.CoordinatorServiceStub)

    async def close(self) -> None:
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()
        channels = list(self._channels.values())
        self._channels.clear()
        self._stubs.clear()
        for channel in channels:
            await channel.close()
