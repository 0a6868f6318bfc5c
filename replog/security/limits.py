"""Request limits (replog.core.limits) applied to every request of every service before its
servicer sees it: a request over a limit ends with INVALID_ARGUMENT and the sentence, and
nothing of it is done."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
import prometheus_client
from google.protobuf.message import DecodeError

from replog.core.limits import RequestLimits, check_names, check_partitions, check_records, record_counts

REFUSED = prometheus_client.Counter(
    "replog_requests_over_limits_total", "Requests refused for going over a request limit, by RPC.", ["rpc"])

GROUP_FIELDS = ("group_id", "group_ids")
# CreateTopics judges each new name itself (Kafka's rules, INVALID_TOPIC_EXCEPTION for that
# topic alone), so its names are not refused here with the whole request.
CREATE_TOPICS = "replog.api.controller.v1.CreateTopicsRequest"


def limits_of(config: Mapping[str, Any]) -> RequestLimits:
    return RequestLimits(config["max.partitions.per.request"], config["max.records.per.batch"],
                         config["max.topic.name.length"], config["max.group.id.length"])


def problem(request: Any, limits: RequestLimits) -> str | None:
    """The first limit `request` goes over, as a sentence, or None."""
    topics, groups, counts, partitions = [], [], [], 0
    fields = request.DESCRIPTOR.fields_by_name
    for name in GROUP_FIELDS:
        if name in fields:
            value = getattr(request, name)
            groups += [value] if isinstance(value, str) else list(value)
    for name in ("topic_names", "topics"):
        if name not in fields:
            continue
        if fields[name].message_type is None:  # names only (Metadata, DeleteTopics)
            names = list(getattr(request, name))
            topics += names
            partitions += len(names)
            continue
        for entry in getattr(request, name):
            entry_fields = entry.DESCRIPTOR.fields_by_name
            if request.DESCRIPTOR.full_name != CREATE_TOPICS:
                topics += [getattr(entry, key) for key in ("topic", "name") if key in entry_fields]
            inner = entry.partitions if "partitions" in entry_fields else None
            partitions += len(inner) if inner is not None else 1
            for partition in inner or ():
                if not isinstance(partition, int) and "records" in partition.DESCRIPTOR.fields_by_name:
                    counts += list(record_counts(partition.records))
    return check_names(topics, groups, limits) or check_partitions(partitions, limits) or check_records(counts, limits)


class _Undecodable:
    """What a request that does not parse becomes, so that it is refused with INVALID_ARGUMENT
    (gRPC would answer UNKNOWN with a Python exception's name)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _decoding(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except DecodeError as error:
            return _Undecodable(str(error))

    return decode


class LimitsInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, limits: RequestLimits) -> None:
        self._limits = limits

    async def intercept_service(self, continuation: Callable[..., Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None:
            return handler
        rpc = details.method.rsplit("/", 1)[-1]
        limits = self._limits
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def checked(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await _refuse_over(request, context, limits, rpc)
                return await inner(request, context)

            return grpc.unary_unary_rpc_method_handler(checked, _decoding(handler.request_deserializer),
                                                       handler.response_serializer)
        if handler.stream_stream is not None:
            inner_stream = handler.stream_stream

            async def checked_stream(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
                async def each() -> AsyncIterator[Any]:
                    async for message in requests:
                        inner = message if isinstance(message, _Undecodable) else getattr(message, "request", message)
                        await _refuse_over(inner, context, limits, rpc)
                        yield message

                async for answer in inner_stream(each(), context):
                    yield answer

            return grpc.stream_stream_rpc_method_handler(checked_stream, _decoding(handler.request_deserializer),
                                                         handler.response_serializer)
        if handler.unary_stream is not None:
            inner_out = handler.unary_stream

            async def checked_out(request: Any, context: grpc.aio.ServicerContext) -> Any:
                await _refuse_over(request, context, limits, rpc)
                async for answer in inner_out(request, context):
                    yield answer

            return grpc.unary_stream_rpc_method_handler(checked_out, _decoding(handler.request_deserializer),
                                                        handler.response_serializer)
        return handler


async def _refuse_over(request: Any, context: grpc.aio.ServicerContext, limits: RequestLimits, rpc: str) -> None:
    if isinstance(request, _Undecodable):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{rpc} refused: the request does not parse as "
                            f"its message ({request.reason})")
    sentence = problem(request, limits)
    if sentence is not None:
        REFUSED.labels(rpc).inc()
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{rpc} refused, nothing done: {sentence}")
