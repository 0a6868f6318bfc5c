"""The consumer's per-partition positions: reset, seek, leader changes and truncation (KIP-320)."""

import pytest

from replog.client.errors import ClientError, LogTruncationError, NoOffsetForPartitionError, OffsetOutOfRangeError
from replog.client.fetch_state import EARLIEST, Assignment, State
from replog.client.types import OffsetAndMetadata
from replog.core.topic_partition import TopicPartition

TP = TopicPartition("t", 0)


def fetching_at(position=100, last_epoch=2, leader_epoch=2, reset="earliest"):
    assignment = Assignment(reset)
    assignment.assign([TP])
    part = assignment.get(TP)
    assignment.on_reset(TP, part.generation, 0, -1, leader_epoch)
    assignment.consumed(TP, position, last_epoch)
    return assignment, assignment.get(TP)


def test_a_new_partition_waits_for_a_reset_by_the_configured_policy():
    assignment = Assignment("latest")
    assignment.assign([TP])
    part = assignment.get(TP)
    assert part.state is State.AWAIT_RESET and part.reset_strategy == "latest"
    assignment.on_reset(TP, part.generation, 42, 1, 1)
    assert (part.state, part.position, part.fetch_offset, part.last_epoch) == (State.FETCHING, 42, 42, 1)


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="auto_offset_reset"):
        Assignment("smallest")


def test_reassigning_keeps_the_positions_of_partitions_still_assigned():
    assignment, part = fetching_at(position=7)
    assignment.assign([TP, TopicPartition("t", 1)])
    assert assignment.get(TP).position == 7
    assert assignment.get(TopicPartition("t", 1)).state is State.AWAIT_RESET
    with pytest.raises(ClientError, match="not assigned"):
        assignment.get(TopicPartition("u", 0))


def test_an_answer_to_a_request_sent_before_a_seek_is_dropped():
    assignment = Assignment("earliest")
    assignment.assign([TP])
    stale_generation = assignment.get(TP).generation
    assignment.seek(TP, 500)
    assignment.on_reset(TP, stale_generation, 0, 0, 0)
    assert assignment.get(TP).position == 500


def test_seek_forgets_the_epoch_so_no_validation_follows_a_leader_change():
    assignment, part = fetching_at()
    assignment.seek(TP, 10)
    assert part.last_epoch == -1
    assert not assignment.on_leader_epoch(TP, 3)
    assert part.state is State.FETCHING and part.leader_epoch == 3


def test_a_new_leader_epoch_sends_the_position_to_validation():
    assignment, part = fetching_at(position=100, last_epoch=2, leader_epoch=2)
    part.fetch_offset = 180  # records up to 180 were buffered
    generation = part.generation
    assert assignment.on_leader_epoch(TP, 3)
    assert part.state is State.AWAIT_VALIDATION
    assert part.fetch_offset == 100, "buffered records are fetched again from the position"
    assert part.generation > generation
    assert not assignment.on_leader_epoch(TP, 3), "the same epoch again changes nothing"


def test_validation_that_finds_the_epoch_ending_at_or_after_the_position_resumes_fetching():
    assignment, part = fetching_at(position=100)
    assignment.on_leader_epoch(TP, 3)
    assignment.on_validation(TP, part.generation, end_epoch=2, end_offset=100)
    assert part.state is State.FETCHING and part.position == 100 and part.fetch_offset == 100
    assert assignment.take_error() is None


def test_validation_that_finds_the_log_ending_below_the_position_reports_truncation():
    assignment, part = fetching_at(position=100, last_epoch=2)
    assignment.on_leader_epoch(TP, 3)
    assignment.on_validation(TP, part.generation, end_epoch=2, end_offset=80)
    assert part.state is State.FAILED
    error = assignment.take_error()
    assert isinstance(error, LogTruncationError)
    assert (error.topic, error.partition, error.position, error.end_offset) == ("t", 0, 100, 80)
    assert "80..99" in str(error)
    assert assignment.take_error() is None, "each error is raised once"
    assert part.position == 100, "nothing is skipped or re-read behind the caller's back"


def test_validation_against_a_leader_without_the_epoch_reports_truncation():
    assignment, part = fetching_at(position=100, last_epoch=2)
    assignment.on_leader_epoch(TP, 4)
    assignment.on_validation(TP, part.generation, end_epoch=-1, end_offset=-1)
    error = assignment.take_error()
    assert isinstance(error, LogTruncationError) and "no record of leader epoch 2" in str(error)


