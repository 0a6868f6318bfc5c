"""The metadata service: stateless; answers Metadata from an image kept fresh by ZooKeeper watches."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import grpc

from replog import config as configuration
from replog.api.common.v1 import common_pb2
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.config import Setting
from replog.metadata.image import MetadataImage
from replog.rpc.coalesce import CoalescingJob
from replog.zk.store import ControllerInfo, MetadataStore

log = logging.getLogger("replog.metadata")

SETTINGS: tuple[Setting, ...] = (
    Setting("listeners", configuration.host_port, configuration.host_port("127.0.0.1:9094"),
            "host:port the MetadataService listens on"),
    *configuration.ZOOKEEPER_SETTINGS,
    *configuration.SERVER_SETTINGS,
)


class MetadataProcess(metadata_pb2_grpc.MetadataServiceServicer):
    def __init__(self, config: configuration.Config) -> None:
        self._store = MetadataStore(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        self.image = MetadataImage()
        self._refresh = CoalescingJob(self._refresh_brokers)

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        metadata_pb2_grpc.add_MetadataServiceServicer_to_server(self, server)
        return [metadata_pb2.DESCRIPTOR.services_by_name["MetadataService"].full_name]

    async def start(self) -> None:
        await self._store.start()
        cluster_id = await self._store.cluster_id()
        self.image = MetadataImage(cluster_id=cluster_id)
        self.image = self.image.with_brokers(await self._store.live_brokers())
        self._store.watch_broker_ids(self._on_broker_ids)
        self._store.watch_controller(self._on_controller)

    async def stop(self) -> None:
        self._refresh.cancel()
        await self._store.stop()

    def _on_broker_ids(self, _ids: list[int]) -> None:
        self._refresh.request()

    async def _refresh_brokers(self) -> None:
        brokers = await self._store.live_brokers()
        self.image = self.image.with_brokers(brokers)
        log.info("image version %d: live brokers %s", self.image.version, sorted(b.broker_id for b in self.image.brokers))

    def _on_controller(self, controller: ControllerInfo | None) -> None:
        self.image = self.image.with_controller(controller)
        log.info("image version %d: active controller %s", self.image.version,
                 controller.controller_id if controller else "none")

    async def Metadata(
        self, request: metadata_pb2.MetadataRequest, context: grpc.aio.ServicerContext
    ) -> metadata_pb2.MetadataResponse:
        image = self.image
        response = metadata_pb2.MetadataResponse(
            cluster_id=image.cluster_id,
            controller_id=image.controller.controller_id if image.controller else -1,
            image_version=image.version,
        )
        if image.controller is not None:
            response.controller.CopyFrom(common_pb2.ControllerEndpoint(
                controller_id=image.controller.controller_id,
                host=image.controller.host,
                port=image.controller.port,
            ))
        for broker in image.brokers:
            response.brokers.add(broker_id=broker.broker_id, host=broker.host, port=broker.port,
                                 rack=broker.rack or "")
        for name in request.topics:
            response.topics.add(
                error_code=common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"topic {name!r} does not exist",
                name=name,
            )
        return response
