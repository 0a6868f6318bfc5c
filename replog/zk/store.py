"""MetadataStore: what the services ask of ZooKeeper, over one session used from one asyncio loop.

Each concern lives in a module of its own, and this class only puts them together:

    session.py         the kazoo client, its session events, results handed to the loop
    watches.py         data watches (read again, re-armed on a new session) and children watches
    fencing.py         the controller lease and the fenced multi every controller write is
    cluster_id.py      /cluster/id
    producer_ids.py    reserving blocks of producer ids
    brokers.py         broker registration and the live brokers
    controller.py      the controller election: elect, read the epoch, watch, resign
    topic_reads.py     topics, configs and partition states, read once or watched
    topic_writes.py    the controller's writes of topics and partition states
    topic_deletion.py  marking topics for deletion and removing their znodes
    errors.py          the exceptions callers catch

The parts are composed, not inherited from a shared base: each is built from what it needs
(the session, the watches) and nothing more, none can reach into another's helpers or shadow
its names, and the whole front API the services use is listed here, one forward per method.
The types callers use are importable from this module as before.
"""

from __future__ import annotations

from collections.abc import Callable

from replog.core.producer_ids import ProducerIdBlock
from replog.zk.brokers import BrokerRegistration, BrokerRegistry
from replog.zk.cluster_id import cluster_id
from replog.zk.controller import ControllerElection, ControllerInfo
from replog.zk.errors import (
    ControllerFencedError,
    StaleVersionError,
    StoreError,
    TopicExistsError,
    WriteOutcomeUnknown,
)
from replog.zk.fencing import MULTI_OPS_MAX, ControllerLease
from replog.zk.producer_ids import reserve_producer_id_block
from replog.zk.records import LeaderAndIsr, StateChanges, TopicAssignment, TopicPartition
from replog.zk.session import ZkSession
from replog.zk.topic_deletion import TopicDeletion
from replog.zk.topic_reads import TopicReads, TopicSnapshot, VersionedState
from replog.zk.topic_writes import StateWrite, StateWriteResult, TopicWrites
from replog.zk.watches import Watch, Watched, ZnodeWatches

__all__ = [
    "MULTI_OPS_MAX",
    "BrokerRegistration",
    "ControllerFencedError",
    "ControllerInfo",
    "ControllerLease",
    "MetadataStore",
    "StaleVersionError",
    "StateWrite",
    "StateWriteResult",
    "StoreError",
    "TopicExistsError",
    "TopicSnapshot",
    "VersionedState",
    "Watch",
    "Watched",
    "WriteOutcomeUnknown",
]


