"""AlterPartition at the controller: a leader's ISR proposal judged, every refusal with a sentence."""

import pytest

from replog.core.cluster_image import ClusterImage
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import judge_isr_proposal
from replog.core.messages import AlterPartitionRequest, IsrMember, PartitionState
from replog.core.outcome import SUCCESS
from replog.core.topic_partition import TopicPartition

TP = TopicPartition("orders", 0)
LIVE_EPOCHS = {1: 100, 2: 200, 3: 300}
CURRENT = PartitionState(leader=1, leader_epoch=4, isr=(1, 2), partition_epoch=7, replicas=(1, 2, 3))


def proposal(leader, leader_epoch, partition_epoch, isr):
    """isr: broker ids (proposed with -1, as members already in sync may be) or (id, broker epoch) pairs."""
    members = tuple(IsrMember(*m) if isinstance(m, tuple) else IsrMember(m, -1) for m in isr)
    return AlterPartitionRequest(leader, leader_epoch, partition_epoch, members)


def judge(request, current=CURRENT, live=LIVE_EPOCHS, shutting_down=()):
    return judge_isr_proposal(TP, current, request, ClusterImage(live, shutting_down=shutting_down))


@pytest.mark.parametrize("request_, error", [
    (proposal(1, 3, 7, (1, 2)), ErrorCode.FENCED_LEADER_EPOCH),
    (proposal(1, 5, 7, (1, 2)), ErrorCode.UNKNOWN_LEADER_EPOCH),
    (proposal(2, 4, 7, (1, 2)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 6, (1,)), ErrorCode.INVALID_UPDATE_VERSION),
    (proposal(1, 4, 7, (2, 3)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 7, (1, 9)), ErrorCode.INVALID_REQUEST),
    (proposal(1, 4, 7, (1, 2, (3, 300))), ErrorCode.INELIGIBLE_REPLICA),  # 3 is not alive
])
def test_an_isr_proposal_is_checked_and_refused_with_a_sentence(request_, error):
    outcome, change = judge(request_, live={1: 100, 2: 200})
    assert outcome.error == error and len(outcome.message) > 10 and change is None


def test_a_member_proposed_with_an_old_broker_epoch_is_refused_naming_both_epochs():
    outcome, change = judge(proposal(1, 4, 7, (1, 2, (3, 299))))
    assert outcome.error == ErrorCode.INELIGIBLE_REPLICA and change is None
    assert outcome.message == ("broker 3 was proposed with broker epoch 299, but its current registration has "
                               "broker epoch 300")


def test_a_broker_in_controlled_shutdown_may_not_join():
    outcome, _ = judge(proposal(1, 4, 7, (1, 2, (3, 300))), shutting_down={3})
    assert outcome.error == ErrorCode.INELIGIBLE_REPLICA and "controlled shutdown" in outcome.message


def test_a_resent_proposal_that_was_applied_already_passes_without_a_change():
    assert judge(proposal(1, 4, 6, (1, 2))) == (SUCCESS, None)


def test_an_accepted_isr_change_bumps_only_the_partition_epoch():
    outcome, change = judge(proposal(1, 4, 7, (1, 2, (3, 300))))
    assert outcome == SUCCESS
    assert change.after == PartitionState(1, 4, (1, 2, 3), 8, (1, 2, 3)) and not change.leader_changed
