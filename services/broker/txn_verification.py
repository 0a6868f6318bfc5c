"""KIP-890 on the partition side: before a transaction's first batch on a partition led here is appended, ask
the transactional id's coordinator (AddPartitionsToTxn, verify-only) whether the partition is in the producer's
ongoing transaction at the batch's epoch (part 1), or, for a producer on transaction version 2, have it add
the partition (part 2: the producer sends no AddPartitionsToTxn).

The coordinator is the leader of the id's `__transaction_state` partition as this broker's metadata cache
knows it: this broker itself (its coordinator is asked directly) or another one (over gRPC). The answer
becomes the produce answer by `replog.core.txn.verification.produce_error`.
"""

from __future__ import annotations

import logging
import time

import grpc

from replog.api.coordinator.v1 import coordinator_pb2_grpc
from replog.broker import metrics
from replog.broker.broker_channels import BrokerChannels
from replog.broker.coordinator_shards import CoordinatorError
from replog.broker.partitions import Partitions
from replog.broker.replicas import wall_ms
from replog.broker.txn_coordinator import TransactionCoordinators
from replog.core.errors import ErrorCode
from replog.core.producer_state import ProducerAppend
from replog.core.topic_partition import TopicPartition
from replog.core.txn.placement import TRANSACTION_STATE_TOPIC
from replog.core.txn.requests import AddPartitionsRequest, AddPartitionsResponse
from replog.core.txn.verification import produce_error
from replog.rpc import txn_convert

log = logging.getLogger("replog.broker")

VERIFY_TIMEOUT_S = 10.0


class TransactionVerifier:
    def __init__(self, broker_id: int, partitions: Partitions, coordinators: TransactionCoordinators,
                 channels: BrokerChannels) -> None:
        self._broker_id = broker_id
        self._partitions = partitions
        self._coordinators = coordinators
        self._channels = channels

    async def __call__(self, transactional_id: str, producer: ProducerAppend,
                       key: TopicPartition) -> tuple[ErrorCode, str]:
        """The produce answer to the batch, and why: NONE when the coordinator verified the partition, or added
        it (the producer is on transaction version 2, whatever this broker's own transaction.version)."""
        add = producer.leader_add
        request = AddPartitionsRequest(transactional_id, producer.producer_id, producer.producer_epoch,
                                       frozenset({key}), verify_only=not add, leader_add=add)
        started = time.perf_counter()
        try:
            answer = await self._ask(request)
        finally:
            metrics.TXN_PARTITION_VERIFICATION.labels("add" if add else "verify").observe(time.perf_counter() - started)
        error = answer.error if answer.error != ErrorCode.NONE else answer.results.get(key, ErrorCode.INVALID_TXN_STATE)
        return produce_error(error, answer.message)

    async def _ask(self, request: AddPartitionsRequest) -> AddPartitionsResponse:
        metadata = self._partitions.metadata
        partition = self._coordinators.partition_of(request.transactional_id)
        coordinator = metadata.leader_of(TopicPartition(TRANSACTION_STATE_TOPIC, partition)) if partition >= 0 else None
        if coordinator is None:
            return AddPartitionsResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if coordinator.broker_id == self._broker_id:
            try:
                return await self._coordinators.run(
                    request.transactional_id,
                    lambda core: core.add_partitions(request, metadata.partition_counts, wall_ms()))
            except CoordinatorError as error:
                return AddPartitionsResponse(error.error, error.message)
        stub = coordinator_pb2_grpc.CoordinatorServiceStub(self._channels.get(coordinator.address))
        try:
            response = await stub.AddPartitionsToTxn(txn_convert.add_partitions_request(request),
                                                     timeout=VERIFY_TIMEOUT_S)
        except grpc.aio.AioRpcError as error:
            log.info("%s transactional id %r at broker %d failed: %s",
                     "adding a partition to" if request.leader_add else "verifying", request.transactional_id,
                     coordinator.broker_id, error.code().name)
            timed_out = error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            return AddPartitionsResponse(ErrorCode.REQUEST_TIMED_OUT if timed_out else ErrorCode.NETWORK_EXCEPTION)
        return txn_convert.add_partitions_response_of(response)
