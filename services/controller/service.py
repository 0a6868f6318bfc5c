"""The controller process: contends for /controller; the winner is the active controller.

Only the active controller acts (`replog.controller.driver`). A controller
that loses its ZooKeeper session (paused past the session timeout, cut off)
resigns at once: its lease is gone, and any write it still attempts is fenced
by the controller epoch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import grpc

from replog import config as configuration
from replog.api.controller.v1 import controller_pb2, controller_pb2_grpc
from replog.config import Setting
from replog.controller.driver import Controller, ControllerSettings
from replog.controller.leadership import RebalanceSettings
from replog.controller.metrics import controller_metrics
from replog.controller.servicer import ControllerServicer
from replog.core.topic_plan import PARTITIONS_PER_TOPIC_MAX, TopicDefaults
from replog.rpc.coalesce import CoalescingJob
from replog.zk.store import ControllerInfo, ControllerLease, MetadataStore

log = logging.getLogger("replog.controller")

SETTINGS: tuple[Setting, ...] = (
    Setting("controller.id", configuration.integer(0, 2**31 - 1), configuration.REQUIRED,
            "this controller's id, unique among controllers"),
    Setting("listeners", configuration.host_port, configuration.host_port("127.0.0.1:9093"),
            "host:port the ControllerService listens on"),
    Setting("num.partitions", configuration.integer(1, PARTITIONS_PER_TOPIC_MAX), 1,
            "partitions of a topic created without a partition count"),
    Setting("default.replication.factor", configuration.integer(1, 2**15 - 1), 1,
            "replication factor of a topic created without one"),
    Setting("controller.socket.timeout.ms", configuration.integer(100, 600_000), 30_000,
            "deadline of each request from the controller to a broker, in ms"),
    Setting("auto.leader.rebalance.enable", configuration.boolean, True,
            "move leadership back to preferred replicas when leaders are imbalanced"),
    Setting("leader.imbalance.check.interval.seconds", configuration.integer(1, 2**31 - 1), 300,
            "how often the active controller checks the leader imbalance, in seconds"),
    Setting("leader.imbalance.per.broker.percentage", configuration.integer(0, 100), 10,
            "share of a broker's preferred partitions led elsewhere above which they move back, in percent"),
    *configuration.ZOOKEEPER_SETTINGS,
    *configuration.SERVER_SETTINGS,
)


class ControllerProcess:
    def __init__(self, config: configuration.Config) -> None:
        self.controller_id: int = config["controller.id"]
        self._listener: configuration.HostPort = config["listeners"]
        self._store = MetadataStore(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        self._controller = Controller(
            self._store,
            ControllerSettings(
                controller_id=self.controller_id,
                defaults=TopicDefaults(num_partitions=config["num.partitions"],
                                       replication_factor=config["default.replication.factor"]),
                request_timeout_s=config["controller.socket.timeout.ms"] / 1000,
                message_bytes_max=config["socket.request.max.bytes"],
                rebalance=RebalanceSettings(
                    enabled=config["auto.leader.rebalance.enable"],
                    check_interval_s=config["leader.imbalance.check.interval.seconds"],
                    imbalance_percentage_max=config["leader.imbalance.per.broker.percentage"],
                ),
            ),
            on_fenced=self._on_fenced,
        )
        self.lease: ControllerLease | None = None
        self._election = CoalescingJob(self._try_elect)
        controller_metrics()  # every metric is exported from the start, at 0

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        controller_pb2_grpc.add_ControllerServiceServicer_to_server(ControllerServicer(self._controller), server)
        return [controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name]

    async def start(self) -> None:
        await self._store.start()
        self._controller.start()
        self._store.on_session_lost(self._on_session_lost)
        self._store.on_session_restored(self._on_session_restored)
        self._store.watch_controller(self._on_controller_changed)

    async def stop(self) -> None:
        self._election.cancel()
        lease = self.lease
        self._set_lease(None)
        await self._controller.stop()
        if lease is not None:
            # Hand over at once instead of making the others wait for the session timeout.
            await self._store.resign_controller(lease)
            log.info("controller %d resigned (epoch %d) on shutdown", self.controller_id, lease.epoch)
        await self._store.stop()

    def _on_controller_changed(self, active: ControllerInfo | None) -> None:
        if active is None:
            self._election.request()
        elif self.lease is not None and active.controller_id != self.controller_id:
            log.warning("controller %d sees controller %d active; resigning",
                        self.controller_id, active.controller_id)
            self._set_lease(None)

    async def _try_elect(self) -> None:
        if self.lease is not None:
            return
        lease = await self._store.elect_controller(self.controller_id, self._listener.host, self._listener.port)
        if lease is None:
            log.info("controller %d: another controller is active", self.controller_id)
            return
        self._set_lease(lease)
        log.info("controller %d is active with controller epoch %d", self.controller_id, lease.epoch)

    def _on_session_lost(self) -> None:
        if self.lease is not None:
            log.warning(
                "controller %d lost its ZooKeeper session; resigning controller epoch %d",
                self.controller_id, self.lease.epoch,
            )
        self._set_lease(None)

    def _on_session_restored(self) -> None:
        log.info("controller %d has a new ZooKeeper session; standing as a candidate", self.controller_id)
        self._election.request()

    def _on_fenced(self, lease: ControllerLease) -> None:
        if self.lease is lease:
            log.warning("controller %d resigns controller epoch %d: a newer controller fenced it",
                        self.controller_id, lease.epoch)
            self._set_lease(None)

    def _set_lease(self, lease: ControllerLease | None) -> None:
        if lease is self.lease:
            return
        self.lease = lease
        controller_metrics().active_controller_count.set(1 if lease else 0)
        controller_metrics().controller_epoch.set(lease.epoch if lease else 0)
        if lease is None:
            self._controller.deactivate()
        else:
            self._controller.activate(lease)
