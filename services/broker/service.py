"""The broker process: owns log directories, registers in ZooKeeper, serves BrokerService."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import grpc
import prometheus_client

from replog import config as configuration
from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.broker.meta import check_log_dirs
from replog.config import Setting
from replog.zk.store import BrokerRegistration, MetadataStore

log = logging.getLogger("replog.broker")

SETTINGS: tuple[Setting, ...] = (
    Setting("broker.id", configuration.integer(0, 2**31 - 1), configuration.REQUIRED,
            "this broker's id, unique in the cluster"),
    Setting("listeners", configuration.host_port, configuration.host_port("127.0.0.1:9092"),
            "host:port the BrokerService listens on"),
    Setting("advertised.listeners", configuration.string, "",
            "host:port clients and other brokers use to reach this broker (default: listeners)"),
    Setting("broker.rack", configuration.string, "", "the rack (or zone) of this broker"),
    Setting("log.dirs", configuration.path_list, ("/tmp/replog-logs",),
            "comma-separated directories holding the partition logs"),
    *configuration.ZOOKEEPER_SETTINGS,
    *configuration.SERVER_SETTINGS,
)

PARTITION_COUNT = prometheus_client.Gauge(
    "replog_partition_count", "Partition replicas hosted on this broker."
)
LEADER_COUNT = prometheus_client.Gauge(
    "replog_leader_count", "Partitions this broker leads."
)


class BrokerProcess:
    def __init__(self, config: configuration.Config) -> None:
        self.broker_id: int = config["broker.id"]
        listener = config["listeners"]
        advertised = config["advertised.listeners"]
        self._advertised = configuration.host_port(advertised) if advertised else listener
        self._rack: str | None = config["broker.rack"] or None
        self._log_dirs: tuple[str, ...] = config["log.dirs"]
        self._metrics_port: int = config["metrics.port"]
        self._session_timeout_ms: int = config["zookeeper.session.timeout.ms"]
        self._store = MetadataStore(
            config["zookeeper.connect"],
            session_timeout_ms=self._session_timeout_ms,
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        self.broker_epoch: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(broker_pb2_grpc.BrokerServiceServicer(), server)
        return [broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name]

    async def start(self) -> None:
        await self._store.start()
        cluster_id = await self._store.cluster_id()
        check_log_dirs(self._log_dirs, broker_id=self.broker_id, cluster_id=cluster_id)
        PARTITION_COUNT.set(0)
        LEADER_COUNT.set(0)
        await self._register()
        self._store.on_session_restored(self._on_session_restored)

    async def stop(self) -> None:
        await self._store.stop()

    async def _register(self) -> None:
        registration = BrokerRegistration(
            self.broker_id, self._advertised.host, self._advertised.port, self._rack,
            self._metrics_port, broker_epoch=0,
        )
        # A kill -9'd predecessor's znode lives until its session times out.
        wait_s = self._session_timeout_ms / 1000 + 5
        self.broker_epoch = await self._store.register_broker(registration, wait_s=wait_s)
        log.info("broker %d registered at %s with broker epoch %d",
                 self.broker_id, self._advertised, self.broker_epoch)

    def _on_session_restored(self) -> None:
        # The expired session took our ephemeral registration with it.
        log.warning("broker %d: ZooKeeper session expired; registering again", self.broker_id)
        task = asyncio.get_running_loop().create_task(self._register())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
