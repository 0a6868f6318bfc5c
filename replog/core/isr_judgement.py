"""AlterPartition at the controller: a leader's ISR proposal judged by `election.alter_partition`,
with one sentence for every refusal (KIP-903's broker epochs included)."""

from dataclasses import dataclass

from . import election
from .cluster_image import ClusterImage
from .errors import ErrorCode
from .messages import AlterPartitionRequest, PartitionState
from .outcome import SUCCESS, Outcome
from .partition_change import PartitionChange
from .topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class ProposalOutcome:
    """AlterPartition's answer for one partition: the error, why, and the partition's state."""

    partition: TopicPartition
    error: ErrorCode
    message: str = ""
    state: PartitionState | None = None


def judge_isr_proposal(
    partition: TopicPartition, state: PartitionState, request: AlterPartitionRequest, image: ClusterImage
) -> tuple[Outcome, PartitionChange | None]:
    """(SUCCESS, the change to write), (SUCCESS, None) when the proposal changes nothing (it is
    the current ISR, or a resend of one applied already), or (why not, None).

    Every member comes with the broker epoch the leader saw it fetch with; one
    joining must be live at exactly that epoch and not in controlled shutdown.
    """
    error, decided = election.alter_partition(state, request, image.broker_epochs, image.shutting_down)
    if error != ErrorCode.NONE:
        return Outcome(error, _why_not(error, state, request, image)), None
    if (decided.isr, decided.partition_epoch) == (state.isr, state.partition_epoch):
        return SUCCESS, None
    return SUCCESS, PartitionChange(partition, state, decided)


def _why_not(error: ErrorCode, state: PartitionState, request: AlterPartitionRequest, image: ClusterImage) -> str:
    if error == ErrorCode.FENCED_LEADER_EPOCH:
        return f"leader epoch {request.leader_epoch} is older than the current {state.leader_epoch}"
    if error == ErrorCode.UNKNOWN_LEADER_EPOCH:
        return (f"leader epoch {request.leader_epoch} is newer than this controller's {state.leader_epoch}; "
                "it may no longer be the active controller")
    if error == ErrorCode.INVALID_UPDATE_VERSION:
        return f"partition epoch {request.partition_epoch} is not the current {state.partition_epoch}"
    if error == ErrorCode.INELIGIBLE_REPLICA:
        return "; ".join(election.ineligible_isr_members(state, request, image.broker_epochs, image.shutting_down))
    if request.leader_id != state.leader:
        return f"broker {request.leader_id} is not the leader (the leader is {state.leader})"
    return (f"the ISR {list(request.isr)} must be distinct replicas of {list(state.replicas)} "
            f"including the leader {state.leader}")
