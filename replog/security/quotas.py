"""Quotas on a broker: produce and fetch bytes per second, and requests per second, per user (or
client id), measured as requests are served; an answer over a quota is held (and says how long in
`throttle_time_ms`, where its response has one), so a client that waits for its answers is slowed
to its quota (replog.core.quota has the math).

The client id is the `client-id` gRPC metadata a client sends; the quotas live in ZooKeeper
(`replog configs alter --entity-type users|clients`), read again on every change.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
import prometheus_client

from replog.core.quota import FETCH, PRODUCE, REQUEST, SAMPLES, TYPE_OF, WINDOW_MS, Quotas, Rate, throttle_ms
from replog.security import rpc_rules
from replog.security.authenticate import AuthenticationError, Authenticator
from replog.zk.changes import ChangeWatcher
from replog.zk.quotas import quota_watcher
from replog.zk.session import new_client, start_watcher

# The broker's services: every client request to them counts against its request quota.
MEASURED_SERVICES = (rpc_rules.BROKER, rpc_rules.COORDINATOR)
BYTES_OF = {rpc_rules.BROKER + "Produce": PRODUCE, rpc_rules.BROKER + "Fetch": FETCH}
RATES_MAX = 100_000  # sensors kept; an idle one is dropped when the table is full

THROTTLE_TIME = prometheus_client.Counter(
    "replog_throttle_time_ms_total",
    "Milliseconds answers were held because their user or client id was over its quota, by quota type.",
    ["quota"],
)
THROTTLED = prometheus_client.Counter(
    "replog_throttled_responses_total", "Answers held for a quota, by quota type.", ["quota"])


class QuotaManager:
    def __init__(self, watcher: ChangeWatcher[Quotas] | None = None, samples: int = SAMPLES, window_ms: int = WINDOW_MS) -> None:
        self._watcher = watcher
        self._samples = samples
        self._window_ms = window_ms
        self._rates: dict[tuple[str, str], Rate] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> QuotaManager | None:
        if "broker.id" not in config:
            return None
        client = new_client(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"] / 1000)
        return cls(quota_watcher(client), config["quota.window.num"], config["quota.window.size.seconds"] * 1000)

    async def start(self, connection_timeout_s: float, connect: str) -> None:
        if self._watcher is not None:
            await start_watcher(self._watcher.start, connect, connection_timeout_s, "the quotas")

    async def stop(self) -> None:
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.stop)

    @property
    def quotas(self) -> Quotas:
        return self._watcher.value if self._watcher is not None else Quotas()

    def record(self, user: str, client_id: str, kind: str, amount: int) -> int:
        """Count `amount` (bytes, or 1 request) against the quota of `kind` that applies; the throttle
        time it earns, in ms."""
        applies = self.quotas.quota_of(user, client_id, kind)
        if applies is None:
            return 0
        entity, quota = applies
        now_ms = int(time.monotonic() * 1000)
        rate = self._rates.get((entity, kind))
        if rate is None:
            if len(self._rates) >= RATES_MAX:
                self._rates.clear()
            rate = self._rates[(entity, kind)] = Rate(self._samples, self._window_ms)
        rate.record(amount, now_ms)
        held = throttle_ms(rate.per_second(now_ms), quota, rate.span_ms)
        if held:
            THROTTLED.labels(TYPE_OF[kind]).inc()
            THROTTLE_TIME.labels(TYPE_OF[kind]).inc(held)
        return held


class QuotaInterceptor(grpc.aio.ServerInterceptor):
    """Counts every client request to the broker's services against its request quota, and the bytes
    of produces and fetches against theirs; an answer is held for the longest throttle it earned
    (Kafka's rule). The cluster's own requests (rpc_rules.is_cluster_action) are never counted."""

    def __init__(self, authenticator: Authenticator, quotas: QuotaManager) -> None:
        self._authenticator = authenticator
        self._quotas = quotas

    async def intercept_service(self, continuation: Callable[..., Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        method = details.method
        if handler is None or not method.startswith(MEASURED_SERVICES):
            return handler
        byte_kind = BYTES_OF.get(rpc_rules.STREAM_OF.get(method, method))
        kinds = self._quotas.quotas.kinds
        if REQUEST not in kinds and byte_kind not in kinds:
            return handler
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(self._unary(method, byte_kind, handler.unary_unary),
                                                       handler.request_deserializer, handler.response_serializer)
        if handler.stream_stream is not None and method in rpc_rules.STREAM_OF:
            return grpc.stream_stream_rpc_method_handler(self._streams(method, handler.stream_stream),
                                                         handler.request_deserializer, handler.response_serializer)
        return handler

    def _who(self, context: grpc.aio.ServicerContext) -> tuple[str, str] | None:
        """(user, client id) of a client call, or None when no quota can apply."""
        try:
            principal = self._authenticator.session(context).principal
        except AuthenticationError:
            return None  # refused by the security interceptor, when there is one
        client_id = next((v for k, v in context.invocation_metadata() or () if k == "client-id"), "")
        return principal.partition(":")[2], client_id if isinstance(client_id, str) else client_id.decode()

    def _unary(self, method: str, byte_kind: str | None,
               inner: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def limited(request: Any, context: grpc.aio.ServicerContext) -> Any:
            who = self._who(context)
            if who is None or rpc_rules.is_cluster_action(method, request):
                return await inner(request, context)
            held = self._quotas.record(*who, REQUEST, 1)
            if byte_kind == PRODUCE:
                held = max(held, self._quotas.record(*who, PRODUCE, request.ByteSize()))
            response = await inner(request, context)
            if byte_kind == FETCH:
                held = max(held, self._quotas.record(*who, FETCH, response.ByteSize()))
            return await _held(response, held)

        return limited

    def _streams(self, method: str, inner: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        byte_kind = BYTES_OF[rpc_rules.STREAM_OF[method]]

        async def limited(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            who = self._who(context)
            if who is None:
                async for answer in inner(requests, context):
                    yield answer
                return
            # Per message in order: its produce size, or None for the cluster's own (a follower's
            # fetch). Each is counted when its answer is ready, after the answers before it were
            # held, as a client waiting for each answer would send them.
            sizes: collections.deque[int | None] = collections.deque()

            async def measured() -> AsyncIterator[Any]:
                async for message in requests:
                    own = rpc_rules.is_cluster_action(method, message.request)
                    sizes.append(None if own else message.request.ByteSize())
                    yield message

            async for answer in inner(measured(), context):
                size = sizes.popleft()
                if size is not None:
                    held = self._quotas.record(*who, REQUEST, 1)
                    amount = size if byte_kind == PRODUCE else answer.response.ByteSize()
                    held = max(held, self._quotas.record(*who, byte_kind, amount))
                    await _held(answer.response, held)
                yield answer

        return limited


async def _held(response: Any, held_ms: int) -> Any:
    """Hold the answer `held_ms`, saying so in its throttle_time_ms where it has one."""
    if held_ms:
        if "throttle_time_ms" in response.DESCRIPTOR.fields_by_name:
            response.throttle_time_ms = held_ms
        await asyncio.sleep(held_ms / 1000)
    return response
