"""The ControllerService API between protobuf and the core's types, both ways, in one place.

The controller's servicer decodes requests and encodes answers here; a broker's
line to the controller encodes its AlterPartition and ControlledShutdown
requests and decodes the answers here.
"""

from __future__ import annotations

from collections.abc import Iterable

from replog.api.controller.v1 import controller_pb2
from replog.core.errors import ErrorCode
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse, IsrMember, PartitionState
from replog.core.topic_partition import TopicPartition

# -- AlterPartition -------------------------------------------------------------------------------


def alter_partition_request(
    broker_id: int, broker_epoch: int, proposals: Iterable[tuple[TopicPartition, AlterPartitionRequest]]
) -> controller_pb2.AlterPartitionRequest:
    """A leader's proposals, each ISR member with the broker epoch the leader saw it fetch with (KIP-903)."""
    return controller_pb2.AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=broker_epoch,
        partitions=[
            controller_pb2.AlterPartitionProposal(
                topic=partition.topic, partition=partition.partition, leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr_with_epochs=[controller_pb2.IsrMember(broker_id=m.broker_id, broker_epoch=m.broker_epoch)
                                     for m in proposal.new_isr])
            for partition, proposal in proposals
        ])


def isr_proposals(request: controller_pb2.AlterPartitionRequest) -> list[tuple[TopicPartition, AlterPartitionRequest]]:
    """The proposals of an AlterPartition, in request order, as the core judges them."""
    return [
        (TopicPartition(p.topic, p.partition),
         AlterPartitionRequest(request.broker_id, p.leader_epoch, p.partition_epoch,
                               tuple(IsrMember(m.broker_id, m.broker_epoch) for m in p.new_isr_with_epochs)))
        for p in request.partitions
    ]


def alter_partition_response(result: controller_pb2.AlterPartitionResult) -> AlterPartitionResponse:
    """One partition's answer as the leader's core takes it: the state only when the proposal was applied."""
    error = ErrorCode.of(result.error_code)
    if error != ErrorCode.NONE:
        return AlterPartitionResponse(error)
    return AlterPartitionResponse(
        ErrorCode.NONE,
        PartitionState(leader=result.leader, leader_epoch=result.leader_epoch, isr=tuple(result.isr),
                       partition_epoch=result.partition_epoch, replicas=()),
    )
