"""CoordinatorService's transaction messages <-> the transaction coordinator's core values."""

from __future__ import annotations

from collections.abc import Iterable

from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.requests import (
    AddOffsetsRequest,
    AddPartitionsRequest,
    AddPartitionsResponse,
    Answer,
    DescribedTransaction,
    EndTxnRequest,
    InitProducerIdRequest,
    ListedTransaction,
    ProducerIdAndEpoch,
)
from replog.core.txn.state import TxnState
from replog.rpc.coordinator_convert import grouped, keys_of


def init_producer_id_request_of(request: coordinator_pb2.InitProducerIdRequest) -> InitProducerIdRequest:
    return InitProducerIdRequest(request.transactional_id, request.transaction_timeout_ms, request.producer_id,
                                 request.producer_epoch)


def init_producer_id_response(answer: ProducerIdAndEpoch,
                              transaction_version: int = 1) -> coordinator_pb2.InitProducerIdResponse:
    return coordinator_pb2.InitProducerIdResponse(error_code=int(answer.error), error_message=answer.message,
                                                  producer_id=answer.producer_id, producer_epoch=answer.producer_epoch,
                                                  transaction_version=transaction_version)


def add_partitions_request_of(request: coordinator_pb2.AddPartitionsToTxnRequest) -> AddPartitionsRequest:
    return AddPartitionsRequest(request.transactional_id, request.producer_id, request.producer_epoch,
                                frozenset(keys_of(request.topics)), request.verify_only,
                                request.leader_add and not request.verify_only)


def add_partitions_request(request: AddPartitionsRequest) -> coordinator_pb2.AddPartitionsToTxnRequest:
    return coordinator_pb2.AddPartitionsToTxnRequest(
        transactional_id=request.transactional_id, producer_id=request.producer_id,
        producer_epoch=request.producer_epoch, verify_only=request.verify_only, leader_add=request.leader_add,
        topics=grouped(request.partitions))


def add_partitions_response(answer: AddPartitionsResponse,
                            partitions: Iterable[TopicPartition]) -> coordinator_pb2.AddPartitionsToTxnResponse:
    """The answer, with a result for every partition asked about (the whole request's error where the core
    gave none per partition)."""
    return coordinator_pb2.AddPartitionsToTxnResponse(
        error_code=int(answer.error), error_message=answer.message,
        results=[common_pb2.PartitionResult(topic=tp.topic, partition=tp.partition,
                                            error_code=int(answer.results.get(tp, answer.error)))
                 for tp in sorted(set(partitions))])


def add_partitions_response_of(response: coordinator_pb2.AddPartitionsToTxnResponse) -> AddPartitionsResponse:
    return AddPartitionsResponse(ErrorCode.of(response.error_code), response.error_message,
                                 {TopicPartition(r.topic, r.partition): ErrorCode.of(r.error_code)
                                  for r in response.results})


def add_offsets_request_of(request: coordinator_pb2.AddOffsetsToTxnRequest) -> AddOffsetsRequest:
    return AddOffsetsRequest(request.transactional_id, request.producer_id, request.producer_epoch, request.group_id)


def add_offsets_response(answer: Answer) -> coordinator_pb2.AddOffsetsToTxnResponse:
    return coordinator_pb2.AddOffsetsToTxnResponse(error_code=int(answer.error), error_message=answer.message)


def end_txn_request_of(request: coordinator_pb2.EndTxnRequest) -> EndTxnRequest:
    return EndTxnRequest(request.transactional_id, request.producer_id, request.producer_epoch, request.committed)


def end_txn_response(answer: ProducerIdAndEpoch, transaction_version: int = 1) -> coordinator_pb2.EndTxnResponse:
    return coordinator_pb2.EndTxnResponse(error_code=int(answer.error), error_message=answer.message,
                                          producer_id=answer.producer_id, producer_epoch=answer.producer_epoch,
                                          transaction_version=transaction_version)


def state_filters_of(names: Iterable[str]) -> tuple[set[TxnState], list[str]]:
    """The states named (Kafka's names, as ListTransactions takes them) and the names that are no state."""
    by_name = {state.kafka_name: state for state in TxnState}
    names = list(names)
    return {by_name[n] for n in names if n in by_name}, [n for n in names if n not in by_name]


def listed_transactions(listed: Iterable[ListedTransaction]) -> list[coordinator_pb2.TransactionListing]:
    return [coordinator_pb2.TransactionListing(transactional_id=t.transactional_id, producer_id=t.producer_id,
                                               state=t.state) for t in listed]


def described_transaction(described: DescribedTransaction) -> coordinator_pb2.TransactionDescription:
    return coordinator_pb2.TransactionDescription(
        error_code=int(described.error), error_message=described.message,
        transactional_id=described.transactional_id, state=described.state, producer_id=described.producer_id,
        producer_epoch=described.producer_epoch, transaction_timeout_ms=described.timeout_ms,
        transaction_start_time_ms=described.start_timestamp_ms,
        topics=grouped(described.partitions))
