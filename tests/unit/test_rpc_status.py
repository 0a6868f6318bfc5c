"""A request refused whole carries its Kafka error name in a google.rpc.ErrorInfo (domain "replog"),
next to the gRPC status and message: for failures a servicer chooses and for its bugs alike."""

import asyncio

import grpc
import pytest

from replog.core.errors import ErrorCode
from replog.rpc import status
from replog.rpc.server import _MetricsInterceptor

pytestmark = pytest.mark.timeout(30)


async def refused(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    await status.abort(context, grpc.StatusCode.INVALID_ARGUMENT, "config 'x' has no op", ErrorCode.INVALID_REQUEST,
                       resource="x")


async def buggy(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    raise KeyError("a bug")


def handlers() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler("replog.api.test.v1.Failing", {
        "Refused": grpc.unary_unary_rpc_method_handler(refused),
        "Buggy": grpc.unary_unary_rpc_method_handler(buggy),
    })


async def call(method: str) -> grpc.aio.AioRpcError:
    server = grpc.aio.server(interceptors=[_MetricsInterceptor()])
    server.add_generic_rpc_handlers((handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await channel.unary_unary(f"/replog.api.test.v1.Failing/{method}")(b"", timeout=5)
        return failed.value
    finally:
        await server.stop(None)


def test_a_refusal_names_its_kafka_error_beside_the_status_and_message() -> None:
    error = asyncio.run(call("Refused"))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "config 'x' has no op"
    info = status.error_info(error)
    assert (info.reason, info.domain, dict(info.metadata)) == ("INVALID_REQUEST", "replog", {"resource": "x"})


def test_a_servicer_bug_is_unknown_and_named_a_server_error() -> None:
    error = asyncio.run(call("Buggy"))
    assert error.code() is grpc.StatusCode.UNKNOWN
    assert "KeyError" in error.details()
    assert status.error_info(error).reason == "UNKNOWN_SERVER_ERROR"
