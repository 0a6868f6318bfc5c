"""One ZooKeeper session and the asyncio loop it hands everything to.

kazoo runs its own threads. Every result and every watch is handed to the
owning asyncio loop with `call_soon_threadsafe`, so the services touch their
state from one thread only (DESIGN §3). This is the one place where kazoo's
threads meet the loop; the other modules of replog.zk build requests on
`client` and await them through `call`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id, Permissions, make_digest_acl

from replog.config import ConfigError
from replog.core.invariant import InvariantViolation
from replog.zk import metrics, paths
from replog.zk.errors import StoreError


@dataclasses.dataclass(frozen=True)
class ZkAuth:
    """The digest identity a process authenticates with, and whether the znodes it creates are
    writable by that identity only (Kafka's zookeeper.set.acl; everyone may still read them)."""

    username: str
    password: str
    set_acl: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ZkAuth | None:
        path, set_acl = config["zookeeper.auth.digest.file"], config["zookeeper.set.acl"]
        if not path:
            if set_acl:
                raise ConfigError("zookeeper.set.acl=true needs zookeeper.auth.digest.file: the user:password "
                                  "whose znodes they are.")
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read().strip()
        except OSError as error:
            raise ConfigError(f"cannot read zookeeper.auth.digest.file {path}: {error.strerror}.") from None
        username, sep, password = text.partition(":")
        if not sep or not username or not password:
            raise ConfigError(f"zookeeper.auth.digest.file {path} must hold user:password on one line.")
        return cls(username, password, set_acl)

    def client_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"auth_data": [("digest", f"{self.username}:{self.password}")]}
        if self.set_acl:
            arguments["default_acl"] = [make_digest_acl(self.username, self.password, all=True),
                                        ACL(Permissions.READ, Id("world", "anyone"))]
        return arguments


_auth: ZkAuth | None = None


def set_default_auth(auth: ZkAuth | None) -> None:
    """The identity every kazoo client of this process uses from now on (set once at start)."""
    global _auth
    _auth = auth


def new_client(connect: str, session_timeout_s: float, auth: ZkAuth | None = None) -> KazooClient:
    """A kazoo client as every replog process makes them: it retries a lost connection forever
    (a process keeps trying to reach ZooKeeper rather than dying; expiry is reported apart), and
    authenticates as the process's ZkAuth."""
    auth = auth or _auth
    return KazooClient(
        hosts=connect,
        timeout=session_timeout_s,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=5, delay=0.1, max_delay=1.0),
        **(auth.client_arguments() if auth else {}),
    )


def ensure_chroot(connect: str, session_timeout_s: float, connection_timeout_s: float) -> None:
    """Create the chroot of `zookeeper.connect` (host:port/chroot) if missing, as Kafka does."""
    hosts, _, chroot = connect.partition("/")
    if not chroot.strip("/"):
        return
    root = new_client(hosts, session_timeout_s)
    root.start(connection_timeout_s)
    try:
        root.ensure_path("/" + chroot.strip("/"))
    finally:
        root.stop()
        root.close()


async def start_watcher(start: Callable[[float], None], connect: str, timeout_s: float, what: str) -> None:
    """Run a kazoo-thread watcher's blocking `start(timeout_s)` (after creating the chroot) from
    the loop; a ZooKeeper that cannot be reached is one sentence naming `what` was being read."""
    try:
        await asyncio.to_thread(ensure_chroot, connect, timeout_s, timeout_s)
        await asyncio.to_thread(start, timeout_s)
    except Exception as error:  # kazoo raises its own timeout type
        raise StoreError(f"could not read {what} from ZooKeeper at {connect} "
                         f"({error or type(error).__name__}); is it running?") from None


