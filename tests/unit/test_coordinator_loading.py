"""Coordinator shards loading on a real broker's partitions (one broker, its own log dir).

A broker whose group coordinator is still loading a partition of __consumer_offsets says so when
asked to list its groups, rather than leaving that partition's groups out (Kafka answers
COORDINATOR_LOAD_IN_PROGRESS; the admin client then asks again). Without it, `replog groups list`
run during a coordinator failover silently misses groups.

And a load never stays stuck: whatever the log holds loads, and a loader that fails for any other
reason says so in the log, with its traceback, and starts again."""

import asyncio
import logging

from replog.api.coordinator.v1 import coordinator_pb2
from replog.broker import coordinator_shards, metrics
from replog.broker.broker_channels import BrokerChannels
from replog.broker.coordinator_servicer import CoordinatorServicer, InternalTopicSettings
from replog.broker.group_coordinator import GroupCoordinators
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.producer_ids import ProducerIdManager
from replog.broker.txn_coordinator import TransactionCoordinators
from replog.broker.txn_markers import MarkerSender
from replog.broker.txn_settings import TxnTimers
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.group.records import OffsetCommitValue, offset_commit
from replog.core.group.requests import GroupConfig
from replog.core.messages import PartitionState
from replog.core.producer_ids import ProducerIdBlock
from replog.core.topic_partition import TopicPartition
from replog.core.txn.metadata import TransactionMetadata
from replog.core.txn.records import TxnRecord
from replog.core.txn.requests import TxnConfig
from replog.core.txn.state import TxnState
from replog.storage import LogConfig


class Broker:
    """One broker's partitions in a log dir, and the coordinators `make` builds over them, loading the
    partitions of their topic this broker is made leader of."""

    def __init__(self, tmp_path, make) -> None:
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        self.partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None,
                                     role_changed=self._role_changed)
        self.partitions.start()
        self.coordinators = make(self.partitions)

    def _role_changed(self, driver) -> None:
        if driver.topic == self.coordinators.topic:
            self.coordinators.leadership_changed(driver)

    def lead(self, leader_epoch: int, partition: int = 0) -> None:
        self.partitions.leader_and_isr(self.coordinators.topic, partition, PartitionState(
            leader=1, leader_epoch=leader_epoch, isr=(1,), partition_epoch=leader_epoch, replicas=(1,)))

    async def active_shard(self, what: str):
        deadline = asyncio.get_running_loop().time() + 10
        while not (shards := self.coordinators.active_shards()):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)
        return shards[0]

    async def close(self) -> None:
        await self.coordinators.stop()  # no replay left pending when the loop closes
        await self.partitions.close()


def test_list_groups_while_a_coordinator_loads_answers_load_in_progress(tmp_path):
    async def scenario():
        broker = Broker(tmp_path, lambda partitions: GroupCoordinators(partitions, GroupConfig(), 600_000, 5_000))
        servicer = CoordinatorServicer(broker.coordinators, None, None, None, None, InternalTopicSettings(),
                                       InternalTopicSettings())
        # Leader of an offsets partition: its shard replays the partition before it serves (LOADING).
        broker.lead(leader_epoch=1)
        response = await servicer.ListGroups(coordinator_pb2.ListGroupsRequest(), None)
        await broker.close()
        return ErrorCode.of(response.error_code)

    assert asyncio.run(scenario()) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


# -- a load never stays stuck -------------------------------------------------------------------------------


def _copier(state: TxnState, epoch: int, *partitions: TopicPartition) -> TxnRecord:
    return TxnRecord("copier-0", TransactionMetadata("copier-0", 1000, epoch, 60_000, state, 1, frozenset(partitions),
                                                     1, epoch - 1))


def test_a_transaction_coordinator_loads_a_log_whose_records_of_an_id_are_out_of_the_tables_order(tmp_path):
    """The __transaction_state-33 segment a broker could not load (its loader died on PREPARE_COMMIT -->
    ONGOING, and the partition's transactional ids were answered COORDINATOR_LOAD_IN_PROGRESS for minutes)."""
    offsets, out = TopicPartition(OFFSETS_TOPIC, 33), TopicPartition("eos-out", 0)
    log = [_copier(TxnState.PREPARE_COMMIT, 14, offsets, out), _copier(TxnState.ONGOING, 14, offsets),
           _copier(TxnState.ONGOING, 14, offsets, out), _copier(TxnState.COMPLETE_COMMIT, 14),
           _copier(TxnState.PREPARE_COMMIT, 15, offsets, out), _copier(TxnState.COMPLETE_COMMIT, 15)]

    async def reserve():
        return ProducerIdBlock(1, 5000, 5999)

    def transaction_coordinators(partitions):
        return TransactionCoordinators(partitions, TxnConfig(), TxnTimers(), ProducerIdManager(reserve),
                                       MarkerSender(1, partitions, BrokerChannels(1 << 20)))

    async def scenario():
        broker = Broker(tmp_path, transaction_coordinators)
        try:
            broker.lead(leader_epoch=1)
            shard = await broker.active_shard("the empty partition to load")
            assert await broker.coordinators.write(shard, log) == ErrorCode.NONE
            broker.lead(leader_epoch=2)  # a new leadership loads it again
            return (await broker.active_shard("the partition to load again")).core.get("copier-0")
        finally:
            await broker.close()

    assert asyncio.run(scenario()) == log[-1].metadata, "loaded, the last record being the state"


def test_a_coordinator_load_that_fails_is_logged_with_its_traceback_and_started_again(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(coordinator_shards, "LOAD_RETRY_BACKOFF_S", 0.01)
    failures = []

    class Flaky(GroupCoordinators):
        def replay_batch(self, shard, batch):
            if not failures:
                failures.append(batch)
                raise RuntimeError("a bug in replay")
            return super().replay_batch(shard, batch)

    async def scenario():
        broker = Broker(tmp_path, lambda partitions: Flaky(partitions, GroupConfig(), 600_000, 5_000))
        try:
            broker.lead(leader_epoch=1)
            shard = await broker.active_shard("the empty partition to load")
            commit = offset_commit("g", "t", 0, OffsetCommitValue(42, -1, "", 1))
            assert await broker.coordinators.write(shard, [commit]) == ErrorCode.NONE
            broker.lead(leader_epoch=2)
            shard = await broker.active_shard("the partition to load on the second attempt")
            return shard.core.fetch_offsets("g", None)
        finally:
            await broker.close()

    with caplog.at_level(logging.ERROR, logger="replog.broker"):
        offsets = asyncio.run(scenario())
    assert offsets[TopicPartition("t", 0)].offset == 42
    (failed,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "group coordinator failed to load (attempt 1): a bug in replay; it loads again" in failed.getMessage()
    assert failed.exc_info is not None, "with its traceback"
    assert metrics.COORDINATOR_LOAD_FAILURES.labels(OFFSETS_TOPIC)._value.get() >= 1
