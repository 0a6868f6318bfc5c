"""Where security meets every call: the caller's principal is established, then the RPC's checks
(rpc_rules) are applied before the servicer runs, and its answer is completed after.

The servicers know nothing of it. An RPC without a rule is refused while an authorizer is on, so
a new RPC cannot be open by accident (tests/unit/test_rpc_rules.py lists them all).
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import descriptor_pool, message_factory

from replog.security import rpc_rules
from replog.security.authenticate import AuthenticationError, Authenticator
from replog.security.authorizer import Authorizer


class SecurityInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: Authenticator, authorizer: Authorizer | None) -> None:
        self._authenticator = authenticator
        self._authorizer = authorizer

    async def intercept_service(self, continuation: Callable[..., Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        method = details.method
        if handler is None or method.startswith(rpc_rules.OPEN_SERVICES):
            return handler
        inner_method = rpc_rules.STREAM_OF.get(method, method)
        checks = rpc_rules.RULES.get(inner_method)
        if checks is None and self._authorizer is not None:
            return _refusing(handler, f"{method} has no authorization rule; it is refused while the authorizer is on")
        if handler.unary_unary is not None:
            return _unary(handler, self._guard(method, checks or (), handler.unary_unary))
        if handler.unary_stream is not None:
            return _unary_stream(handler, self._guard_stream_out(method, checks or (), handler.unary_stream))
        if handler.stream_stream is not None and method in rpc_rules.STREAM_OF:
            return _stream_stream(handler, self._guard_streams(inner_method, checks or (), handler.stream_stream))
        return handler

    async def _judge(self, context: grpc.aio.ServicerContext) -> Any:
        try:
            session = self._authenticator.session(context)
        except AuthenticationError as error:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, str(error))
        return None if self._authorizer is None else self._authorizer.judge(session)

    def _guard(self, method: str, checks: tuple, inner: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        response_type = _response_type(method)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            judge = await self._judge(context)
            if judge is None:
                return await inner(request, context)
            plan = await _plan(context, method, checks, request, response_type, judge)
            if plan.answer is not None:
                return plan.answer
            response = response_type() if plan.skip_servicer else await inner(request, context)
            return rpc_rules.finish(plan, response, judge)

        return guarded

    def _guard_stream_out(self, method: str, checks: tuple, inner: Callable[..., AsyncIterator[Any]]) -> Callable:
        response_type = _response_type(method)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            judge = await self._judge(context)
            if judge is None:
                async for response in inner(request, context):
                    yield response
                return
            plan = await _plan(context, method, checks, request, response_type, judge)
            async for response in inner(request, context):
                yield rpc_rules.finish(plan, response, judge)

        return guarded

    def _guard_streams(self, inner_method: str, checks: tuple, inner: Callable[..., AsyncIterator[Any]]) -> Callable:
        """ProduceStream/FetchStream: each message's request is checked as a Produce or a Fetch; the
        answers come back in order, so each is completed with its own request's plan."""
        response_type = _response_type(inner_method)

        async def guarded(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            judge = await self._judge(context)
            if judge is None:
                async for answer in inner(requests, context):
                    yield answer
                return
            plans: collections.deque[rpc_rules.Plan] = collections.deque()

            async def checked() -> AsyncIterator[Any]:
                async for message in requests:
                    plan = await _plan(context, inner_method, checks, message.request, response_type, judge)
                    if plan.answer is not None:
                        del message.request.topics[:]  # refused whole: nothing of it reaches the log
                    plans.append(plan)
                    yield message

            async for answer in inner(checked(), context):
                plan = plans.popleft()
                if plan.answer is not None:
                    answer.response.CopyFrom(plan.answer)
                else:
                    rpc_rules.finish(plan, answer.response, judge)
                yield answer

        return guarded


async def _plan(context: grpc.aio.ServicerContext, method: str, checks: tuple, request: Any, response_type: type,
                judge: Any) -> rpc_rules.Plan:
    try:
        return rpc_rules.plan(method, checks, request, response_type, judge)
    except rpc_rules.PermissionDenied as denied:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(denied))
        raise


def _response_type(method: str) -> type:
    """The response message class of "/package.Service/Method", from the descriptor pool."""
    service, name = method.strip("/").rsplit("/", 1)
    descriptor = descriptor_pool.Default().FindServiceByName(service).methods_by_name[name].output_type
    return message_factory.GetMessageClass(descriptor)


def _unary(handler: Any, behaviour: Callable) -> Any:
    return grpc.unary_unary_rpc_method_handler(behaviour, handler.request_deserializer, handler.response_serializer)


def _unary_stream(handler: Any, behaviour: Callable) -> Any:
    return grpc.unary_stream_rpc_method_handler(behaviour, handler.request_deserializer, handler.response_serializer)


def _stream_stream(handler: Any, behaviour: Callable) -> Any:
    return grpc.stream_stream_rpc_method_handler(behaviour, handler.request_deserializer, handler.response_serializer)


def _refusing(handler: Any, message: str) -> Any:
    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, message)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, message)
        yield None

    if handler.unary_unary is not None:
        return _unary(handler, refuse)
    if handler.unary_stream is not None:
        return _unary_stream(handler, refuse_stream)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse, handler.request_deserializer, handler.response_serializer)
    return _stream_stream(handler, refuse_stream)
