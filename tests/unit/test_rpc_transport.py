"""replog's processes run grpc on its older Posix transport, and the installed grpc still has it."""

import os
import subprocess
import sys

from replog.rpc.transport import EXPERIMENTS_ENV, FORK_SUPPORT_ENV, OLDER_POSIX_TRANSPORT

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


# A process with RPCs in flight on two threads forks children only to exec /bin/true, as
# subprocess.Popen does with a preexec_fn (PySpark starting its JVM); prints how many died, or hung
# before their exec (killed after 10 s, so that none is left behind).
FORKING = """
import subprocess, sys, threading
from concurrent import futures
from replog.rpc.transport import keep_grpc_out_of_forks
if sys.argv[1] == "keep":
    keep_grpc_out_of_forks()
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

server = grpc.server(futures.ThreadPoolExecutor(4))
health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
stop = threading.Event()

def calls():
    while not stop.is_set():
        stub.Check(health_pb2.HealthCheckRequest(), timeout=10)

threads = [threading.Thread(target=calls) for _ in range(2)]
for thread in threads:
    thread.start()
stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
def lost():
    child = subprocess.Popen(["/bin/true"], preexec_fn=lambda: None)
    try:
        return child.wait(timeout=10) != 0
    except subprocess.TimeoutExpired:  # stuck between its fork and its exec: as lost as one that died
        child.kill()
        child.wait()
        return True

died = 0
for _ in range(int(sys.argv[2])):
    died += lost()
    if died and sys.argv[3] == "first":
        break
stop.set()
for thread in threads:
    thread.join()
server.stop(None)
print(died)
"""
FORKS = 1000


def died_of(forks: int, how: str, until: str = "all") -> int:
    """How many of `forks` children died or hung; with until="first", stop at the first."""
    env = {k: v for k, v in os.environ.items() if k != FORK_SUPPORT_ENV}
    # A thousand forks take about ten seconds on an idle machine; far longer beside a Spark job or a cluster.
    result = subprocess.run([sys.executable, "-c", FORKING, how, str(forks), until], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.split()[-1])


def test_children_forked_to_exec_survive_a_process_with_rpcs_in_flight():
    assert died_of(FORKS, "keep") == 0
    # Without it, grpc's handlers start a poller in each child, which now and then aborts it.
    assert died_of(FORKS, "default", until="first") > 0, (
        "no child died with grpc's fork handlers on: grpc/grpc#43055 may be fixed in this grpcio, and "
        "keep_grpc_out_of_forks with it no longer needed")


def test_the_spark_package_keeps_grpc_out_of_forks_and_an_operators_value_wins():
    def fork_support_after_importing_the_package(env: dict[str, str]) -> list[str]:
        program = "import os, replog.spark; print(os.environ.get('GRPC_ENABLE_FORK_SUPPORT'))"
        return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True,
                              timeout=60).stdout.split()

    env = {k: v for k, v in os.environ.items() if k != FORK_SUPPORT_ENV}
    assert fork_support_after_importing_the_package(env) == ["0"]
    assert fork_support_after_importing_the_package({**env, FORK_SUPPORT_ENV: "1"}) == ["1"]
