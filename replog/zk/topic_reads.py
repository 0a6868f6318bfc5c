"""What ZooKeeper holds about topics, read once (with versions, for conditional writes) or watched."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

from kazoo.exceptions import NoNodeError

from replog.zk import paths
from replog.zk.records import (
    LeaderAndIsr,
    RecordError,
    StateChanges,
    TopicAssignment,
    TopicPartition,
    topic_config_from_json,
)
from replog.zk.session import ZkSession
from replog.zk.watches import Watch, Watched, ZnodeWatches

log = logging.getLogger(__name__)


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


class TopicReads:
    """Reads and watches of the topic znodes, their configs and their partition states."""

    def __init__(self, session: ZkSession, watches: ZnodeWatches) -> None:
        self._session = session
        self._watches = watches

    async def topic_names(self) -> list[str]:
        return sorted(await self._session.call(self._session.client.get_children_async, paths.BROKER_TOPICS))

    async def read_topics(self, names: list[str] | None = None) -> dict[str, TopicSnapshot]:
        """Every topic (or the named ones that exist) with assignment, config and states."""
        if names is None:
            names = await self.topic_names()
        snapshots = await asyncio.gather(*(self.read_topic(name) for name in names))
        return {s.name: s for s in snapshots if s is not None}

    async def read_topic(self, name: str) -> TopicSnapshot | None:
        try:
            data, stat = await self._session.call(self._session.client.get_async, paths.topic(name))
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
            data, stat = await self._session.call(
                self._session.client.get_async, paths.partition_state(partition.topic, partition.partition))
        except NoNodeError:
            return None
        try:
            return VersionedState(LeaderAndIsr.from_json(data), stat.version, stat.mtime)
        except RecordError as error:
            log.error("ignoring the state of %s: %s", partition, error)
            return None

    async def read_topic_config(self, name: str) -> dict[str, str]:
        try:
            data, _ = await self._session.call(self._session.client.get_async, paths.topic_config(name))
        except NoNodeError:
            return {}
        return topic_config_from_json(data)

    # -- watched -------------------------------------------------------------------------------

    def watch_topic_names(self, handler: Callable[[list[str]], None]) -> None:
        """Call handler on the loop with every topic name, now and after each creation or deletion."""
        self._watches.children(paths.BROKER_TOPICS, str, handler)

    def watch_topic(self, name: str, handler: Callable[[Watched[TopicAssignment] | None], None]) -> Watch:
        """Call handler on the loop with the topic's assignment now and after each change (None: gone)."""
        return self._watches.data(paths.topic(name), TopicAssignment.from_json, handler)

    def watch_topic_config(self, name: str, handler: Callable[[Watched[dict[str, str]] | None], None]) -> Watch:
        """Call handler on the loop with the topic's config overrides now and after each change (None: gone)."""
        return self._watches.data(paths.topic_config(name), topic_config_from_json, handler)

    def watch_partition_state(
        self, partition: TopicPartition, handler: Callable[[Watched[LeaderAndIsr] | None], None]
    ) -> Watch:
        """Call handler on the loop with the partition's state now and after each change (None: gone)."""
        path = paths.partition_state(partition.topic, partition.partition)
        return self._watches.data(path, LeaderAndIsr.from_json, handler)

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

        return self._watches.data(paths.PARTITION_STATE_NOTIFICATION, decode, on_changes)
