"""A reassignment's replica sets (KIP-455): target first, then the original replicas being removed."""

from replog.core.errors import ErrorCode
from replog.core.outcome import Rejection
from replog.core.reassignment import ReplicaSets, is_complete, plan_cancel, plan_reassignment

LIVE = {1, 2, 3, 4, 5}


def test_a_move_lists_the_target_then_the_replicas_leaving():
    sets = plan_reassignment(ReplicaSets((1, 2, 3)), (4, 1, 2), LIVE)
    assert sets == ReplicaSets(replicas=(4, 1, 2, 3), adding=(4,), removing=(3,))
    assert sets.in_progress and sets.target == (4, 1, 2) and sets.original == (1, 2, 3)


def test_it_finishes_once_every_target_replica_is_in_the_isr():
    sets = plan_reassignment(ReplicaSets((1, 2, 3)), (4, 1, 2), LIVE)
    assert not is_complete(sets, (1, 2, 3))
    assert is_complete(sets, (1, 2, 3, 4))


def test_a_new_target_during_a_move_starts_again_from_the_original_replicas():
    moving = ReplicaSets(replicas=(4, 1, 2, 3), adding=(4,), removing=(3,))
    sets = plan_reassignment(moving, (5, 2, 3), LIVE)
    assert sets == ReplicaSets(replicas=(5, 2, 3, 1), adding=(5,), removing=(1,))


def test_a_cancel_goes_back_to_the_original_replicas_and_needs_a_move_to_cancel():
    moving = ReplicaSets(replicas=(4, 1, 2, 3), adding=(4,), removing=(3,))
    assert plan_cancel(moving) == ReplicaSets((1, 2, 3))
    refused = plan_cancel(ReplicaSets((1, 2, 3)))
    assert isinstance(refused, Rejection) and refused.error == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_a_target_naming_a_broker_twice_or_a_dead_one_is_refused_with_a_sentence():
    for target, words in (((1, 1, 2), "twice"), ((1, 2, 9), "[9] are not alive")):
        refused = plan_reassignment(ReplicaSets((1, 2, 3)), target, LIVE)
        assert isinstance(refused, Rejection) and refused.error == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert words in refused.message
