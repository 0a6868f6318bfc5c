"""The ControllerService conversions: what a broker sends is what the controller judges, and back."""

import pytest

from replog.api.controller.v1 import controller_pb2
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import ProposalOutcome
from replog.core.messages import AlterPartitionRequest, IsrMember, PartitionState
from replog.core.outcome import Outcome
from replog.core.topic_partition import TopicPartition
from replog.rpc import controller_convert as convert

ORDERS_0, ORDERS_1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def test_every_proposed_member_crosses_the_wire_with_its_broker_epoch():
    proposals = [
        (ORDERS_0, AlterPartitionRequest(1, 4, 7, (IsrMember(1, -1), IsrMember(2, 41), IsrMember(3, 1 << 40)))),
        (ORDERS_1, AlterPartitionRequest(1, 2, 3, (IsrMember(1, -1),))),
    ]
    sent = convert.alter_partition_request(1, 17, proposals)
    received = controller_pb2.AlterPartitionRequest.FromString(sent.SerializeToString())
    assert (received.broker_id, received.broker_epoch) == (1, 17)
    assert convert.isr_proposals(received) == proposals


def test_the_leader_adopts_a_state_only_from_an_accepted_proposal():
    accepted = ProposalOutcome(ORDERS_0, ErrorCode.NONE, "", PartitionState(1, 4, (1, 2), 8, (1, 2, 3)))
    refused = ProposalOutcome(ORDERS_1, ErrorCode.INELIGIBLE_REPLICA, "broker 3 ...",
                              PartitionState(1, 2, (1,), 3, (1, 3)))
    response = convert.alter_partition_results([accepted, refused])
    first, second = (convert.alter_partition_response(r) for r in response.partitions)
    assert first.error == ErrorCode.NONE and first.state == PartitionState(1, 4, (1, 2), 8, ())
    assert second.error == ErrorCode.INELIGIBLE_REPLICA and second.state is None
    assert response.partitions[1].error_message == "broker 3 ..."


def test_a_refused_request_carries_the_error_and_no_results():
    response = convert.alter_partition_results([], Outcome(ErrorCode.STALE_BROKER_EPOCH, "old"))
    assert ErrorCode.of(response.error_code) == ErrorCode.STALE_BROKER_EPOCH and not response.partitions


def test_an_alter_configs_change_without_an_op_is_a_malformed_request():
    request = controller_pb2.AlterConfigsRequest(resources=[controller_pb2.AlterConfigsResource(
        resource_type=controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC, resource_name="orders",
        configs=[controller_pb2.AlterableConfig(name="retention.ms", value="1")])])
    with pytest.raises(convert.MalformedRequest, match="retention.ms"):
        convert.config_changes(request)
