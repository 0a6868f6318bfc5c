"""The metadata service: stateless; answers Metadata from an image kept fresh by ZooKeeper watches."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence

import grpc
import prometheus_client

from replog import config as configuration
from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.config import Setting
from replog.core.errors import ErrorCode
from replog.metadata import render
from replog.metadata.image import MetadataImage, TopicImage
from replog.metadata.topics import TopicFollower
from replog.rpc import status, streams
from replog.rpc.coalesce import CoalescingJob
from replog.zk.records import StateChanges
from replog.zk.store import ControllerInfo, MetadataStore, Watched

log = logging.getLogger("replog.metadata")

SETTINGS: tuple[Setting, ...] = (
    Setting("listeners", configuration.host_port, configuration.host_port("127.0.0.1:9094"),
            "host:port the MetadataService listens on"),
    *configuration.ZOOKEEPER_SETTINGS,
    *configuration.SERVER_SETTINGS,
)

# Each WatchMetadata stream holds one wake-up flag; this bounds how many may be open.
WATCH_STREAMS_MAX = 1000

PROPAGATION_SECONDS = prometheus_client.Histogram(
    "replog_metadata_propagation_seconds",
    "From a controller's write of partition states in ZooKeeper (the znode's modification time) until "
    "this metadata service serves them.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class MetadataProcess(metadata_pb2_grpc.MetadataServiceServicer):
    def __init__(self, config: configuration.Config) -> None:
        self._store, self._notifications = (MetadataStore(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        ) for _ in range(2))
        self.image = MetadataImage()
        self._refresh = CoalescingJob(self._refresh_brokers)
        self._topics = TopicFollower(self._store, self._on_topic_dirty)
        self._dirty_topics: set[str] = set()
        self._flush = CoalescingJob(self._flush_topics)
        # ZooKeeper's time (ms) of the oldest controller write not yet served; 0 when none waits.
        self._written_ms = 0
        self._brokers_to_confirm = False
        self._watchers: set[asyncio.Event] = set()

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        metadata_pb2_grpc.add_MetadataServiceServicer_to_server(self, server)
        return [metadata_pb2.DESCRIPTOR.services_by_name["MetadataService"].full_name]

    async def start(self) -> None:
        await self._store.start()
        cluster_id = await self._store.cluster_id()
        self._publish(MetadataImage(cluster_id=cluster_id).with_brokers(await self._store.live_brokers()))
        self._store.watch_broker_ids(self._on_broker_ids)
        self._store.watch_controller(self._on_controller)
        self._topics.start()
        # Its own session: the notification of each state's watch must not queue ahead of it.
        await self._notifications.start()
        self._notifications.watch_state_changes(self._on_state_changes)

    async def stop(self) -> None:
        self._refresh.cancel()
        self._flush.cancel()
        await self._notifications.stop()
        await self._store.stop()

    def _publish(self, image: MetadataImage) -> None:
        self.image = image
        for wake in self._watchers:
            wake.set()

    def _on_broker_ids(self, _ids: list[int]) -> None:
        self._refresh.request()

    async def _refresh_brokers(self) -> None:
        brokers = await self._store.live_brokers()
        self._publish(self.image.with_brokers(brokers))
        log.info("image version %d: live brokers %s", self.image.version, sorted(self.image.live_broker_ids))

    def _on_controller(self, controller: ControllerInfo | None) -> None:
        self._publish(self.image.with_controller(controller))
        log.info("image version %d: active controller %s", self.image.version,
                 controller.controller_id if controller else "none")

    def _on_state_changes(self, changes: Watched[StateChanges]) -> None:
        # A controller's write may answer a broker change that this process's own watch of
        # /brokers/ids has not brought yet (it comes on the other session): the states are
        # published only with a live broker set at least as new, as Kafka's UpdateMetadata
        # carries both at once.
        self._brokers_to_confirm = True
        self._written_ms = min(self._written_ms or changes.modified_ms, changes.modified_ms)
        self._topics.on_state_changes(changes)

    def _on_topic_dirty(self, name: str) -> None:
        # Watch events arrive one by one; all that arrived by the time the flush runs make
        # one new image.
        self._dirty_topics.add(name)
        self._flush.request()

    async def _flush_topics(self) -> None:
        if self._brokers_to_confirm:
            self._brokers_to_confirm = False
            if set(await self._store.live_broker_ids()) != self.image.live_broker_ids:
                await self._refresh_brokers()
        changed: dict[str, TopicImage | None] = {name: self._topics.image_of(name) for name in self._dirty_topics}
        self._dirty_topics.clear()
        written_ms, self._written_ms = self._written_ms, 0
        changed = {name: topic for name, topic in changed.items() if self.image.topics.get(name) != topic}
        if not changed:
            return
        self._publish(self.image.with_topics(changed))
        if written_ms:
            PROPAGATION_SECONDS.observe(max(0.0, time.time() - written_ms / 1000))
        log.info("image version %d: topics changed: %s", self.image.version, ", ".join(sorted(changed)))

    async def Metadata(
        self, request: metadata_pb2.MetadataRequest, context: grpc.aio.ServicerContext
    ) -> metadata_pb2.MetadataResponse:
        return render.metadata_response(self.image, list(request.topics))

    async def WatchMetadata(
        self, request: metadata_pb2.WatchMetadataRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[metadata_pb2.WatchMetadataResponse]:
        if len(self._watchers) >= WATCH_STREAMS_MAX:
            await status.abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"this metadata service already serves {WATCH_STREAMS_MAX} WatchMetadata streams; "
                               "use another replica or poll Metadata", ErrorCode.POLICY_VIOLATION)
        follow = frozenset(request.topics)
        wake = asyncio.Event()
        ended = False

        def end() -> None:  # at shutdown: the client moves to another replica, as after any broken stream
            nonlocal ended
            ended = True
            wake.set()

        self._watchers.add(wake)
        try:
            with streams.until_shutdown(end):
                sent = self.image
                yield render.snapshot(sent, follow)
                while True:
                    await wake.wait()
                    wake.clear()
                    if ended:
                        return
                    current = self.image
                    message = render.delta(sent, current, follow)
                    sent = current
                    if message is not None:
                        yield message
        finally:
            self._watchers.discard(wake)
