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
from typing import Any, Generic, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.retry import KazooRetry

from replog.zk import paths
from replog.zk.records import (
    LeaderAndIsr,
    RecordError,
    StateChanges,
    TopicAssignment,
    TopicPartition,
    topic_config_from_json,
    topic_config_to_json,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


# ZooKeeper refuses requests above jute.maxbuffer (1 MiB by default); a partition state
# write is about 200 bytes, and each of its two copies in notifications about 100, so this
# many operations keep a multi far below it.
MULTI_OPS_MAX = 1000
# After a failed watch read (connection lost), wait this long before reading again.
WATCH_RETRY_S = 0.2


class StoreError(Exception):
    """ZooKeeper could not be reached or answered with an unexpected failure."""


class ControllerFencedError(StoreError):
    """A controller write failed its check of /controller_epoch: another controller won since.

    The writer must stop acting as controller at once (DESIGN §7).
    """


class TopicExistsError(StoreError):
    """The topic znode already exists."""


class WriteOutcomeUnknown(StoreError):
    """The connection broke while a write was in flight: it may or may not have happened."""


class StaleVersionError(StoreError):
    """A conditional write found a znode at another version than the writer last read."""


@dataclasses.dataclass(frozen=True)
class VersionedState:
    """A partition state with the version of its znode, which conditional writes name."""

    state: LeaderAndIsr
    zk_version: int
    # When ZooKeeper applied the write (its server's clock, Unix ms; 0 for a state not read from
    # ZooKeeper): the moment of the controller's decision, as `replog bench failover` times it.
    modified_ms: int = 0


@dataclasses.dataclass(frozen=True)
class TopicSnapshot:
    """Everything ZooKeeper holds about one topic."""

    name: str
    assignment: TopicAssignment
    config: dict[str, str]
    states: dict[int, VersionedState]  # partitions whose state znode exists
    assignment_zk_version: int = 0  # of the topic znode, which conditional writes name


@dataclasses.dataclass(frozen=True)
class StateWrite:
    """Replace a partition's state, provided its znode is still at expected_zk_version."""

    partition: TopicPartition
    state: LeaderAndIsr
    expected_zk_version: int


@dataclasses.dataclass(frozen=True)
class StateWriteResult:
    committed: dict[TopicPartition, int]  # the new znode version of each state written
    conflicts: frozenset[TopicPartition]  # found at another version (or gone): re-read them

    @property
    def complete(self) -> bool:
        return not self.conflicts


@dataclasses.dataclass(frozen=True)
class Watched(Generic[T]):
    """A watched znode's value with the zxids that created and last changed it.

    ZooKeeper's zxids order every change in the cluster: a znode created after
    another has a larger created_zxid (znodes created in one multi share it),
    which tells a re-created topic's partition states from the old topic's.
    """

    value: T
    created_zxid: int
    modified_zxid: int


class Watch:
    """A handle on a data watch; cancel() stops calls to its handler."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


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
        self._session_timeout_s = session_timeout_ms / 1000
        self._connection_timeout_s = connection_timeout_ms / 1000
        # Retry forever on connection loss: a process keeps trying to reach ZooKeeper
        # rather than dying; session expiry is reported separately.
        retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0)
        self._zk = KazooClient(
            hosts=connect,
            timeout=self._session_timeout_s,
            connection_retry=retry,
            command_retry=KazooRetry(max_tries=5, delay=0.1, max_delay=1.0),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session_lost_handlers: list[Callable[[], None]] = []
        self._session_restored_handlers: list[Callable[[], None]] = []
        self._data_watches: list[tuple[Watch, Callable[[], None]]] = []
        self._lost = False

    # -- session --------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await asyncio.to_thread(self._ensure_chroot)
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

    def _ensure_chroot(self) -> None:
        """Create the chroot of `zookeeper.connect` (host:port/chroot) if missing, as Kafka does."""
        hosts, _, chroot = self._connect.partition("/")
        if not chroot.strip("/"):
            return
        root = KazooClient(hosts=hosts, timeout=self._session_timeout_s)
        root.start(self._connection_timeout_s)
        try:
            root.ensure_path("/" + chroot.strip("/"))
        finally:
            root.stop()
            root.close()

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
            self._rearm_data_watches()
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

    async def live_broker_ids(self) -> list[int]:
        """The registered broker ids, read after this session's server caught up with the leader (sync)."""
        await self._call(self._zk.sync_async, paths.BROKER_IDS)
        return sorted(int(child) for child in await self._call(self._zk.get_children_async, paths.BROKER_IDS))

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
        epoch, version = await self.read_controller_epoch() or (0, None)
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

    async def read_controller_epoch(self) -> tuple[int, int] | None:
        """The controller epoch and the version of /controller_epoch (what a lease holds), or None."""
        try:
            data, stat = await self._call(self._zk.get_async, paths.CONTROLLER_EPOCH)
        except NoNodeError:
            return None
        return int(data), stat.version

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

    # -- topics: reads ----------------------------------------------------------------------

    async def topic_names(self) -> list[str]:
        return sorted(await self._call(self._zk.get_children_async, paths.BROKER_TOPICS))

    async def read_topics(self, names: list[str] | None = None) -> dict[str, TopicSnapshot]:
        """Every topic (or the named ones that exist) with assignment, config and states."""
        if names is None:
            names = await self.topic_names()
        snapshots = await asyncio.gather(*(self.read_topic(name) for name in names))
        return {s.name: s for s in snapshots if s is not None}

    async def read_topic(self, name: str) -> TopicSnapshot | None:
        try:
            data, stat = await self._call(self._zk.get_async, paths.topic(name))
        except NoNodeError:
            return None
        try:
            assignment = TopicAssignment.from_json(data)
        except RecordError as error:
            log.error("ignoring topic %r: %s", name, error)
            return None
        partitions = sorted(assignment.partitions)
        config, *states = await asyncio.gather(
            self.read_topic_config(name),
            *(self.read_partition_state(TopicPartition(name, p)) for p in partitions),
        )
        found = {p: state for p, state in zip(partitions, states) if state is not None}
        return TopicSnapshot(name, assignment, config, found, stat.version)

    async def read_partition_state(self, partition: TopicPartition) -> VersionedState | None:
        try:
            data, stat = await self._call(
                self._zk.get_async, paths.partition_state(partition.topic, partition.partition))
        except NoNodeError:
            return None
        try:
            return VersionedState(LeaderAndIsr.from_json(data), stat.version, stat.mtime)
        except RecordError as error:
            log.error("ignoring the state of %s: %s", partition, error)
            return None

    async def read_topic_config(self, name: str) -> dict[str, str]:
        try:
            data, _ = await self._call(self._zk.get_async, paths.topic_config(name))
        except NoNodeError:
            return {}
        return topic_config_from_json(data)

    # -- topics: controller writes, each fenced by the controller epoch --------------------

    async def create_topic(
        self,
        lease: ControllerLease,
        name: str,
        assignment: TopicAssignment,
        config: dict[str, str],
        states: dict[int, LeaderAndIsr],
    ) -> None:
        """Write the topic, its config and every partition state in one multi.

        A controller that dies mid-way leaves the topic either complete or
        absent. Raises TopicExistsError, ControllerFencedError, WriteOutcomeUnknown.
        """
        if sorted(states) != sorted(assignment.partitions):
            raise ValueError(f"states for {sorted(states)} but partitions {sorted(assignment.partitions)}")
        config_version = await self._version_of(paths.topic_config(name))
        txn = self._fenced_transaction(lease)
        txn.create(paths.topic(name), assignment.to_json())
        txn.create(paths.topic_partitions(name), b"")
        for partition in sorted(states):
            txn.create(paths.partition(name, partition), b"")
            txn.create(paths.partition_state(name, partition), states[partition].to_json())
        # A config znode left behind (configs set before the topic) is replaced, not refused.
        if config_version is None:
            txn.create(paths.topic_config(name), topic_config_to_json(config))
        else:
            txn.set_data(paths.topic_config(name), topic_config_to_json(config), version=config_version)
        results = await self._commit(txn)
        failure = _first_failure(results)
        if failure is None:
            return
        index, error = failure
        if index == 1 and isinstance(error, NodeExistsError):
            raise TopicExistsError(f"topic {name!r} already exists")
        raise StoreError(f"creating topic {name!r} failed: {type(error).__name__} at operation {index}")

    async def write_partition_states(self, lease: ControllerLease, writes: list[StateWrite]) -> StateWriteResult:
        """Replace partition states, each on condition of its znode version.

        Writes go in as few multis as ZooKeeper's request size allows; a multi
        in which any state was changed by someone else is not applied, and its
        partitions are reported as conflicts for the caller to re-read and retry.
        Raises ControllerFencedError, WriteOutcomeUnknown.
        """
        committed: dict[TopicPartition, int] = {}
        conflicts: set[TopicPartition] = set()
        chunk_size = MULTI_OPS_MAX - 2  # two ops are the epoch check and the notification
        previous: list[StateWrite] = []
        for start in range(0, len(writes), chunk_size):
            chunk = writes[start:start + chunk_size]
            txn = self._fenced_transaction(lease)
            # This multi's notification repeats the previous one's states: a reader that only
            # gets to read it once this multi has landed misses neither batch.
            self._notify_state_changes(txn, previous + chunk)
            for write in chunk:
                txn.set_data(paths.partition_state(write.partition.topic, write.partition.partition),
                             write.state.to_json(), version=write.expected_zk_version)
            results = await self._commit(txn)
            failure = _first_failure(results)
            if failure is None:
                for write, stat in zip(chunk, results[2:]):
                    committed[write.partition] = stat.version
                previous = chunk
                continue
            previous = []
            index, error = failure
            if index < 2 or not isinstance(error, (BadVersionError, NoNodeError)):
                raise StoreError(f"writing partition states failed: {type(error).__name__} at operation {index}")
            conflicts.add(chunk[index - 2].partition)
        return StateWriteResult(committed, frozenset(conflicts))

    async def add_partitions(
        self,
        lease: ControllerLease,
        name: str,
        assignment: TopicAssignment,
        expected_zk_version: int,
        states: dict[int, LeaderAndIsr],
    ) -> int:
        """Grow a topic in one multi: the topic znode with every partition's replicas (on
        condition of its version) and the new partitions' states. Returns the topic znode's
        new version. Raises StaleVersionError, ControllerFencedError, WriteOutcomeUnknown."""
        txn = self._fenced_transaction(lease)
        txn.set_data(paths.topic(name), assignment.to_json(), version=expected_zk_version)
        for partition in sorted(states):
            txn.create(paths.partition(name, partition), b"")
            txn.create(paths.partition_state(name, partition), states[partition].to_json())
        results = await self._commit(txn)
        self._raise_failure(results, f"adding partitions to topic {name!r}")
        return results[1].version

    async def write_assignment(
        self, lease: ControllerLease, name: str, assignment: TopicAssignment, expected_zk_version: int,
        writes: list[StateWrite],
    ) -> tuple[int, dict[TopicPartition, int]]:
        """Replace a topic's replica assignment together with some of its partition states, in
        one multi, each on condition of its version (a reassignment's steps). Returns the
        topic znode's new version and each state's. Raises StaleVersionError,
        ControllerFencedError, WriteOutcomeUnknown."""
        if len(writes) + 3 > MULTI_OPS_MAX:
            raise ValueError(f"{len(writes)} partition states do not fit one multi with their topic")
        txn = self._fenced_transaction(lease)
        txn.set_data(paths.topic(name), assignment.to_json(), version=expected_zk_version)
        self._notify_state_changes(txn, writes)
        for write in writes:
            txn.set_data(paths.partition_state(write.partition.topic, write.partition.partition),
                         write.state.to_json(), version=write.expected_zk_version)
        results = await self._commit(txn)
        self._raise_failure(results, f"changing the replicas of topic {name!r}")
        return results[1].version, {write.partition: stat.version for write, stat in zip(writes, results[3:])}

    async def write_topic_config(self, lease: ControllerLease, name: str, config: dict[str, str]) -> None:
        """Replace /config/topics/<topic> (created if absent). Raises StaleVersionError,
        ControllerFencedError, WriteOutcomeUnknown."""
        version = await self._version_of(paths.topic_config(name))
        txn = self._fenced_transaction(lease)
        if version is None:
            txn.create(paths.topic_config(name), topic_config_to_json(config))
        else:
            txn.set_data(paths.topic_config(name), topic_config_to_json(config), version=version)
        self._raise_failure(await self._commit(txn), f"writing the config of topic {name!r}")

    # -- topic deletion ----------------------------------------------------------------------

    async def topics_marked_for_deletion(self) -> list[str]:
        return sorted(await self._call(self._zk.get_children_async, paths.ADMIN_DELETE_TOPICS))

    async def mark_topics_for_deletion(self, lease: ControllerLease, names: list[str]) -> None:
        """Create /admin/delete_topics/<topic> for each topic not marked yet, in one multi.
        Raises ControllerFencedError, WriteOutcomeUnknown."""
        marked = set(await self.topics_marked_for_deletion())
        missing = [name for name in names if name not in marked]
        if not missing:
            return
        txn = self._fenced_transaction(lease)
        for name in missing:
            txn.create(paths.topic_deletion(name), b"")
        self._raise_failure(await self._commit(txn), f"marking {missing} for deletion")

    async def delete_topic(self, lease: ControllerLease, name: str) -> None:
        """Remove a topic marked for deletion: its partition states and their parents, in
        multis as large as ZooKeeper takes, then one last multi with the topic znode, its
        config and the deletion mark. A controller that dies between these multis leaves the
        mark, and the next one finishes the deletion. Raises ControllerFencedError,
        WriteOutcomeUnknown."""
        try:
            partitions = await self._call(self._zk.get_children_async, paths.topic_partitions(name))
        except NoNodeError:
            partitions = []
        indexes = sorted(int(child) for child in partitions)
        state_versions = await asyncio.gather(*(self._version_of(paths.partition_state(name, p)) for p in indexes))
        operations: list[str] = []
        for partition, state_version in zip(indexes, state_versions):
            if state_version is not None:
                operations.append(paths.partition_state(name, partition))
            operations.append(paths.partition(name, partition))
        for start in range(0, len(operations), MULTI_OPS_MAX - 1):
            txn = self._fenced_transaction(lease)
            for path in operations[start:start + MULTI_OPS_MAX - 1]:
                txn.delete(path)
            self._raise_failure(await self._commit(txn), f"deleting the partitions of topic {name!r}")
        txn = self._fenced_transaction(lease)
        for path in (paths.topic_partitions(name), paths.topic(name), paths.topic_config(name),
                     paths.topic_deletion(name)):
            if await self._version_of(path) is not None:
                txn.delete(path)
        self._raise_failure(await self._commit(txn), f"deleting topic {name!r}")

    def watch_topics_marked_for_deletion(self, handler: Callable[[list[str]], None]) -> None:
        """Call handler on the loop with the topics marked for deletion, now and after each change."""

        def on_children(children: list[str]) -> None:
            self._dispatch_value(handler, sorted(children))

        self._zk.ChildrenWatch(paths.ADMIN_DELETE_TOPICS, on_children)

    @staticmethod
    def _raise_failure(results: list[Any], what: str) -> None:
        failure = _first_failure(results)
        if failure is None:
            return
        index, error = failure
        if isinstance(error, (BadVersionError, NoNodeError, NodeExistsError)):
            raise StaleVersionError(f"{what} failed: {type(error).__name__} at operation {index}; "
                                    "ZooKeeper changed since it was read")
        raise StoreError(f"{what} failed: {type(error).__name__} at operation {index}")

    @staticmethod
    def _notify_state_changes(txn: Any, writes: list[StateWrite]) -> None:
        """Set /partition_state_notification to the states this multi writes: its readers learn the
        batch from one znode, however many states it holds (see watch_state_changes)."""
        if writes:
            changes = StateChanges({write.partition: write.state for write in writes})
            txn.set_data(paths.PARTITION_STATE_NOTIFICATION, changes.to_json())

    def _fenced_transaction(self, lease: ControllerLease) -> Any:
        txn = self._zk.transaction()
        txn.check(paths.CONTROLLER_EPOCH, version=lease.epoch_zk_version)
        return txn

    async def _commit(self, txn: Any) -> list[Any]:
        """Commit a transaction whose first operation is the controller epoch check."""
        try:
            results = await self._call(txn.commit_async)
        except KazooException as error:
            raise WriteOutcomeUnknown(
                f"ZooKeeper connection failed during a write ({type(error).__name__}); "
                "its outcome is unknown") from None
        if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            raise ControllerFencedError(
                f"/controller_epoch is no longer at the version this controller won "
                f"({type(results[0]).__name__}): another controller was elected")
        return results

    async def exists(self, path: str) -> bool:
        return await self._version_of(path) is not None

    async def _version_of(self, path: str) -> int | None:
        stat = await self._call(self._zk.exists_async, path)
        return stat.version if stat else None

    # -- topics: watches -------------------------------------------------------------------

    def watch_topic_names(self, handler: Callable[[list[str]], None]) -> None:
        """Call handler on the loop with every topic name, now and after each creation or deletion."""

        def on_children(children: list[str]) -> None:
            self._dispatch_value(handler, sorted(children))

        self._zk.ChildrenWatch(paths.BROKER_TOPICS, on_children)

    def watch_topic(self, name: str, handler: Callable[[Watched[TopicAssignment] | None], None]) -> Watch:
        """Call handler on the loop with the topic's assignment now and after each change (None: gone)."""
        return self._watch_data(paths.topic(name), TopicAssignment.from_json, handler)

    def watch_topic_config(self, name: str, handler: Callable[[Watched[dict[str, str]] | None], None]) -> Watch:
        """Call handler on the loop with the topic's config overrides now and after each change (None: gone)."""
        return self._watch_data(paths.topic_config(name), topic_config_from_json, handler)

    def watch_partition_state(
        self, partition: TopicPartition, handler: Callable[[Watched[LeaderAndIsr] | None], None]
    ) -> Watch:
        """Call handler on the loop with the partition's state now and after each change (None: gone)."""
        path = paths.partition_state(partition.topic, partition.partition)
        return self._watch_data(path, LeaderAndIsr.from_json, handler)

    def watch_state_changes(self, handler: Callable[[Watched[StateChanges]], None]) -> Watch:
        """Call handler on the loop with the states of the controller's latest write, after each one.

        One read per write however many states it changed, where a watch per state costs a
        notification and a read each: on a session of its own (so that those thousands of
        notifications do not queue ahead of it), a reader learns a whole election in one
        round trip. Two writes in quick succession may show only the second; the states of
        the first still arrive through their own watches.
        """

        def decode(data: bytes) -> StateChanges:
            return StateChanges.from_json(data) if data else StateChanges({})

        def on_changes(changes: Watched[StateChanges] | None) -> None:
            if changes is not None:
                handler(changes)

        return self._watch_data(paths.PARTITION_STATE_NOTIFICATION, decode, on_changes)

    def _watch_data(
        self, path: str, decode: Callable[[bytes], T], handler: Callable[[Watched[T] | None], None]
    ) -> Watch:
        """Call handler on the loop with the znode's value now and after every change (None: absent).

        Each change costs one asynchronous read, and kazoo pipelines them on the
        connection: a burst of changes (an election over a thousand partitions)
        is read back in one round of requests, not one round trip after another.
        """
        watch = Watch()

        # Everything below runs on kazoo's threads and never blocks.
        def arm(_event: Any = None) -> None:
            if not watch.cancelled:
                self._zk.get_async(path, watch=arm).rawlink(on_read)

        def on_read(result: Any) -> None:
            if watch.cancelled:
                return
            try:
                data, stat = result.get_nowait()
            except NoNodeError:
                self._dispatch_value(handler, None)
                self._zk.exists_async(path, watch=arm).rawlink(on_exists)
                return
            except Exception:  # connection loss: the read is tried again once reconnected
                self._retry_soon(arm)
                return
            try:
                value = decode(data)
            except RecordError as error:
                log.error("ignoring %s: %s", path, error)
                return
            self._dispatch_value(handler, Watched(value, stat.czxid, stat.mzxid))

        def on_exists(result: Any) -> None:
            try:
                stat = result.get_nowait()
            except Exception:
                self._retry_soon(arm)
                return
            if stat is not None:
                arm()  # created between the read and the existence check

        self._data_watches.append((watch, arm))
        arm()
        return watch

    def _retry_soon(self, arm: Callable[[], None]) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.call_later, WATCH_RETRY_S, arm)

    def _rearm_data_watches(self) -> None:
        """A new session has none of the old one's watches: set every live one again."""
        self._data_watches = [(watch, arm) for watch, arm in self._data_watches if not watch.cancelled]
        for _, arm in self._data_watches:
            arm()

    def _dispatch_value(self, handler: Callable[[Any], None], value: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(handler, value)


def _first_failure(results: list[Any]) -> tuple[int, Exception] | None:
    """The operation that made a multi fail, and its error; None when the multi was applied.

    ZooKeeper marks the operations before the failing one RolledBack and those
    after it RuntimeInconsistency.
    """
    for index, result in enumerate(results):
        if isinstance(result, Exception) and not isinstance(result, (RolledBackError, RuntimeInconsistency)):
            return index, result
    return None


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)

