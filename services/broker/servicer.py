"""BrokerService: decode, call the driver, encode. The rules live in the core and the driver."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.broker.delete_records import handle_delete_records, timeout_problem
from replog.broker.fetch import handle_fetch, handle_list_offsets, handle_offsets_for_leader_epoch, new_fetch_sessions
from replog.broker.log_dirs import handle_describe_log_dirs
from replog.broker.partitions import Partitions
from replog.broker.produce import answer_produce, append_produce, handle_produce, handle_write_txn_markers
from replog.broker.producers import handle_describe_producers
from replog.core.errors import ErrorCode
from replog.rpc import status
from replog.rpc.broker_convert import endpoints_of, metadata_partitions, partition_state_of
from replog.rpc.streams import answer_in_order

log = logging.getLogger("replog.broker")

# Requests of one ProduceStream or FetchStream started but not yet answered; the
# stream is not read further until the oldest is answered (a producer's
# max.in.flight.requests.per.connection is 5).
STREAM_IN_FLIGHT_MAX = 32

T = TypeVar("T")


class BrokerServicer(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(
        self,
        partitions: Partitions,
        broker_epoch: Callable[[], int | None],
        learn_topics: Callable[[set[str]], Awaitable[None]],
    ) -> None:
        self._partitions = partitions
        self._broker_epoch = broker_epoch
        self._learn_topics = learn_topics
        self._fetch_sessions = new_fetch_sessions()

    async def Produce(self, request: broker_pb2.ProduceRequest, context: grpc.aio.ServicerContext) -> broker_pb2.ProduceResponse:
        return await handle_produce(self._partitions, request)

    async def Fetch(self, request: broker_pb2.FetchRequest, context: grpc.aio.ServicerContext) -> broker_pb2.FetchResponse:
        return await handle_fetch(self._partitions, self._fetch_sessions, request)

    async def ProduceStream(self, requests: AsyncIterator[broker_pb2.ProduceStreamRequest],
                            context: grpc.aio.ServicerContext) -> AsyncIterator[broker_pb2.ProduceStreamResponse]:
        async for answer in answer_in_order(requests, self._start_produce, STREAM_IN_FLIGHT_MAX, "Produce"):
            yield answer

    async def FetchStream(self, requests: AsyncIterator[broker_pb2.FetchStreamRequest],
                          context: grpc.aio.ServicerContext) -> AsyncIterator[broker_pb2.FetchStreamResponse]:
        async for answer in answer_in_order(requests, self._start_fetch, STREAM_IN_FLIGHT_MAX, "Fetch"):
            yield answer

    def _start_produce(self, message: broker_pb2.ProduceStreamRequest) -> Awaitable[broker_pb2.ProduceStreamResponse]:
        answer = broker_pb2.ProduceStreamResponse()
        pending = append_produce(self._partitions, message.request, answer.response)  # now, in stream order
        return _wrapped(answer_produce(pending), answer)

    def _start_fetch(self, message: broker_pb2.FetchStreamRequest) -> Awaitable[broker_pb2.FetchStreamResponse]:
        answer = broker_pb2.FetchStreamResponse()
        return _wrapped(handle_fetch(self._partitions, self._fetch_sessions, message.request, answer.response), answer)

    async def WriteTxnMarkers(self, request: broker_pb2.WriteTxnMarkersRequest,
                              context: grpc.aio.ServicerContext) -> broker_pb2.WriteTxnMarkersResponse:
        return await handle_write_txn_markers(self._partitions, request)

    async def DescribeProducers(self, request: broker_pb2.DescribeProducersRequest,
                                context: grpc.aio.ServicerContext) -> broker_pb2.DescribeProducersResponse:
        return handle_describe_producers(self._partitions, request)

    async def DeleteRecords(self, request: broker_pb2.DeleteRecordsRequest,
                            context: grpc.aio.ServicerContext) -> broker_pb2.DeleteRecordsResponse:
        problem = timeout_problem(request.timeout_ms)
        if problem is not None:
            await status.abort(context, grpc.StatusCode.INVALID_ARGUMENT, problem, ErrorCode.INVALID_REQUEST)
        return await handle_delete_records(self._partitions, request)

    async def DescribeLogDirs(self, request: broker_pb2.DescribeLogDirsRequest,
                              context: grpc.aio.ServicerContext) -> broker_pb2.DescribeLogDirsResponse:
        return handle_describe_log_dirs(self._partitions, request)

    async def ListOffsets(self, request: broker_pb2.ListOffsetsRequest,
                          context: grpc.aio.ServicerContext) -> broker_pb2.ListOffsetsResponse:
        return handle_list_offsets(self._partitions, request)

    async def OffsetsForLeaderEpoch(self, request: broker_pb2.OffsetsForLeaderEpochRequest,
                                    context: grpc.aio.ServicerContext) -> broker_pb2.OffsetsForLeaderEpochResponse:
        return handle_offsets_for_leader_epoch(self._partitions, request)

    def _fence(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """A controller request must come from the newest controller and not name an earlier incarnation."""
        error = self._partitions.check_controller_epoch(controller_epoch)
        if error != ErrorCode.NONE:
            log.warning("refused a request from controller epoch %d (newest seen: %d)",
                        controller_epoch, self._partitions.controller_epoch)
            return error
        ours = self._broker_epoch()
        # Only an older epoch is refused, as in Kafka: a newer one is this broker's own registration,
        # seen by the controller before the registering call has returned here.
        if broker_epoch != -1 and ours is not None and broker_epoch < ours:
            log.warning("refused a controller request for broker epoch %d (ours is %d)", broker_epoch, ours)
            return ErrorCode.STALE_BROKER_EPOCH
        return ErrorCode.NONE

    async def LeaderAndIsr(self, request: broker_pb2.LeaderAndIsrRequest,
                           context: grpc.aio.ServicerContext) -> broker_pb2.LeaderAndIsrResponse:
        error = self._fence(request.controller_epoch, request.broker_epoch)
        if error != ErrorCode.NONE:
            return broker_pb2.LeaderAndIsrResponse(error_code=int(error), error_message=_fence_message(error))
        self._partitions.metadata.add_brokers(endpoints_of(request.live_leaders))
        await self._learn_topics({state.topic for state in request.partition_states})
        response = broker_pb2.LeaderAndIsrResponse(error_code=int(ErrorCode.NONE))
        for state in request.partition_states:
            result = self._partitions.leader_and_isr(state.topic, state.partition, partition_state_of(state))
            response.partition_results.add(topic=state.topic, partition=state.partition, error_code=int(result),
                                           error_message="" if result == ErrorCode.NONE else result.name)
        return response

    async def StopReplica(self, request: broker_pb2.StopReplicaRequest,
                          context: grpc.aio.ServicerContext) -> broker_pb2.StopReplicaResponse:
        error = self._fence(request.controller_epoch, request.broker_epoch)
        if error != ErrorCode.NONE:
            return broker_pb2.StopReplicaResponse(error_code=int(error), error_message=_fence_message(error))
        response = broker_pb2.StopReplicaResponse(error_code=int(ErrorCode.NONE))
        for partition in request.partitions:
            result = self._partitions.stop_replica(partition.topic, partition.partition, partition.delete_partition)
            response.partition_results.add(topic=partition.topic, partition=partition.partition,
                                           error_code=int(result))
        return response

    async def UpdateMetadata(self, request: broker_pb2.UpdateMetadataRequest,
                             context: grpc.aio.ServicerContext) -> broker_pb2.UpdateMetadataResponse:
        error = self._fence(request.controller_epoch, request.broker_epoch)
        if error != ErrorCode.NONE:
            return broker_pb2.UpdateMetadataResponse(error_code=int(error), error_message=_fence_message(error))
        metadata = self._partitions.metadata
        metadata.set_brokers(endpoints_of(request.live_brokers))
        self._partitions.alive_brokers(metadata.brokers)
        live, deleted = metadata_partitions(request.partition_states)
        metadata.learn(live)
        metadata.forget(deleted)
        return broker_pb2.UpdateMetadataResponse(error_code=int(ErrorCode.NONE))


def _fence_message(error: ErrorCode) -> str:
    if error == ErrorCode.STALE_CONTROLLER_EPOCH:
        return "a newer controller has spoken to this broker; this request comes from a controller that lost"
    return "the request names an earlier incarnation of this broker"


async def _wrapped(filling: Awaitable[object], answer: T) -> T:
    """Await what fills `answer` in place, then hand over the whole stream message."""
    await filling
    return answer
