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


def test_under_tls_the_health_port_answers_probes_in_plaintext_and_the_listener_does_not(tmp_path):
    """The kubelet's gRPC probes speak no TLS: health.port serves them the same answers."""
    from replog.rpc.channels import ClientSecurity
    from replog.rpc.channels import set_default as set_default_security
    from replog.security.dev_ca import Authority

    ca = Authority.create(str(tmp_path))
    files = ca.issue(str(tmp_path), "service")

    async def scenario() -> tuple[str, str]:
        listener = HostPort("127.0.0.1", free_port("127.0.0.1"))
        health_address = f"127.0.0.1:{free_port('127.0.0.1', {listener.port})}"
        service = Starting()
        service.address = health_address
        defaults = {setting.name: setting.default for setting in SERVER_SETTINGS}
        config = Config({**defaults, "socket.request.max.bytes": 1 << 20, "shutdown.grace.ms": 1000,
                         "ssl.certfile": files.certfile, "ssl.keyfile": files.keyfile, "ssl.cafile": files.cafile,
                         "health.port": int(health_address.rsplit(":", 1)[1])}, {})
        running = asyncio.create_task(serve("test", service, listener, config))
        service.may_finish_start.set()
        await until(health_address, ["SERVING", "SERVING"])
        try:
            await statuses(str(listener))
            plaintext_on_listener = "OK"
        except grpc.aio.AioRpcError as error:
            plaintext_on_listener = error.code().name
        set_default_security(ClientSecurity(files.cafile, files.certfile, files.keyfile))
        try:
            from replog.dev.processes import health_status

            over_tls = await asyncio.to_thread(health_status, str(listener))
        finally:
            set_default_security(None)
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(running, WAIT_S_MAX)
        return plaintext_on_listener, over_tls

    assert asyncio.run(scenario()) == ("UNAVAILABLE", "SERVING")
