"""Keeps the client's ClusterMetadata fresh from the metadata service (runs on the I/O loop)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable

import grpc

from replog.api.metadata.v1 import metadata_pb2
from replog.client.cluster import ClusterMetadata
from replog.client.errors import ClientError, ClusterUnreachableError, UnknownTopicError
from replog.client.io import Channels
from replog.client.retry import backoff_ms

log = logging.getLogger("replog.client")

METADATA_MAX_AGE_MS = 300_000  # Kafka's metadata.max.age.ms


class MetadataManager:
    """The snapshot (`current`) and the refreshes that replace it.

    `request_update()` is cheap and coalesces: many stale-leader errors at once
    cause one refresh, and refreshes are at least retry_backoff_ms apart.
    """

    def __init__(
        self,
        bootstrap: list[str],
        channels: Channels,
        *,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        all_topics: bool = False,
    ) -> None:
        self.current = ClusterMetadata()
        self._bootstrap = list(bootstrap)
        self._next_address = 0
        self._channels = channels
        self._request_timeout_s = request_timeout_ms / 1000
        self._retry_backoff_ms = retry_backoff_ms
        self._all_topics = all_topics
        self._topics: set[str] = set()
        self._listeners: list[Callable[[ClusterMetadata], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._refreshed_at_s = 0.0

    def add_topics(self, topics: Iterable[str]) -> None:
        self._topics.update(topics)

    def on_update(self, listener: Callable[[ClusterMetadata], None]) -> None:
        self._listeners.append(listener)

    def set_current(self, metadata: ClusterMetadata) -> None:
        self.current = metadata
        for listener in self._listeners:
            listener(metadata)

    @property
    def is_stale(self) -> bool:
        return time.monotonic() - self._refreshed_at_s > METADATA_MAX_AGE_MS / 1000

    def request_update(self) -> None:
        """Refresh soon, in the background, retrying until one answer arrives."""
        self._again = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._refresh_until_answered())

    async def _refresh_until_answered(self) -> None:
        attempt = 0
        while self._again:
            wait_s = self._refreshed_at_s + self._retry_backoff_ms / 1000 - time.monotonic()
            if wait_s > 0:
                await asyncio.sleep(wait_s)
            self._again = False
            try:
                await self.refresh()
                attempt = 0
            except ClusterUnreachableError as error:
                attempt += 1
                log.warning("%s; trying again", error)
                self._again = True
                await asyncio.sleep(backoff_ms(attempt, self._retry_backoff_ms, jitter=random.random()) / 1000)

    async def refresh(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """One Metadata request (the followed topics, or `topics`), trying each bootstrap address."""
        wanted = sorted(self._topics if topics is None else set(topics) | self._topics)
        all_topics = self._all_topics or not wanted
        request = metadata_pb2.MetadataRequest(topics=[] if all_topics else wanted)
        failures = []
        for _ in range(len(self._bootstrap)):
            address = self._bootstrap[self._next_address % len(self._bootstrap)]
            try:
                response = await self._channels.metadata(address).Metadata(request, timeout=self._request_timeout_s)
            except grpc.aio.AioRpcError as error:
                failures.append(_no_answer(address, error))
                self._next_address += 1
                continue
            self._refreshed_at_s = time.monotonic()
            self.set_current(self.current.with_response(response, all_topics=all_topics))
            return self.current
        raise ClusterUnreachableError(f"no metadata service answered: {'; '.join(failures)}")

    async def wait_for_topic(self, topic: str, timeout_s: float) -> ClusterMetadata:
        """Metadata that knows `topic`, refreshing until it appears or timeout_s passes.

        A topic that was just created may take a moment to reach the metadata
        service, so an unknown topic is asked for again until the deadline.
        """
        self.add_topics([topic])
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            if self.current.partition_count(topic) is not None:
                return self.current
            try:
                metadata = await self.refresh([topic])
            except ClusterUnreachableError:
                if time.monotonic() >= deadline:
                    raise
                metadata = self.current
            if metadata.partition_count(topic) is not None:
                return metadata
            error = metadata.topic_errors.get(topic)
            if error is not None and not error.error_code.retriable:
                raise ClientError(f"topic {topic!r} cannot be used: {error.error_code.name}: {error.message}",
                                  error.error_code)
            if time.monotonic() >= deadline:
                raise UnknownTopicError(topic)
            attempt += 1
            await asyncio.sleep(min(backoff_ms(attempt, self._retry_backoff_ms, jitter=random.random()) / 1000,
                                    max(deadline - time.monotonic(), 0.0)))

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()


def _no_answer(address: str, error: grpc.aio.AioRpcError) -> str:
    if error.code() is grpc.StatusCode.UNIMPLEMENTED:
        # Something answered, but without the Metadata API: most likely a broker's or a controller's address.
        return f"{address} is not a metadata service (a broker or a controller?)"
    return f"{address} ({error.code().name}: {error.details()})"
