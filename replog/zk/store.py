"""A small asyncio interface over ZooKeeper; the only module that imports kazoo.

kazoo runs its own threads. Every result and every watch is handed to the
owning asyncio loop with `call_soon_threadsafe`, so the services touch their
state from one thread only (DESIGN §3).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.retry import KazooRetry

from replog.zk import paths

log = logging.getLogger(__name__)


class StoreError(Exception):
    """ZooKeeper could not be reached or answered with an unexpected failure."""


@dataclasses.dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None
    metrics_port: int
    broker_epoch: int  # the czxid of the ephemeral znode: it grows with every registration

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "host": self.host,
                "port": self.port,
                "endpoints": [f"PLAINTEXT://{self.host}:{self.port}"],
                "rack": self.rack,
                "metrics_port": self.metrics_port,
            }
        ).encode()

    @classmethod
    def from_json(cls, broker_id: int, data: bytes, czxid: int) -> BrokerRegistration:
        fields = json.loads(data)
        return cls(broker_id, fields["host"], fields["port"], fields.get("rack"),
                   fields.get("metrics_port", 0), czxid)


@dataclasses.dataclass(frozen=True)
class ControllerLease:
    """Proof of having won a controller election: the epoch and the znode version that fence it."""

    controller_id: int
    epoch: int
    epoch_zk_version: int


@dataclasses.dataclass(frozen=True)
class ControllerInfo:
    """The active controller as /controller records it."""

    controller_id: int
    host: str
    port: int

    @classmethod
    def from_json(cls, data: bytes) -> ControllerInfo:
        fields = json.loads(data)
        return cls(fields["brokerid"], fields.get("host", ""), fields.get("port", 0))


class MetadataStore:
    """One ZooKeeper session, used from one asyncio loop."""

    def __init__(self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int) -> None:
        self._connect = connect
        self._connection_timeout_s = connection_timeout_ms / 1000
        # Retry forever on connection loss: a process keeps trying to reach ZooKeeper
        # rather than dying; session expiry is reported separately.
        retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0)
        self._zk = KazooClient(
            hosts=connect,
            timeout=session_timeout_ms / 1000,
            connection_retry=retry,
            command_retry=KazooRetry(max_tries=5, delay=0.1, max_delay=1.0),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost_handlers: list[Callable[[], None]] = []
        self._session_restored_handlers: list[Callable[[], None]] = []
        self._lost = False

    # -- session --------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await asyncio.to_thread(self._zk.start, self._connection_timeout_s)
        except Exception as error:  # kazoo raises its own timeout type
            await asyncio.to_thread(self._zk.stop)
            raise StoreError(
                f"could not connect to ZooKeeper at {self._connect} within "
                f"{self._connection_timeout_s:g} s ({error or type(error).__name__}); "
                "is it running? (`replog dev up` starts one)"
            ) from None
        self._zk.add_listener(self._on_state)
        for path in paths.PERSISTENT_ROOTS:
            await self._call(self._zk.ensure_path_async, path)

    async def stop(self) -> None:
        self._session_lost_handlers.clear()
        self._session_restored_handlers.clear()
        await asyncio.to_thread(self._zk.stop)
        await asyncio.to_thread(self._zk.close)

    @property
    def session_id(self) -> int | None:
        session = self._zk.client_id
        return session[0] if session else None

    def on_session_lost(self, handler: Callable[[], None]) -> None:
        """Called on the loop when the session expired: every ephemeral znode of ours is gone."""
        self._session_lost_handlers.append(handler)

    def on_session_restored(self, handler: Callable[[], None]) -> None:
        """Called on the loop when a new session is established after an expiry."""
        self._session_restored_handlers.append(handler)

    def _on_state(self, state: str) -> None:
        # kazoo's thread: never block here, hand over to the loop.
        if state == KazooState.LOST:
            self._lost = True
            self._dispatch(self._session_lost_handlers)
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            self._dispatch(self._session_restored_handlers)

    def _dispatch(self, handlers: list[Callable[[], None]]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for handler in list(handlers):
            loop.call_soon_threadsafe(handler)

    # -- kazoo's async results as awaitables ----------------------------------------------

    async def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()
        loop = self._loop

        def done(result: Any) -> None:
            try:
                value = result.get_nowait()
            except Exception as error:  # delivered to the awaiting coroutine
                loop.call_soon_threadsafe(_set_exception, future, error)
            else:
                loop.call_soon_threadsafe(_set_result, future, value)

        method(*args, **kwargs).rawlink(done)
        return await future

    # -- cluster id -----------------------------------------------------------------------

    async def cluster_id(self) -> str:
        """The cluster's id, created by the first process that asks (as Kafka's /cluster/id)."""
        candidate = json.dumps({"version": "1", "id": uuid.uuid4().hex[:22]}).encode()
        try:
            await self._call(self._zk.create_async, paths.CLUSTER_ID, candidate)
        except NodeExistsError:
            pass
        data, _ = await self._call(self._zk.get_async, paths.CLUSTER_ID)
        return json.loads(data)["id"]

    # -- brokers ---------------------------------------------------------------------------

    async def register_broker(self, registration: BrokerRegistration, *, wait_s: float) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (its czxid).

        A previous incarnation's znode may outlive it by up to a session timeout
        (kill -9 then restart): wait for it to expire rather than fail.
        """
        path = paths.broker(registration.broker_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        announced = False
        while True:
            try:
                _, stat = await self._call(self._zk.create_async, path, registration.to_json(),
                                           ephemeral=True, include_data=True)
                return stat.czxid
            except NodeExistsError:
                owner = await self._ephemeral_owner(path)
                if owner is not None and owner == self.session_id:
                    _, stat = await self._call(self._zk.get_async, path)
                    return stat.czxid
                if loop.time() > deadline:
                    raise StoreError(
                        f"broker id {registration.broker_id} is registered by another live "
                        f"process ({path} exists); is a second broker running with this id?"
                    ) from None
                if not announced:
                    log.info("waiting for the previous registration %s to expire", path)
                    announced = True
                await asyncio.sleep(0.2)

    async def _ephemeral_owner(self, path: str) -> int | None:
        try:
            stat = await self._call(self._zk.exists_async, path)
        except NoNodeError:
            return None
        return stat.ephemeralOwner if stat else None

    async def live_brokers(self) -> dict[int, BrokerRegistration]:
        ids = await self._call(self._zk.get_children_async, paths.BROKER_IDS)
        brokers: dict[int, BrokerRegistration] = {}
        for child in ids:
            try:
                data, stat = await self._call(self._zk.get_async, paths.broker(int(child)))
            except NoNodeError:
                continue  # it went away between the two reads
            brokers[int(child)] = BrokerRegistration.from_json(int(child), data, stat.czxid)
        return brokers

    def watch_broker_ids(self, handler: Callable[[list[int]], None]) -> None:
        """Call handler on the loop with the live broker ids now and after every change."""

        def on_children(children: list[str]) -> None:
            self._dispatch_value(handler, sorted(int(c) for c in children))

        self._zk.ChildrenWatch(paths.BROKER_IDS, on_children)

    # -- the controller --------------------------------------------------------------------

    async def elect_controller(self, controller_id: int, host: str, port: int) -> ControllerLease | None:
        """Try to become controller: one multi creating /controller and bumping /controller_epoch.

        The bump is conditional on the epoch znode's version, so two candidates
        cannot both win, and every later write is checked against the version
        this returns (DESIGN §7).
        """
        try:
            data, stat = await self._call(self._zk.get_async, paths.CONTROLLER_EPOCH)
            epoch, version = int(data), stat.version
        except NoNodeError:
            epoch, version = 0, None
        payload = json.dumps({"version": 1, "brokerid": controller_id, "host": host, "port": port}).encode()
        txn = self._zk.transaction()
        txn.create(paths.CONTROLLER, payload, ephemeral=True)
        if version is None:
            txn.create(paths.CONTROLLER_EPOCH, str(epoch + 1).encode())
        else:
            txn.set_data(paths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version)
        results = await self._call(txn.commit_async)
        if any(isinstance(r, Exception) for r in results):
            failures = [type(r).__name__ for r in results if isinstance(r, Exception)
                        and not isinstance(r, RolledBackError)]
            log.debug("controller election lost: %s", ", ".join(failures))
            return None
        new_version = 0 if version is None else results[1].version
        return ControllerLease(controller_id, epoch + 1, new_version)

    def watch_controller(self, handler: Callable[[ControllerInfo | None], None]) -> None:
        """Call handler on the loop with the active controller (None when there is none)."""

        def on_data(data: bytes | None, _stat: Any) -> None:
            self._dispatch_value(handler, ControllerInfo.from_json(data) if data else None)

        self._zk.DataWatch(paths.CONTROLLER, on_data)

    async def resign_controller(self, lease: ControllerLease) -> None:
        """Delete /controller if it is still ours (fenced by the epoch version)."""
        txn = self._zk.transaction()
        txn.check(paths.CONTROLLER_EPOCH, version=lease.epoch_zk_version)
        txn.delete(paths.CONTROLLER)
        try:
            await self._call(txn.commit_async)
        except (KazooException, BadVersionError) as error:
            log.info("controller znode not removed: %s", error)

    def _dispatch_value(self, handler: Callable[[Any], None], value: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(handler, value)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