def test_a_seek_after_truncation_resumes_fetching():
    assignment, part = fetching_at(position=100)
    assignment.on_leader_epoch(TP, 3)
    assignment.on_validation(TP, part.generation, end_epoch=2, end_offset=80)
    assignment.take_error()
    assignment.seek(TP, 80)
    assert part.state is State.FETCHING and part.position == 80


def test_out_of_range_resets_by_policy():
    assignment, part = fetching_at(reset="earliest")
    assignment.on_out_of_range(TP, part.generation)
    assert part.state is State.AWAIT_RESET and part.reset_strategy == "earliest"


def test_out_of_range_without_a_reset_policy_is_reported():
    assignment, part = fetching_at(reset="none")
    part.fetch_offset = 123
    assignment.on_out_of_range(TP, part.generation)
    error = assignment.take_error()
    assert isinstance(error, OffsetOutOfRangeError) and error.offset == 123


def test_seek_to_end_overrides_the_policy_for_one_lookup():
    assignment, part = fetching_at(reset="earliest")
    assignment.seek_to(TP, "latest")
    assert part.state is State.AWAIT_RESET and part.reset_strategy == "latest"
    assignment.on_reset(TP, part.generation, 900, 2, 2)
    assert part.reset_strategy == "earliest"


def test_a_negative_seek_is_refused():
    assignment, _part = fetching_at()
    with pytest.raises(ValueError):
        assignment.seek(TP, -1)


# -- a consumer with a group ------------------------------------------------------------------------


def test_with_a_group_a_new_partition_starts_at_the_committed_offset_checked_against_the_leader():
    assignment = Assignment("earliest", use_committed=True)
    assignment.add([TP])
    part = assignment.get(TP)
    assert part.state is State.AWAIT_COMMITTED
    assignment.on_committed(TP, part.generation, OffsetAndMetadata(40, "", leader_epoch=3))
    assert (part.state, part.position, part.fetch_offset, part.last_epoch) == (State.FETCHING, 40, 40, 3)
    # The committed epoch is checked against the leader's log before fetching (KIP-320).
    assert assignment.on_leader_epoch(TP, 5) and part.state is State.AWAIT_VALIDATION


def test_without_a_committed_offset_the_reset_policy_decides():
    assignment = Assignment("latest", use_committed=True)
    assignment.add([TP])
    assignment.on_committed(TP, assignment.get(TP).generation, None)
    assert assignment.get(TP).state is State.AWAIT_RESET and assignment.get(TP).reset_strategy == "latest"
    strict = Assignment("none", use_committed=True)
    strict.add([TP])
    strict.on_committed(TP, strict.get(TP).generation, None)
    assert strict.get(TP).state is State.FAILED
    with pytest.raises(NoOffsetForPartitionError, match="no committed offset for t-0"):
        raise strict.take_error()


def test_a_seek_before_the_committed_offset_arrives_wins():
    assignment = Assignment("earliest", use_committed=True)
    assignment.add([TP])
    asked_at = assignment.get(TP).generation
    assignment.seek(TP, 7)
    assignment.on_committed(TP, asked_at, OffsetAndMetadata(40))
    assert assignment.get(TP).position == 7


def test_a_revoked_partition_stops_but_keeps_the_position_a_last_commit_saves():
    assignment, part = fetching_at(position=100, last_epoch=2)
    other = TopicPartition("t", 1)
    assignment.add([other])  # no position yet
    assert assignment.committable() == {TP: OffsetAndMetadata(100, "", 2)}
    assignment.revoke([TP, other])
    assert part.state is State.REVOKING and assignment.committable() == {}
    assert assignment.committable(frozenset({State.REVOKING})) == {TP: OffsetAndMetadata(100, "", 2)}
    assignment.finish_revocation([TP, other])
    assert assignment.partitions == {}


def test_finishing_a_revocation_keeps_a_partition_assigned_again_meanwhile():
    assignment, _ = fetching_at()
    assignment.revoke([TP])
    assignment.remove([TP])  # lost ...
    assignment.add([TP])  # ... and assigned again before poll() got to the revocation
    assignment.finish_revocation([TP])
    assert assignment.get(TP).state is State.AWAIT_RESET


def test_pause_is_refused_for_a_partition_not_assigned_and_survives_a_seek_and_a_reassignment():
    assignment = Assignment(EARLIEST)
    assignment.assign([TP])
    with pytest.raises(ClientError, match="is not assigned to this consumer"):
        assignment.pause([TopicPartition("t", 9)])
    assignment.pause([TP])
    assignment.seek(TP, 5)
    assignment.assign([TP, TopicPartition("t", 1)])
    assert assignment.paused() == {TP}
    assert assignment.get(TP).position == 5
