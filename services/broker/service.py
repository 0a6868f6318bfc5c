"""The broker process: owns log directories, registers in ZooKeeper, serves BrokerService."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import grpc

from replog import config as configuration
from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.coordinator.v1 import coordinator_pb2, coordinator_pb2_grpc
from replog.broker import metrics
from replog.broker.broker_channels import BrokerChannels
from replog.broker.controller_channel import ControllerChannel, ProposalKey
from replog.broker.coordinator_servicer import CoordinatorServicer, InternalTopicSettings
from replog.broker.fetcher import LeaderFetcher
from replog.broker.group_coordinator import GroupCoordinators
from replog.broker.group_lag import GroupLagReporter
from replog.broker.group_settings import GROUP_SETTINGS, group_config
from replog.broker.meta import check_log_dirs
from replog.broker.partitions import Partitions, TopicSettings, now_ms
from replog.broker.producer_ids import ProducerIdManager
from replog.broker.servicer import BrokerServicer
from replog.broker.txn_coordinator import TransactionCoordinators
from replog.broker.txn_markers import MarkerSender
from replog.broker.txn_settings import TXN_SETTINGS, txn_config, txn_timers
from replog.broker.txn_verification import TransactionVerifier
from replog.config import Setting
from replog.core.config import ReplicaConfig
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.log_config import COMPRESSION_TYPES, CREATE_TIME, PRODUCER_COMPRESSION, TIMESTAMP_TYPES
from replog.core.messages import AlterPartitionResponse, ProposeIsr, SendFetch
from replog.core.partition_driver import PartitionDriver
from replog.core.topic_partition import TopicPartition
from replog.core.txn.placement import TRANSACTION_STATE_TOPIC
from replog.rpc import logs
from replog.storage import LogConfig, LogConfigError
from replog.zk.store import BrokerRegistration, MetadataStore, Watched

log = logging.getLogger("replog.broker")

SETTINGS: tuple[Setting, ...] = (
    Setting("broker.id", configuration.integer(0, 2**31 - 1), configuration.REQUIRED,
            "this broker's id, unique in the cluster"),
    Setting("listeners", configuration.host_port, configuration.host_port("127.0.0.1:9092"),
            "host:port the BrokerService listens on"),
    Setting("advertised.listeners", configuration.optional(configuration.host_port), None,
            "host:port clients and other brokers use to reach this broker (default: listeners)"),
    Setting("broker.rack", configuration.string, "", "the rack (or zone) of this broker"),
    Setting("log.dirs", configuration.path_list, ("/tmp/replog-logs",),
            "comma-separated directories holding the partition logs"),
    Setting("replica.lag.time.max.ms", configuration.integer(1, 2**31 - 1), 30_000,
            "a follower not caught up for this long leaves the ISR"),
    Setting("replica.fetch.wait.max.ms", configuration.integer(0, 60_000), 500,
            "how long a leader holds a follower's fetch that has nothing to return"),
    Setting("replica.fetch.max.bytes", configuration.integer(1024, 2**31 - 1), 1_048_576,
            "bytes a follower asks for per partition in one fetch"),
    Setting("min.insync.replicas", configuration.integer(1, 1000), 1,
            "default for topics: ISR size below which acks=all produce is refused"),
    Setting("message.max.bytes", configuration.integer(0, 2**31 - 1), 1_048_588,
            "default for topics (max.message.bytes): the largest record batch accepted"),
    Setting("log.segment.bytes", configuration.integer(14, 2**31 - 1), 1 << 30,
            "default for topics (segment.bytes): segment size before a roll"),
    Setting("log.retention.ms", configuration.integer(-1, 2**63 - 1), 7 * 24 * 3_600_000,
            "default for topics (retention.ms)"),
    Setting("log.retention.bytes", configuration.integer(-1, 2**63 - 1), -1,
            "default for topics (retention.bytes)"),
    Setting("log.flush.interval.messages", configuration.integer(1, 2**63 - 1), 2**63 - 1,
            "default for topics (flush.messages): records between fsyncs"),
    Setting("log.flush.interval.ms", configuration.integer(0, 2**63 - 1), 2**63 - 1,
            "default for topics (flush.ms): longest time between fsyncs"),
    Setting("compression.type", configuration.one_of(*COMPRESSION_TYPES), PRODUCER_COMPRESSION,
            "default for topics (compression.type): the codec batches are stored in, or producer"),
    Setting("log.message.timestamp.type", configuration.one_of(*TIMESTAMP_TYPES), CREATE_TIME,
            "default for topics (message.timestamp.type): the producer's time or the leader's"),
    Setting("log.message.timestamp.before.max.ms", configuration.integer(0, 2**63 - 1), 2**63 - 1,
            "default for topics (message.timestamp.before.max.ms): how far before the broker's clock "
            "a record's CreateTime may lie"),
    Setting("log.message.timestamp.after.max.ms", configuration.integer(0, 2**63 - 1), 3_600_000,
            "default for topics (message.timestamp.after.max.ms): how far after the broker's clock "
            "a record's CreateTime may lie"),
    Setting("controlled.shutdown.enable", configuration.boolean, True,
            "on SIGTERM, ask the controller to move this broker's leaderships away before stopping"),
    Setting("controlled.shutdown.max.retries", configuration.integer(1, 100), 3,
            "attempts at a controlled shutdown before stopping anyway"),
    Setting("controlled.shutdown.retry.backoff.ms", configuration.integer(0, 600_000), 5_000,
            "wait between controlled shutdown attempts"),
    Setting("log.retention.check.interval.ms", configuration.integer(100, 2**31 - 1), 300_000,
            "how often retention deletes old segments and compacted topics are cleaned"),
    *GROUP_SETTINGS,
    *TXN_SETTINGS,
    *configuration.ZOOKEEPER_SETTINGS,
    *configuration.SERVER_SETTINGS,
)

# Broker settings that give topics their defaults, under the topic config's name.
TOPIC_DEFAULTS = {
    "min.insync.replicas": "min.insync.replicas",
    "message.max.bytes": "max.message.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "compression.type": "compression.type",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
}
REPLICA_SETTINGS = ("replica.lag.time.max.ms", "replica.fetch.wait.max.ms", "replica.fetch.max.bytes",
                    "transaction.partition.verification.enable")


class BrokerProcess:
    def __init__(self, config: configuration.Config) -> None:
        self.broker_id: int = config["broker.id"]
        listener = config["listeners"]
        self._advertised = config["advertised.listeners"] or listener
        self._rack: str | None = config["broker.rack"] or None
        self._log_dirs: tuple[str, ...] = config["log.dirs"]
        self._metrics_port: int = config["metrics.port"]
        self._session_timeout_ms: int = config["zookeeper.session.timeout.ms"]
        self._max_message_bytes: int = config["socket.request.max.bytes"]
        self._topic_defaults = {topic_name: str(config[name]) for name, topic_name in TOPIC_DEFAULTS.items()}
        self._replica_defaults = {name: config[name] for name in REPLICA_SETTINGS}
        self._store = MetadataStore(
            config["zookeeper.connect"],
            session_timeout_ms=self._session_timeout_ms,
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        self.broker_epoch: int | None = None
        self._controlled_shutdown = (config["controlled.shutdown.enable"], config["controlled.shutdown.max.retries"],
                                     config["controlled.shutdown.retry.backoff.ms"] / 1000)
        self._topic_configs: dict[str, TopicSettings] = {}
        self._fetchers: dict[int, LeaderFetcher] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._controller = ControllerChannel(self.broker_id, self._max_message_bytes, self._on_alter_partition_answer)
        self._partitions = Partitions(self.broker_id, self._log_dirs, self._settings_for,
                                      self._send_fetch, self._propose_isr,
                                      cleanup_interval_ms=config["log.retention.check.interval.ms"],
                                      max_transaction_timeout_ms=config["transaction.max.timeout.ms"],
                                      role_changed=self._on_role_changed)
        self._groups = GroupCoordinators(self._partitions, group_config(config),
                                         retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
                                         commit_timeout_ms=config["offsets.commit.timeout.ms"])
        self._channels = BrokerChannels(self._max_message_bytes)
        self._group_lag = GroupLagReporter(self._groups, self._partitions, self._channels)
        self._producer_ids = ProducerIdManager(lambda: self._store.reserve_producer_id_block(self.broker_id))
        self._transactions = TransactionCoordinators(
            self._partitions, txn_config(config), txn_timers(config), self._producer_ids,
            MarkerSender(self.broker_id, self._partitions, self._channels))
        self._transaction_version: int = config["transaction.version"]  # what this coordinator tells producers
        self._partitions.verify_transaction = TransactionVerifier(self.broker_id, self._partitions,
                                                                  self._transactions, self._channels)
        self._partitions.marker_appended = self._groups.marker_appended
        self._offsets_topic = InternalTopicSettings(OFFSETS_TOPIC, config["offsets.topic.num.partitions"],
                                                    config["offsets.topic.replication.factor"])
        self._transaction_topic = InternalTopicSettings(
            TRANSACTION_STATE_TOPIC, config["transaction.state.log.num.partitions"],
            config["transaction.state.log.replication.factor"], config["transaction.state.log.min.isr"],
            config["transaction.state.log.segment.bytes"])

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        servicer = BrokerServicer(self._partitions, lambda: self.broker_epoch, self._learn_topics)
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(servicer, server)
        coordinator_pb2_grpc.add_CoordinatorServiceServicer_to_server(
            CoordinatorServicer(self._groups, self._partitions.metadata, self._controller, self._producer_ids,
                                self._transactions, self._offsets_topic, self._transaction_topic,
                                transaction_version=self._transaction_version),
            server)
        return [broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name,
                coordinator_pb2.DESCRIPTOR.services_by_name["CoordinatorService"].full_name]

    async def start(self) -> None:
        await self._store.start()
        cluster_id = await self._store.cluster_id()
        check_log_dirs(self._log_dirs, broker_id=self.broker_id, cluster_id=cluster_id)
        metrics.watch_log_dirs(self._log_dirs)
        self._partitions.start()
        self._controller.start()
        self._groups.start()
        self._transactions.start()
        self._group_lag.start()
        metrics.PARTITION_COUNT.set(0)
        metrics.LEADER_COUNT.set(0)
        await self._register()
        self._store.watch_controller(self._controller.controller_changed)
        self._store.on_session_restored(self._on_session_restored)

    async def stop(self) -> None:
        enabled, attempts, backoff_s = self._controlled_shutdown
        if enabled and self.broker_epoch is not None:
            started = time.monotonic()
            remaining = await self._controller.controlled_shutdown(attempts, backoff_s)
            if remaining:
                log.warning("broker %d stops while still leading %d partitions", self.broker_id, len(remaining))
            else:
                log.info("broker %d: controlled shutdown moved its leaderships in %.3f s", self.broker_id,
                         time.monotonic() - started)
        for fetcher in self._fetchers.values():
            await fetcher.stop()
        await self._controller.stop()
        await self._group_lag.stop()
        await self._groups.stop()
        await self._transactions.stop()
        await self._channels.close()
        await self._partitions.close()
        await self._store.stop()

    # -- registration ----------------------------------------------------------------------

    async def _register(self) -> None:
        registration = BrokerRegistration(
            self.broker_id, self._advertised.host, self._advertised.port, self._rack,
            self._metrics_port, broker_epoch=0,
        )
        # A kill -9'd predecessor's znode lives until its session times out.
        wait_s = self._session_timeout_ms / 1000 + 5
        self.broker_epoch = await self._store.register_broker(registration, wait_s=wait_s)
        self._controller.broker_epoch = self.broker_epoch
        log.info("broker %d registered at %s with broker epoch %d",
                 self.broker_id, self._advertised, self.broker_epoch)

    def _on_session_restored(self) -> None:
        # The expired session took our ephemeral registration with it.
        log.warning("broker %d: ZooKeeper session expired; registering again", self.broker_id)
        task = asyncio.get_running_loop().create_task(self._register())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- what partitions need from the broker -------------------------------------------------

    async def _learn_topics(self, topics: set[str]) -> None:
        """Read the configs of topics this broker has not hosted before (from /config/topics), and
        follow their changes from then on."""
        for topic in topics - self._topic_configs.keys():
            self._topic_configs[topic] = self._topic_settings(topic, await self._store.read_topic_config(topic))
            self._store.watch_topic_config(topic, lambda overrides, topic=topic: self._on_topic_config(topic, overrides))

    def _topic_settings(self, topic: str, overrides: dict[str, str]) -> TopicSettings:
        merged = {**self._topic_defaults, **overrides}
        try:
            log_config = LogConfig.from_topic_config(merged)
            replica_config = ReplicaConfig.from_properties({**self._replica_defaults, **{
                k: v for k, v in merged.items() if k == "min.insync.replicas"}})
        except (LogConfigError, ValueError) as error:
            log.error("topic %s has an invalid config (%s); using the broker's defaults", topic, error)
            log_config = LogConfig.from_topic_config(self._topic_defaults)
            replica_config = ReplicaConfig.from_properties(self._replica_defaults)
        return TopicSettings(log_config, replica_config)

    def _on_topic_config(self, topic: str, overrides: Watched[dict[str, str]] | None) -> None:
        """A topic's config changed (AlterConfigs): its partitions here take it at once."""
        if overrides is None:
            return  # the topic is being deleted: its partitions keep what they have until they stop
        settings = self._topic_settings(topic, overrides.value)
        if settings == self._topic_configs.get(topic):
            return
        self._topic_configs[topic] = settings
        changed = self._partitions.reconfigure(topic, settings)
        log.info("topic %s: config changed to %s; %d partitions here follow it", topic,
                 overrides.value or "the defaults", changed)

    def _settings_for(self, topic: str) -> TopicSettings:
        return self._topic_configs[topic]

    def _on_role_changed(self, driver: PartitionDriver) -> None:
        if driver.topic == OFFSETS_TOPIC:
            self._groups.leadership_changed(driver)
        elif driver.topic == TRANSACTION_STATE_TOPIC:
            self._transactions.leadership_changed(driver)

    def _send_fetch(self, driver: PartitionDriver, message: SendFetch) -> None:
        fetcher = self._fetchers.get(message.leader_id)
        if fetcher is None:
            leader_id = message.leader_id
            fetcher = LeaderFetcher(self._partitions, leader_id, lambda: self._partitions.metadata.address_of(leader_id),
                                    lambda: self.broker_epoch or -1, self._max_message_bytes)
            self._fetchers[leader_id] = fetcher
        fetcher.add(driver, message)

    def _propose_isr(self, driver: PartitionDriver, message: ProposeIsr) -> None:
        log.info("%s proposes ISR %s (leader epoch %d, partition epoch %d)", driver.name,
                 list(message.request.isr), message.request.leader_epoch, message.request.partition_epoch,
                 extra=logs.fields("isr_proposed", topic=driver.topic, partition=driver.partition))
        self._controller.propose(driver.topic, driver.partition, message.proposal_id, message.request)

    def _on_alter_partition_answer(self, key: ProposalKey, answer: AlterPartitionResponse) -> None:
        topic, partition, proposal_id = key
        driver = self._partitions.by_name.get(TopicPartition(topic, partition))
        if driver is not None:
            driver.alter_partition_response(proposal_id, answer, now_ms())
