"""A broker in a network namespace of its own, joined to the cluster by a relay the test controls.

The local cluster listens on 127.0.0.1 ports recorded in cluster.json. A broker
moved into its own namespace has a loopback of its own, so nothing reaches it
and it reaches nothing, except through the relay: in the root namespace the
relay listens on the broker's port and carries connections into the
namespace; inside the namespace it listens on the port of every other member
(ZooKeeper, the other brokers, the controllers, the metadata service) and
carries connections out. The broker has no other path, so cutting the relay is
a real partition.

A cut is silent, as a broken network is: the relay stops reading, bytes stay
in the socket buffers, nothing is reset, and new connections are accepted and
held. Healing lets everything through again, late bytes included, as TCP
delivers them once a partition ends.

A cut names the kinds of peer it separates the broker from: `zookeeper`,
`broker`, `controller`, `metadata`, and `client` (this test process, whose
clients keep reaching the broker unless cut too). The relay knows the kind of
an outgoing connection by its port, and of an incoming one by the process that
holds the other end (found through /proc).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterable

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/run/netns"
RELAY_CHUNK_BYTES = 256 * 1024
LISTEN_BACKLOG = 128
LOOP_START_S_MAX = 10.0
COMMAND_TIMEOUT_S = 30.0

_libc = ctypes.CDLL(None, use_errno=True)


def namespaces_work() -> bool:
    """True when this process may create network namespaces (root with `ip netns`)."""
    if os.geteuid() != 0:
        return False
    name = f"replog-probe-{os.getpid()}"
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return False
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=COMMAND_TIMEOUT_S)
    return True


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=COMMAND_TIMEOUT_S)


class Namespace:
    """A named network namespace with its loopback up; deleted by close()."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path = os.path.join(NETNS_DIR, name)
        if os.path.exists(self.path):
            _ip("netns", "del", name)
        _ip("netns", "add", name)
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")

    def exec_prefix(self) -> list[str]:
        """The argv prefix that runs a command inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def socket_inside(self, make: Callable[[], socket.socket]) -> socket.socket:
        """Create a socket in this namespace (only the calling thread switches, and switches back)."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(self.path, os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {self.name} failed")
            try:
                return make()
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back to the root namespace failed")
        finally:
            os.close(own)
            os.close(target)

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=COMMAND_TIMEOUT_S)


def _listener(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


def _connector() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    return sock


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _inodes_of_local_port(port: int) -> set[int]:
    """The inodes of the root namespace's TCP sockets bound to local `port` (IPv4, or IPv6 as gRPC uses)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as handle:
            next(handle)
            for line in handle:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(int(fields[9]))
    return inodes


PEER_KINDS = frozenset({"zookeeper", "broker", "controller", "metadata", "client"})
MEMBERS = PEER_KINDS - {"client"}


class Relay:
    """Carries one namespaced broker's connections; cut and heal it from any thread.

    outside_ports maps the port of every other member to its kind; member_pids()
    maps the pids of the cluster's processes to their kinds, for incoming connections.
    """

    def __init__(self, namespace: Namespace, broker_port: int, outside_ports: dict[int, str],
                 member_pids: Callable[[], dict[int, str]]) -> None:
        self.namespace = namespace
        self.broker_port = broker_port
        self.outside_ports = {port: kind for port, kind in outside_ports.items() if port != broker_port}
        self._member_pids = member_pids
        self._cut: frozenset[str] = frozenset()
        self._open = asyncio.Event()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task] = set()
        self._started = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"relay-{namespace.name}", daemon=True)
        self._thread.start()
        if not self._started.wait(LOOP_START_S_MAX):
            raise RuntimeError(f"the relay for {namespace.name} did not start")
        if self._failure is not None:
            raise self._failure

    # -- control (any thread) ----------------------------------------------------------------------

    def cut(self, kinds: Iterable[str]) -> None:
        """Separate the broker from these kinds of peer (the others still pass)."""
        kinds = frozenset(kinds)
        if not kinds <= PEER_KINDS:
            raise ValueError(f"unknown peer kinds {sorted(kinds - PEER_KINDS)}")
        self._set(kinds)

    def heal(self) -> None:
        self._set(frozenset())

    def close(self) -> None:
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(LOOP_START_S_MAX)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(LOOP_START_S_MAX)

    def _set(self, kinds: frozenset[str]) -> None:
        def apply() -> None:
            self._cut = kinds
            self._open.set()
            self._open = asyncio.Event()

        self._loop.call_soon_threadsafe(apply)

    # -- the loop ----------------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._listen())
        except BaseException as error:  # reported to the constructor
            self._failure = error
            self._started.set()
            return
        self._started.set()
        self._loop.run_forever()
        self._loop.close()

    async def _listen(self) -> None:
        inward = _listener(self.broker_port)
        self._servers.append(await asyncio.start_server(self._inward, sock=inward))
        for port, kind in self.outside_ports.items():
            outward = self.namespace.socket_inside(lambda port=port: _listener(port))
            self._servers.append(await asyncio.start_server(
                lambda r, w, port=port, kind=kind: self._outward(r, w, port, kind), sock=outward))

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _peer_kind(self, peer_port: int) -> str:
        """Who holds the other end of an incoming connection: this process (client) or a member."""
        inodes = _inodes_of_local_port(peer_port)
        if inodes & _socket_inodes(os.getpid()):
            return "client"
        for pid, kind in self._member_pids().items():
            if inodes & _socket_inodes(pid):
                return kind
        return "client"

    async def _inward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A connection to the broker's port from the root namespace, carried into the namespace."""
        kind = self._peer_kind(writer.get_extra_info("peername")[1])
        await self._carry(reader, writer, lambda: self._inside_connect(self.broker_port),
                          lambda: kind not in self._cut)

    async def _outward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int,
                       kind: str) -> None:
        """A connection from the broker to another member, carried out to the root namespace."""
        await self._carry(reader, writer, lambda: asyncio.open_connection("127.0.0.1", port),
                          lambda: kind not in self._cut)

    async def _inside_connect(self, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock = self.namespace.socket_inside(_connector)
        await self._loop.sock_connect(sock, ("127.0.0.1", port))
        return await asyncio.open_connection(sock=sock)

    async def _carry(self, reader, writer, connect, passes: Callable[[], bool]) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        far_writer = None
        try:
            await self._wait_open(passes)
            far_reader, far_writer = await connect()
            await asyncio.gather(self._pump(reader, far_writer, passes), self._pump(far_reader, writer, passes))
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a connection that ends, or the relay closing: the endpoints see it closed
        finally:
            self._tasks.discard(task)
            for each in (writer, far_writer):
                if each is not None:
                    each.close()

    async def _wait_open(self, passes: Callable[[], bool]) -> None:
        while not passes():
            await self._open.wait()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, passes) -> None:
        try:
            while True:
                await self._wait_open(passes)
                data = await reader.read(RELAY_CHUNK_BYTES)
                if not data:
                    break
                await self._wait_open(passes)
                writer.write(data)
                await writer.drain()
        finally:
            if writer.can_write_eof():
                try:
                    writer.write_eof()
                except OSError:
                    pass