class MetadataStore:
    """One ZooKeeper session, used from one asyncio loop."""

    def __init__(self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int) -> None:
        self._session = ZkSession(connect, session_timeout_ms=session_timeout_ms,
                                  connection_timeout_ms=connection_timeout_ms)
        watches = ZnodeWatches(self._session)
        self._brokers = BrokerRegistry(self._session, watches)
        self._controller = ControllerElection(self._session)
        self._reads = TopicReads(self._session, watches)
        self._writes = TopicWrites(self._session)
        self._deletion = TopicDeletion(self._session, watches)

    # -- the session (session.py) ----------------------------------------------------------

    async def start(self) -> None:
        await self._session.start()

    async def stop(self) -> None:
        await self._session.stop()

    @property
    def session_id(self) -> int | None:
        return self._session.session_id

    def on_session_lost(self, handler: Callable[[], None]) -> None:
        self._session.on_session_lost(handler)

    def on_session_restored(self, handler: Callable[[], None]) -> None:
        self._session.on_session_restored(handler)

    async def exists(self, path: str) -> bool:
        return await self._session.version_of(path) is not None

    async def reserve_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        return await reserve_producer_id_block(self._session, broker_id)

    async def cluster_id(self) -> str:
        return await cluster_id(self._session)

    # -- brokers (brokers.py) ----------------------------------------------------------------

    async def register_broker(self, registration: BrokerRegistration, *, wait_s: float) -> int:
        return await self._brokers.register_broker(registration, wait_s=wait_s)

    async def live_broker_ids(self) -> list[int]:
        return await self._brokers.live_broker_ids()

    async def live_brokers(self) -> dict[int, BrokerRegistration]:
        return await self._brokers.live_brokers()

    def watch_broker_ids(self, handler: Callable[[list[int]], None]) -> None:
        self._brokers.watch_broker_ids(handler)

    # -- the controller (controller.py) ------------------------------------------------------

    async def elect_controller(self, controller_id: int, host: str, port: int) -> ControllerLease | None:
        return await self._controller.elect_controller(controller_id, host, port)

    async def read_controller_epoch(self) -> tuple[int, int] | None:
        return await self._controller.read_controller_epoch()

    def watch_controller(self, handler: Callable[[ControllerInfo | None], None]) -> None:
        self._controller.watch_controller(handler)

    async def resign_controller(self, lease: ControllerLease) -> None:
        await self._controller.resign_controller(lease)

    # -- topics, read once or watched (topic_reads.py) ---------------------------------------

    async def topic_names(self) -> list[str]:
        return await self._reads.topic_names()

    async def read_topics(self, names: list[str] | None = None) -> dict[str, TopicSnapshot]:
        return await self._reads.read_topics(names)

    async def read_topic(self, name: str) -> TopicSnapshot | None:
        return await self._reads.read_topic(name)

    async def read_partition_state(self, partition: TopicPartition) -> VersionedState | None:
        return await self._reads.read_partition_state(partition)

    async def read_topic_config(self, name: str) -> dict[str, str]:
        return await self._reads.read_topic_config(name)

    def watch_topic_names(self, handler: Callable[[list[str]], None]) -> None:
        self._reads.watch_topic_names(handler)

    def watch_topic(self, name: str, handler: Callable[[Watched[TopicAssignment] | None], None]) -> Watch:
        return self._reads.watch_topic(name, handler)

    def watch_topic_config(self, name: str, handler: Callable[[Watched[dict[str, str]] | None], None]) -> Watch:
        return self._reads.watch_topic_config(name, handler)

    def watch_partition_state(
        self, partition: TopicPartition, handler: Callable[[Watched[LeaderAndIsr] | None], None]
    ) -> Watch:
        return self._reads.watch_partition_state(partition, handler)

    def watch_state_changes(self, handler: Callable[[Watched[StateChanges]], None]) -> Watch:
        return self._reads.watch_state_changes(handler)

    # -- the controller's topic writes, each fenced by its lease (topic_writes.py) -----------

    async def create_topic(self, lease: ControllerLease, name: str, assignment: TopicAssignment,
                           config: dict[str, str], states: dict[int, LeaderAndIsr]) -> None:
        await self._writes.create_topic(lease, name, assignment, config, states)

    async def write_partition_states(self, lease: ControllerLease, writes: list[StateWrite]) -> StateWriteResult:
        return await self._writes.write_partition_states(lease, writes)

    async def add_partitions(self, lease: ControllerLease, name: str, assignment: TopicAssignment,
                             expected_zk_version: int, states: dict[int, LeaderAndIsr]) -> int:
        return await self._writes.add_partitions(lease, name, assignment, expected_zk_version, states)

    async def write_assignment(
        self, lease: ControllerLease, name: str, assignment: TopicAssignment, expected_zk_version: int,
        writes: list[StateWrite],
    ) -> tuple[int, dict[TopicPartition, int]]:
        return await self._writes.write_assignment(lease, name, assignment, expected_zk_version, writes)

    async def write_topic_config(self, lease: ControllerLease, name: str, config: dict[str, str]) -> None:
        await self._writes.write_topic_config(lease, name, config)

    # -- topic deletion (topic_deletion.py) --------------------------------------------------

    async def topics_marked_for_deletion(self) -> list[str]:
        return await self._deletion.topics_marked_for_deletion()

    def watch_topics_marked_for_deletion(self, handler: Callable[[list[str]], None]) -> None:
        self._deletion.watch_topics_marked_for_deletion(handler)

    async def mark_topics_for_deletion(self, lease: ControllerLease, names: list[str]) -> None:
        await self._deletion.mark_topics_for_deletion(lease, names)

    async def delete_topic(self, lease: ControllerLease, name: str) -> None:
        await self._deletion.delete_topic(lease, name)
