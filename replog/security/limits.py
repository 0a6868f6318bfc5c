"""Request limits (replog.core.limits) applied to every request of every service before its
servicer sees it: a request over a limit ends with INVALID_ARGUMENT and the sentence, and
nothing of it is done."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
import prometheus_client
from google.protobuf.message import DecodeError

from replog.core.limits import RequestLimits, check_names, check_partitions, check_records
from replog.protocol.header import record_counts

REFUSED = prometheus_client.Counter(
    "replog_requests_over_limits_total", "Requests refused for going over a request limit, by RPC.", ["rpc"])

GROUP_FIELDS = ("group_id", "group_ids")
# CreateTopics judges each new name itself (Kafka's rules, INVALID_TOPIC_EXCEPTION for that
# topic alone), so its names are not refused here with the whole request.
CREATE_TOPICS = "replog.api.controller.v1.CreateTopicsRequest"


def limits_of(config: Mapping[str, Any]) -> RequestLimits:
    return RequestLimits(config["max.partitions.per.request"], config["max.records.per.batch"],
                         config["max.topic.name.length"], config["max.group.id.length"])


@dataclasses.dataclass(frozen=True)
class _TopicList:
    """Where one of a message type's topic lists keeps what the limits read."""

    field: str
    names_only: bool  # repeated string (Metadata, DeleteTopics)
    name_keys: tuple[str, ...]  # the entry's name fields that are judged here
    has_partitions: bool
    has_records: bool


@functools.cache
def _shape(descriptor: Any) -> tuple[tuple[str, ...], tuple[_TopicList, ...]]:
    """A message type's group fields and topic lists, worked out once per type."""
    fields = descriptor.fields_by_name
    lists = []
    for name in ("topic_names", "topics"):
        if name not in fields:
            continue
        entry = fields[name].message_type
        if entry is None:
            lists.append(_TopicList(name, True, (), False, False))
            continue
        entry_fields = entry.fields_by_name
        keys = () if descriptor.full_name == CREATE_TOPICS else tuple(
            key for key in ("topic", "name") if key in entry_fields)
        partition = entry_fields.get("partitions")
        records = (partition is not None and partition.message_type is not None
                   and "records" in partition.message_type.fields_by_name)
        lists.append(_TopicList(name, False, keys, partition is not None, records))
    return tuple(name for name in GROUP_FIELDS if name in fields), tuple(lists)


def problem(request: Any, limits: RequestLimits) -> str | None:
    """The first limit `request` goes over, as a sentence, or None."""
    topics, groups, counts, partitions = [], [], [], 0
    group_fields, topic_lists = _shape(request.DESCRIPTOR)
    for name in group_fields:
        value = getattr(request, name)
        groups += [value] if isinstance(value, str) else list(value)
    for shape in topic_lists:
        if shape.names_only:
            names = list(getattr(request, shape.field))
            topics += names
            partitions += len(names)
            continue
        for entry in getattr(request, shape.field):
            topics += [getattr(entry, key) for key in shape.name_keys]
            if not shape.has_partitions:
                partitions += 1
                continue
            partitions += len(entry.partitions)
            if shape.has_records:
                for partition in entry.partitions:
                    counts += record_counts(partition.records)
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
