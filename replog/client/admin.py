"""The admin client: create topics at the active controller, describe them from the metadata service."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

import grpc

from replog.api.controller.v1 import controller_pb2
from replog.client.cluster import ClusterMetadata
from replog.client.errors import (
    AdminError,
    ClusterUnreachableError,
    ServerUnsupportedError,
    UnknownTopicError,
    error_code_of,
)
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.retry import error_code_for_status
from replog.client.types import CreatedTopic, NewTopic, TopicDescription
from replog.core.errors import ErrorCode

T = TypeVar("T")

DEADLINE_MARGIN_MS = 5_000  # the gRPC deadline exceeds the controller's own timeout_ms
METADATA_POLL_S = 0.05


class Admin:
    """Topic administration; every call is synchronous and raises AdminError on failure."""

    def __init__(self, bootstrap: str | Sequence[str], *, request_timeout_ms: int = 30_000,
                 retry_backoff_ms: int = 100) -> None:
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_s = retry_backoff_ms / 1000
        addresses = parse_bootstrap(bootstrap)
        self._io = IoThread("replog-admin-io")
        self._channels = Channels()
        self._metadata = MetadataManager(addresses, self._channels, request_timeout_ms=request_timeout_ms,
                                         retry_backoff_ms=retry_backoff_ms, all_topics=True)
        self._closed = False

    # -- topics ----------------------------------------------------------------------------------

    def create_topics(
        self, topics: Iterable[NewTopic], *, timeout_ms: int = 30_000, validate_only: bool = False
    ) -> dict[str, CreatedTopic]:
        """Create topics; returns them by name, or raises AdminError for the first that failed.

        The error's `errors` attribute maps every failed topic to its AdminError
        (some topics of one call may be created while others fail). Returns once
        the metadata service shows the new topics, or timeout_ms has passed.
        """
        topics = list(topics)
        request = controller_pb2.CreateTopicsRequest(
            topics=[_creatable(topic) for topic in topics], timeout_ms=timeout_ms, validate_only=validate_only,
        )
        wait_s = (timeout_ms + DEADLINE_MARGIN_MS) / 1000
        response = self._io.run(self._create_topics(request, wait_s), wait_s + 5, what="creating topics")
        created: dict[str, CreatedTopic] = {}
        errors: dict[str, AdminError] = {}
        for result in response.topics:
            code = error_code_of(result.error_code)
            if code is ErrorCode.NONE:
                created[result.name] = CreatedTopic(result.name, result.topic_id, result.num_partitions,
                                                    result.replication_factor)
            else:
                errors[result.name] = AdminError(_topic_failure(result.name, code, result.error_message), code,
                                                 result.name)
        if errors:
            first = next(iter(errors.values()))
            first.errors, first.created = errors, created
            raise first
        if created and not validate_only:
            self._io.run(self._await_visible(list(created), timeout_ms / 1000), timeout_ms / 1000 + 5,
                         what="waiting for the new topics to reach the metadata service")
        return created

    def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Topics with their partitions, leaders, replicas and ISR (all topics when names is None)."""
        names = None if names is None else list(names)
        metadata = self._refresh(names)
        if names is None:
            return [metadata.topics[name] for name in sorted(metadata.topics)]
        described = []
        for name in names:
            if name in metadata.topics:
                described.append(metadata.topics[name])
                continue
            error = metadata.topic_errors.get(name)
            if error is None or error.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise UnknownTopicError(name)
            raise AdminError(_topic_failure(name, error.error_code, error.message), error.error_code, name)
        return described

    def list_topics(self) -> list[str]:
        return sorted(self._refresh(None).topics)

    def describe_configs(self, topics: Iterable[str], *, overrides_only: bool = True) -> dict[str, dict[str, str]]:
        """Topic configs: the ones set for each topic (or, with overrides_only=False, every effective value)."""
        topics = list(topics)
        if not topics:
            return {}
        request = controller_pb2.DescribeConfigsRequest(resources=[
            controller_pb2.DescribeConfigsResource(resource_type=controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
                                                   resource_name=name)
            for name in topics
        ])
        wait_s = (self._request_timeout_ms + DEADLINE_MARGIN_MS) / 1000
        response = self._io.run(self._at_controller(
            lambda stub: stub.DescribeConfigs(request, timeout=self._request_timeout_ms / 1000),
            lambda r: any(error_code_of(x.error_code) is ErrorCode.NOT_CONTROLLER for x in r.results),
            wait_s,
        ), wait_s + 5, what="describing configs")
        configs: dict[str, dict[str, str]] = {}
        for result in response.results:
            code = error_code_of(result.error_code)
            if code is not ErrorCode.NONE:
                raise AdminError(_topic_failure(result.resource_name, code, result.error_message), code,
                                 result.resource_name)
            configs[result.resource_name] = {
                entry.name: entry.value for entry in result.configs
                if entry.HasField("value")
                and (not overrides_only or entry.source == controller_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
            }
        return configs

    def cluster(self) -> ClusterMetadata:
        """Brokers, the active controller and every topic, as the metadata service sees them now."""
        return self._refresh(None)

    # -- on the I/O loop -------------------------------------------------------------------------

    def _refresh(self, names: list[str] | None) -> ClusterMetadata:
        return self._io.run(self._metadata.refresh(names or None), self._request_timeout_ms / 1000 + 5,
                            what="asking the metadata service")

    async def _create_topics(self, request: controller_pb2.CreateTopicsRequest, wait_s: float):
        return await self._at_controller(
            lambda stub: stub.CreateTopics(request, timeout=wait_s),
            lambda r: any(error_code_of(t.error_code) is ErrorCode.NOT_CONTROLLER for t in r.topics),
            wait_s,
        )

    async def _at_controller(
        self, call: Callable[[object], Awaitable[T]], not_controller: Callable[[T], bool], wait_s: float
    ) -> T:
        """Call the active controller, looking it up again after NOT_CONTROLLER or a lost connection."""
        deadline = time.monotonic() + wait_s
        refresh = self._metadata.current.controller_address is None
        while True:
            metadata = await self._metadata.refresh() if refresh else self._metadata.current
            refresh = True
            address = metadata.controller_address
            problem = "no controller is active"
            if address is not None:
                try:
                    response = await call(self._channels.controller(address))
                except grpc.aio.AioRpcError as error:
                    if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                        raise ServerUnsupportedError(f"the controller at {address} does not implement this "
                                                     f"request yet: {error.details()}") from None
                    code = error_code_for_status(error.code())
                    if not code.retriable:
                        raise AdminError(f"the controller at {address} answered {error.code().name}: "
                                         f"{error.details()}", code) from None
                    problem = f"the controller at {address} answered {error.code().name}"
                else:
                    if not not_controller(response):
                        return response
                    problem = f"the controller at {address} is no longer active"
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise ClusterUnreachableError(f"{problem}; gave up after {wait_s:g} s")
            await asyncio.sleep(self._retry_backoff_s)

    async def _await_visible(self, names: list[str], wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            metadata = await self._metadata.refresh(names)
            if all(name in metadata.topics and all(p.leader >= 0 for p in metadata.topics[name].partitions)
                   for name in names):
                return
            await asyncio.sleep(METADATA_POLL_S)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._io.run(self._channels.close(), 10, what="closing the admin client's connections")
        self._io.stop()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _creatable(topic: NewTopic) -> controller_pb2.CreatableTopic:
    if topic.replica_assignment is not None:
        return controller_pb2.CreatableTopic(
            name=topic.name, num_partitions=-1, replication_factor=-1,
            assignments=[controller_pb2.ReplicaAssignment(partition=p, broker_ids=list(ids))
                         for p, ids in sorted(topic.replica_assignment.items())],
            configs=dict(topic.configs),
        )
    return controller_pb2.CreatableTopic(name=topic.name, num_partitions=topic.num_partitions,
                                         replication_factor=topic.replication_factor, configs=dict(topic.configs))


def _topic_failure(name: str, code: ErrorCode, message: str) -> str:
    detail = f": {message}" if message else ""
    return f"topic {name!r}: {code.name}{detail}"
