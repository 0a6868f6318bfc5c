"""Topic deletion: the /admin/delete_topics marks and the removal of a marked topic's znodes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kazoo.exceptions import NoNodeError

from replog.zk import paths
from replog.zk.fencing import MULTI_OPS_MAX, ControllerLease, commit, fenced_transaction, raise_failure
from replog.zk.session import ZkSession
from replog.zk.watches import ZnodeWatches


class TopicDeletion:
    """Marks topics for deletion, lists and watches the marks, and removes marked topics."""

    def __init__(self, session: ZkSession, watches: ZnodeWatches) -> None:
        self._session = session
        self._watches = watches

    async def topics_marked_for_deletion(self) -> list[str]:
        return sorted(await self._session.call(self._session.client.get_children_async, paths.ADMIN_DELETE_TOPICS))

    def watch_topics_marked_for_deletion(self, handler: Callable[[list[str]], None]) -> None:
        """Call handler on the loop with the topics marked for deletion, now and after each change."""
        self._watches.children(paths.ADMIN_DELETE_TOPICS, str, handler)

    async def mark_topics_for_deletion(self, lease: ControllerLease, names: list[str]) -> None:
        """Create /admin/delete_topics/<topic> for each topic not marked yet, in one multi.
        Raises ControllerFencedError, WriteOutcomeUnknown."""
        marked = set(await self.topics_marked_for_deletion())
        missing = [name for name in names if name not in marked]
        if not missing:
            return
        txn = fenced_transaction(self._session, lease)
        for name in missing:
            txn.create(paths.topic_deletion(name), b"")
        raise_failure(await commit(self._session, txn), f"marking {missing} for deletion")

    async def delete_topic(self, lease: ControllerLease, name: str) -> None:
        """Remove a topic marked for deletion: its partition states and their parents, in
        multis as large as ZooKeeper takes, then one last multi with the topic znode, its
        config and the deletion mark. A controller that dies between these multis leaves the
        mark, and the next one finishes the deletion. Raises ControllerFencedError,
        WriteOutcomeUnknown."""
        operations = await self._partition_znodes(name)
        for start in range(0, len(operations), MULTI_OPS_MAX - 1):
            txn = fenced_transaction(self._session, lease)
            for path in operations[start:start + MULTI_OPS_MAX - 1]:
                txn.delete(path)
            raise_failure(await commit(self._session, txn), f"deleting the partitions of topic {name!r}")
        txn = fenced_transaction(self._session, lease)
        for path in (paths.topic_partitions(name), paths.topic(name), paths.topic_config(name),
                     paths.topic_deletion(name)):
            if await self._session.version_of(path) is not None:
                txn.delete(path)
        raise_failure(await commit(self._session, txn), f"deleting topic {name!r}")

    async def _partition_znodes(self, name: str) -> list[str]:
        """The topic's partition znodes that exist, each state before its parent."""
        try:
            partitions = await self._session.call(self._session.client.get_children_async,
                                                  paths.topic_partitions(name))
        except NoNodeError:
            partitions = []
        indexes = sorted(int(child) for child in partitions)
        state_versions = await asyncio.gather(
            *(self._session.version_of(paths.partition_state(name, p)) for p in indexes))
        znodes: list[str] = []
        for partition, state_version in zip(indexes, state_versions):
            if state_version is not None:
                znodes.append(paths.partition_state(name, partition))
            znodes.append(paths.partition(name, partition))
        return znodes
