"""The active controller's writes of topics and partition states, each a fenced multi (DESIGN §7)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.zk import paths
from replog.zk.errors import StoreError, TopicExistsError
from replog.zk.fencing import (
    MULTI_OPS_MAX,
    ControllerLease,
    commit,
    fenced_transaction,
    first_failure,
    raise_failure,
)
from replog.zk.records import LeaderAndIsr, StateChanges, TopicAssignment, TopicPartition, topic_config_to_json
from replog.zk.session import ZkSession


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


class TopicWrites:
    """Creates topics and changes their partitions, states, assignment and config."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session

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
        config_version = await self._session.version_of(paths.topic_config(name))
        txn = fenced_transaction(self._session, lease)
        txn.create(paths.topic(name), assignment.to_json())
        txn.create(paths.topic_partitions(name), b"")
        for partition in sorted(states):
            txn.create(paths.partition(name, partition), b"")
            txn.create(paths.partition_state(name, partition), states[partition].to_json())
        # A config znode left behind (configs set before the topic) is replaced, not refused.
        _put_config(txn, name, config, config_version)
        results = await commit(self._session, txn)
        failure = first_failure(results)
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
            txn = fenced_transaction(self._session, lease)
            # This multi's notification repeats the previous one's states: a reader that only
            # gets to read it once this multi has landed misses neither batch.
            _notify_state_changes(txn, previous + chunk)
            _set_states(txn, chunk)
            results = await commit(self._session, txn)
            failure = first_failure(results)
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
        txn = fenced_transaction(self._session, lease)
        txn.set_data(paths.topic(name), assignment.to_json(), version=expected_zk_version)
        for partition in sorted(states):
            txn.create(paths.partition(name, partition), b"")
            txn.create(paths.partition_state(name, partition), states[partition].to_json())
        results = await commit(self._session, txn)
        raise_failure(results, f"adding partitions to topic {name!r}")
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
        txn = fenced_transaction(self._session, lease)
        txn.set_data(paths.topic(name), assignment.to_json(), version=expected_zk_version)
        _notify_state_changes(txn, writes)
        _set_states(txn, writes)
        results = await commit(self._session, txn)
        raise_failure(results, f"changing the replicas of topic {name!r}")
        return results[1].version, {write.partition: stat.version for write, stat in zip(writes, results[3:])}

    async def write_topic_config(self, lease: ControllerLease, name: str, config: dict[str, str]) -> None:
        """Replace /config/topics/<topic> (created if absent). Raises StaleVersionError,
        ControllerFencedError, WriteOutcomeUnknown."""
        version = await self._session.version_of(paths.topic_config(name))
        txn = fenced_transaction(self._session, lease)
        _put_config(txn, name, config, version)
        raise_failure(await commit(self._session, txn), f"writing the config of topic {name!r}")


def _notify_state_changes(txn: Any, writes: list[StateWrite]) -> None:
    """Set /partition_state_notification to the states this multi writes: its readers learn the
    batch from one znode, however many states it holds (see TopicReads.watch_state_changes)."""
    if writes:
        changes = StateChanges({write.partition: write.state for write in writes})
        txn.set_data(paths.PARTITION_STATE_NOTIFICATION, changes.to_json())


def _set_states(txn: Any, writes: list[StateWrite]) -> None:
    """Replace each partition state on condition of the version its writer last read."""
    for write in writes:
        txn.set_data(paths.partition_state(write.partition.topic, write.partition.partition),
                     write.state.to_json(), version=write.expected_zk_version)


def _put_config(txn: Any, name: str, config: dict[str, str], zk_version: int | None) -> None:
    """Create the topic's config znode (zk_version None: absent) or replace it at zk_version."""
    if zk_version is None:
        txn.create(paths.topic_config(name), topic_config_to_json(config))
    else:
        txn.set_data(paths.topic_config(name), topic_config_to_json(config), version=zk_version)
