"""Offsets committed in a transaction (TxnOffsetCommit): pending per producer until a marker on the offsets
partition ends the transaction; COMMIT makes them the group's offsets, ABORT drops them; a replay of the
partition in log order ends where the live coordinator did."""

from replog.core.errors import ErrorCode
from replog.core.group import records as rec
from replog.core.group.coordinator import GroupCoordinatorShard
from replog.core.group.requests import GroupConfig, OffsetCommit, TxnCommitRequest
from replog.core.topic_partition import TopicPartition

TP = TopicPartition("t", 0)
TOPICS = {"t": 2}


def commit_request(offset: int, producer_id: int = 7, epoch: int = 0, **fields) -> TxnCommitRequest:
    return TxnCommitRequest("txn", "g", producer_id, epoch, offsets={TP: OffsetCommit(offset)}, **fields)


def committed(shard: GroupCoordinatorShard, require_stable: bool = False) -> tuple[ErrorCode, int]:
    found = shard.fetch_offsets("g", [TP], require_stable)[TP]
    return found.error, found.offset


def pending_commit(shard: GroupCoordinatorShard, offset: int, producer_id: int = 7) -> tuple[rec.GroupRecord, ...]:
    """What the driver does: the records the core made, applied once appended."""
    result = shard.commit_transactional_offsets(commit_request(offset, producer_id), TOPICS, wall_ms=1_000)
    assert result.response == {TP: result.response[TP]} and result.response[TP].error == ErrorCode.NONE
    for record in result.records:
        shard.replay_transactional(producer_id, record)
    return result.records


def test_a_transactional_commit_is_invisible_until_its_commit_marker():
    shard = GroupCoordinatorShard(GroupConfig())
    pending_commit(shard, 42)
    assert committed(shard) == (ErrorCode.NONE, -1)
    assert committed(shard, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    assert shard.complete_transaction(7, commit=True) == 1
    assert committed(shard, require_stable=True) == (ErrorCode.NONE, 42)


def test_an_abort_drops_the_pending_offsets_and_keeps_the_committed_one():
    shard = GroupCoordinatorShard(GroupConfig())
    pending_commit(shard, 42)
    shard.complete_transaction(7, commit=True)
    pending_commit(shard, 99)
    assert shard.complete_transaction(7, commit=False) == 1
    assert committed(shard, require_stable=True) == (ErrorCode.NONE, 42)
    assert shard.complete_transaction(7, commit=True) == 0, "a second marker finds nothing pending"
    assert committed(shard) == (ErrorCode.NONE, 42)


def test_the_core_does_not_apply_a_transactional_commit_itself():
    shard = GroupCoordinatorShard(GroupConfig())
    result = shard.commit_transactional_offsets(commit_request(5), TOPICS, wall_ms=1_000)
    assert len(result.records) == 1
    assert shard.complete_transaction(7, commit=True) == 0, "nothing pending until the driver appended the batch"


def test_producers_complete_independently():
    shard = GroupCoordinatorShard(GroupConfig())
    pending_commit(shard, 10, producer_id=1)
    pending_commit(shard, 20, producer_id=2)
    shard.complete_transaction(2, commit=True)
    assert committed(shard, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1), "producer 1's is open"
    shard.complete_transaction(1, commit=False)
    assert committed(shard, require_stable=True) == (ErrorCode.NONE, 20)


def test_a_replay_in_log_order_ends_where_the_live_coordinator_did():
    live = GroupCoordinatorShard(GroupConfig())
    log: list[tuple[str, object]] = []
    for record in pending_commit(live, 42):
        log.append(("txn", record))
    live.complete_transaction(7, commit=True)
    log.append(("commit", None))
    for record in pending_commit(live, 99):
        log.append(("txn", record))
    live.complete_transaction(7, commit=False)
    log.append(("abort", None))

    replayed = GroupCoordinatorShard(GroupConfig())
    for kind, record in log:
        if kind == "txn":
            replayed.replay_transactional(7, record)
        else:
            replayed.complete_transaction(7, commit=kind == "commit")
    assert committed(replayed, True) == committed(live, True) == (ErrorCode.NONE, 42)


def test_bad_transactional_commits_are_refused_with_a_reason():
    shard = GroupCoordinatorShard(GroupConfig())
    negative = shard.commit_transactional_offsets(commit_request(5, epoch=-1), TOPICS, wall_ms=1)
    assert negative.response[TP].error == ErrorCode.INVALID_REQUEST and not negative.records
    unknown = shard.commit_transactional_offsets(TxnCommitRequest(
        "txn", "g", 7, 0, offsets={TopicPartition("nope", 0): OffsetCommit(1)}), TOPICS, wall_ms=1)
    assert unknown.response[TopicPartition("nope", 0)].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert not unknown.records
    stranger = shard.commit_transactional_offsets(commit_request(5, member_id="m-1", member_epoch=3), TOPICS,
                                                  wall_ms=1)
    assert stranger.response[TP].error == ErrorCode.UNKNOWN_MEMBER_ID
