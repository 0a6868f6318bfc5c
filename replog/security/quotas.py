"""Produce and fetch quotas on a broker: bytes per second per user (or client id), measured as
requests are served; an answer over the quota carries `throttle_time_ms` and is held that long,
so a client that waits for its answers is slowed to its quota (replog.core.quota has the math).

The client id is the `client-id` gRPC metadata a client sends; the quotas live in ZooKeeper
(`replog configs alter --entity-type users|clients`), read again on every change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
import prometheus_client

from replog.core.quota import FETCH, PRODUCE, SAMPLES, WINDOW_MS, Quotas, Rate, throttle_ms
from replog.security.authenticate import AuthenticationError, Authenticator
from replog.zk.quotas import QuotaWatcher
from replog.zk.session import new_client, start_watcher

BROKER = "/replog.api.broker.v1.BrokerService/"
RATES_MAX = 100_000  # sensors kept; an idle one is dropped when the table is full

THROTTLE_TIME = prometheus_client.Counter(
    "replog_throttle_time_ms_total",
    "Milliseconds answers were held because their user or client id was over its quota, by quota.",
    ["quota"],
)
THROTTLED = prometheus_client.Counter(
    "replog_throttled_responses_total", "Answers held for a quota, by quota.", ["quota"])


class QuotaManager:
    def __init__(self, watcher: QuotaWatcher | None = None, samples: int = SAMPLES, window_ms: int = WINDOW_MS) -> None:
        self._watcher = watcher
        self._samples = samples
        self._window_ms = window_ms
        self._rates: dict[tuple[str, str], Rate] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> QuotaManager | None:
        if "broker.id" not in config:
            return None
        client = new_client(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"] / 1000)
        return cls(QuotaWatcher(client), config["quota.window.num"], config["quota.window.size.seconds"] * 1000)

    async def start(self, connection_timeout_s: float, connect: str) -> None:
        if self._watcher is not None:
            await start_watcher(self._watcher.start, connect, connection_timeout_s, "the quotas")

    async def stop(self) -> None:
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.stop)

    @property
    def quotas(self) -> Quotas:
        return self._watcher.quotas if self._watcher is not None else Quotas()

    def record(self, user: str, client_id: str, kind: str, amount: int) -> int:
        """Count `amount` bytes against the quota that applies; the throttle time it earns, in ms."""
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
            THROTTLED.labels(kind).inc()
            THROTTLE_TIME.labels(kind).inc(held)
        return held


class QuotaInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: Authenticator, quotas: QuotaManager) -> None:
        self._authenticator = authenticator
        self._quotas = quotas

    async def intercept_service(self, continuation: Callable[..., Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        method = details.method
        if handler is None or not method.startswith(BROKER):
            return handler
        name = method[len(BROKER):]
        if name in ("Produce", "Fetch") and handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(self._unary(name, handler.unary_unary),
                                                       handler.request_deserializer, handler.response_serializer)
        if name in ("ProduceStream", "FetchStream") and handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(self._streams(name, handler.stream_stream),
                                                         handler.request_deserializer, handler.response_serializer)
        return handler

    def _who(self, context: grpc.aio.ServicerContext) -> tuple[str, str] | None:
        """(user, client id) of a client call, or None when no quota can apply."""
        quotas = self._quotas.quotas
        if not quotas.users and not quotas.clients:
            return None
        try:
            principal = self._authenticator.session(context).principal
        except AuthenticationError:
            return None  # refused by the security interceptor, when there is one
        client_id = next((v for k, v in context.invocation_metadata() or () if k == "client-id"), "")
        return principal.partition(":")[2], client_id if isinstance(client_id, str) else client_id.decode()

    def _unary(self, name: str, inner: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def limited(request: Any, context: grpc.aio.ServicerContext) -> Any:
            who = self._who(context)
            if who is None or (name == "Fetch" and request.replica_id >= 0):
                return await inner(request, context)
            held = self._quotas.record(*who, PRODUCE, request.ByteSize()) if name == "Produce" else 0
            response = await inner(request, context)
            if name == "Fetch":
                held = self._quotas.record(*who, FETCH, response.ByteSize())
            return await _held(response, held)

        return limited

    def _streams(self, name: str, inner: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        produce = name == "ProduceStream"

        async def limited(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            who = self._who(context)
            if who is None:
                async for answer in inner(requests, context):
                    yield answer
                return
            # Per message in order: its produce size, or whether it is a client's fetch (followers
            # replicate unthrottled, as in Kafka).
            measures: list[int] = []

            async def measured() -> AsyncIterator[Any]:
                async for message in requests:
                    measures.append(message.request.ByteSize() if produce else int(message.request.replica_id < 0))
                    yield message

            async for answer in inner(measured(), context):
                measure = measures.pop(0)
                if produce or measure:
                    amount = measure if produce else answer.response.ByteSize()
                    await _held(answer.response, self._quotas.record(*who, PRODUCE if produce else FETCH, amount))
                yield answer

        return limited


async def _held(response: Any, held_ms: int) -> Any:
    if held_ms:
        response.throttle_time_ms = held_ms
        await asyncio.sleep(held_ms / 1000)
    return response
