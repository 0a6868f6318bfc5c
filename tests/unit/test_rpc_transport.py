"""replog's processes run grpc on its older Posix transport, and the installed grpc still has it."""

import os
import subprocess
import sys

from replog.rpc.transport import EXPERIMENTS_ENV, OLDER_POSIX_TRANSPORT

# A process as the entry points start: the choice first, then grpc, a server and a call to it.
PROGRAM = """
import asyncio, os
from replog.rpc.transport import choose_transport
choose_transport()
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

async def main():
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    await server.stop(None)
    print(os.environ.get("GRPC_EXPERIMENTS"), answer.status)

asyncio.run(main())
"""


def run(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60)


def test_a_process_asks_for_the_older_transport_and_grpc_knows_it():
    env = {k: v for k, v in os.environ.items() if k != EXPERIMENTS_ENV}
    result = run(env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [OLDER_POSIX_TRANSPORT, "1"]  # 1: SERVING
    # A grpc that no longer has these experiments says so on stderr at start-up.
    assert "Unknown experiment" not in result.stderr


def test_the_operators_choice_wins():
    result = run({**os.environ, EXPERIMENTS_ENV: ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout == " 1\n"  # the empty value kept: grpc's default transport


def test_too_late_once_grpc_is_imported(monkeypatch):
    import grpc  # noqa: F401  (already imported by the test session's other modules, or now)

    from replog.rpc.transport import choose_transport

    monkeypatch.delenv(EXPERIMENTS_ENV, raising=False)
    choose_transport()
    assert EXPERIMENTS_ENV not in os.environ