class ZkSession:
    """A kazoo client used from one asyncio loop, and the events of its session."""

    def __init__(self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int) -> None:
        self._connect = connect
        self._session_timeout_s = session_timeout_ms / 1000
        self._connection_timeout_s = connection_timeout_ms / 1000
        # Retry forever on connection loss: a process keeps trying to reach ZooKeeper
        # rather than dying; session expiry is reported separately.
        self.client = new_client(connect, self._session_timeout_s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost_handlers: list[Callable[[], None]] = []
        self._session_restored_handlers: list[Callable[[], None]] = []
        self._rearm_hooks: list[Callable[[], None]] = []
        self._lost = False

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await asyncio.to_thread(self._ensure_chroot)
            await asyncio.to_thread(self.client.start, self._connection_timeout_s)
        except Exception as error:  # kazoo raises its own timeout type
            await asyncio.to_thread(self.client.stop)
            raise StoreError(
                f"could not connect to ZooKeeper at {self._connect} within "
                f"{self._connection_timeout_s:g} s ({error or type(error).__name__}); "
                "is it running? (`replog dev up` starts one)"
            ) from None
        self.client.add_listener(self._on_state)
        metrics.session_state(metrics.CONNECTED)
        for path in paths.PERSISTENT_ROOTS:
            await self.call(self.client.ensure_path_async, path)

    async def stop(self) -> None:
        self._session_lost_handlers.clear()
        self._session_restored_handlers.clear()
        self.client.remove_listener(self._on_state)  # closing is no expiry
        await asyncio.to_thread(self.client.stop)
        await asyncio.to_thread(self.client.close)

    def _ensure_chroot(self) -> None:
        ensure_chroot(self._connect, self._session_timeout_s, self._connection_timeout_s)

    @property
    def session_id(self) -> int | None:
        session = self.client.client_id
        return session[0] if session else None

    # -- the session's events ----------------------------------------------------------------

    def on_session_lost(self, handler: Callable[[], None]) -> None:
        """Called on the loop when the session expired: every ephemeral znode of ours is gone."""
        self._session_lost_handlers.append(handler)

    def on_session_restored(self, handler: Callable[[], None]) -> None:
        """Called on the loop when a new session is established after an expiry."""
        self._session_restored_handlers.append(handler)

    def rearm_on_new_session(self, rearm: Callable[[], None]) -> None:
        """Call rearm on kazoo's thread as soon as a new session replaces an expired one,
        before the restored handlers run: the new session has none of the old one's watches.
        rearm must not block."""
        self._rearm_hooks.append(rearm)

    def _on_state(self, state: str) -> None:
        # kazoo's thread: never block here, hand over to the loop.
        metrics.session_state({KazooState.LOST: metrics.EXPIRED, KazooState.SUSPENDED: metrics.SUSPENDED}.get(
            state, metrics.CONNECTED))
        if state == KazooState.LOST:
            self._lost = True
            self._dispatch_all(self._session_lost_handlers)
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            for rearm in self._rearm_hooks:
                rearm()
            self._dispatch_all(self._session_restored_handlers)

    def _dispatch_all(self, handlers: list[Callable[[], None]]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for handler in list(handlers):
            loop.call_soon_threadsafe(handler)

    # -- from kazoo's threads to the loop ----------------------------------------------------

    def dispatch(self, handler: Callable[[Any], None], value: Any) -> None:
        """Call handler(value) on the loop; from any thread. Dropped once the loop is closed."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(handler, value)

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Call callback on the loop after delay_s; from any thread. Dropped once the loop is closed."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.call_later, delay_s, callback)

    async def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Await one of kazoo's asynchronous requests (`get_async`, `commit_async`, ...)."""
        loop = self._loop
        if loop is None:
            raise InvariantViolation(
                f"the ZooKeeper session for {self._connect} was used before start(): "
                "it has no event loop to hand results to")
        future: asyncio.Future[Any] = loop.create_future()

        def done(result: Any) -> None:
            try:
                value = result.get_nowait()
            except Exception as error:  # delivered to the awaiting coroutine
                loop.call_soon_threadsafe(_set_exception, future, error)
            else:
                loop.call_soon_threadsafe(_set_result, future, value)

        method(*args, **kwargs).rawlink(done)
        return await future

    async def version_of(self, path: str) -> int | None:
        """The znode's version, or None when it does not exist."""
        stat = await self.call(self.client.exists_async, path)
        return stat.version if stat else None


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
