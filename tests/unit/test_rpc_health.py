"""The gRPC health service a probe asks: NOT_SERVING until the service has started (a broker:
registered in ZooKeeper), SERVING then, NOT_SERVING again while it stops (a broker: while its
controlled shutdown moves its leaderships away) — for the whole server and for the service's name."""

import asyncio
import os
import signal
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from replog.config import SERVER_SETTINGS, Config, HostPort
from replog.dev.processes import free_port
from replog.rpc.server import serve

SERVICE = "replog.api.test.v1.StartingService"
WAIT_S_MAX = 10.0


class Starting:
    """A service whose start waits until the test lets it finish, and that notes what its health
    service said while it stopped."""

    def __init__(self) -> None:
        self.may_finish_start = asyncio.Event()
        self.said_while_stopping: list[str] = []
        self.address = ""

    def add_to_server(self, server: grpc.aio.Server) -> list[str]:
        return [SERVICE]

    async def start(self) -> None:
        await self.may_finish_start.wait()

    async def stop(self) -> None:
        self.said_while_stopping = await statuses(self.address)


async def statuses(address: str) -> list[str]:
    """What the server says of itself ("") and of SERVICE."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        answers = [await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=1.0) for name in ("", SERVICE)]
    return [health_pb2.HealthCheckResponse.ServingStatus.Name(a.status) for a in answers]


async def until(address: str, wanted: list[str]) -> None:
    deadline = time.monotonic() + WAIT_S_MAX
    seen: list[str] = []
    while time.monotonic() < deadline:
        try:
            seen = await statuses(address)
        except grpc.aio.AioRpcError as error:
            seen = [error.code().name]
        if seen == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"health said {seen}, not {wanted}, for {WAIT_S_MAX:g} s")


def test_health_says_serving_only_between_a_finished_start_and_the_stop():
    async def scenario() -> list[str]:
        listener = HostPort("127.0.0.1", free_port("127.0.0.1"))
        service = Starting()
        service.address = str(listener)
        defaults = {setting.name: setting.default for setting in SERVER_SETTINGS}
        config = Config({**defaults, "socket.request.max.bytes": 1 << 20, "shutdown.grace.ms": 1000}, {})
        running = asyncio.create_task(serve("test", service, listener, config))
        await until(service.address, ["NOT_SERVING", "NOT_SERVING"])
        service.may_finish_start.set()
        await until(service.address, ["SERVING", "SERVING"])
        os.kill(os.getpid(), signal.SIGTERM)  # serve() handles it on its loop
        await asyncio.wait_for(running, WAIT_S_MAX)
        return service.said_while_stopping

    assert asyncio.run(scenario()) == ["NOT_SERVING", "NOT_SERVING"]
