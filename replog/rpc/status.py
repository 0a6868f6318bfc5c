"""Whole-request failures with rich details: the gRPC status of a refused request carries, in the
`grpc-status-details-bin` trailer, a google.rpc.Status whose google.rpc.ErrorInfo names the Kafka
error (`reason`, as in ErrorCode) in the domain "replog", so that a client in any language can tell
the failures apart without reading the message (gRPC's richer error model, AIP-193)."""

from __future__ import annotations

from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from replog.core.errors import ErrorCode

DOMAIN = "replog"
DETAILS_KEY = "grpc-status-details-bin"


def status_details(code: grpc.StatusCode, message: str, error: ErrorCode, **metadata: str) -> bytes:
    """The serialized google.rpc.Status for a failure: its code, message and one ErrorInfo."""
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=error.name, domain=DOMAIN, metadata=metadata))
    return status_pb2.Status(code=code.value[0], message=message, details=[detail]).SerializeToString()


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str, error: ErrorCode,
                **metadata: str) -> NoReturn:
    """End the call with `code` and `message`, the ErrorInfo naming `error` in the trailer."""
    await context.abort(code, message, trailing_metadata=((DETAILS_KEY, status_details(code, message, error,
                                                                                        **metadata)),))
    raise AssertionError("abort returns only by raising")


def error_info(call: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo a failed call carried (for clients and tests), or None."""
    for key, value in call.trailing_metadata() or ():
        if key == DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return info
    return None
