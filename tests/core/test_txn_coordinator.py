"""The transaction coordinator: producers get ids and epochs, transactions open, end with markers on
every partition they touched and complete; every end bumps the epoch (KIP-890), so that calls of an
ended transaction or a fenced producer are refused; a failover resumes what was in flight."""

from dataclasses import replace

import pytest

from replog.core.errors import ErrorCode
from replog.core.key_placement import partition_for
from replog.core.producer_ids import ProducerIds, next_block
from replog.core.topic_partition import TopicPartition
from replog.core.txn.coordinator import TransactionCoordinator
from replog.core.txn.metadata import PRODUCER_EPOCH_MAX
from replog.core.txn.placement import partition_for_transactional_id
from replog.core.txn.records import TxnRecord, decode
from replog.core.txn.requests import (
    AddAnswered,
    AddHeld,
    AddOffsetsRequest,
    AddPartitionsResponse,
    InitProducerIdRequest,
    ProducerFenced,
    TransactionCompleted,
    TransactionTimedOut,
    TxnConfig,
)
from replog.core.txn.state import TxnState

from .txn_harness import T0, T1, TIMEOUT_MS, U0, Coordinator, answered, started


def test_a_committed_transaction_writes_markers_to_its_partitions_and_completes_once_all_are_written():
    c = Coordinator(coordinator_epoch=5)
    pid, epoch = started(c, T0, U0)
    assert c.state() is TxnState.ONGOING
    answer = c.end(pid, epoch, commit=True)
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert c.state() is TxnState.PREPARE_COMMIT
    (markers,) = c.markers
    assert (markers.producer_id, markers.producer_epoch, markers.coordinator_epoch, markers.commit,
            markers.partitions) == (pid, epoch + 1, 5, True, {T0, U0})
    c.ack(markers, partitions=[T0])
    assert c.state() is TxnState.PREPARE_COMMIT, "one partition still lacks its marker"
    c.ack(markers, partitions=[U0])
    assert c.state() is TxnState.COMPLETE_COMMIT
    assert c.core.get("tx").partitions == frozenset()
    assert any(isinstance(e, TransactionCompleted) and e.commit for e in c.events)


def test_a_partition_that_refuses_its_marker_for_a_while_gets_it_again_until_it_takes_it():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=False)
    markers = c.markers.pop()
    c.ack(markers, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    (again,) = c.markers
    assert again == markers and c.state() is TxnState.PREPARE_ABORT
    c.ack(again, ErrorCode.INVALID_PRODUCER_EPOCH)  # the first one arrived after all: the epoch moved there
    assert c.state() is TxnState.COMPLETE_ABORT


def test_a_retried_end_txn_of_the_transaction_just_ended_is_answered_as_the_first_was():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    assert c.end(pid, epoch, commit=True).error == ErrorCode.CONCURRENT_TRANSACTIONS, "markers still going out"
    c.ack_all()
    retry = c.end(pid, epoch, commit=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert c.end(pid, epoch, commit=False).error == ErrorCode.INVALID_TXN_STATE, "it committed; it cannot abort"


def test_a_late_end_txn_of_an_ended_transaction_cannot_end_the_next_one():
    """Jepsen 2024: a delayed commit or abort must not commit or abort a later transaction."""
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=False)
    c.ack_all()
    c.add(pid, epoch + 1, T1)  # the next transaction, at the next epoch
    late = c.end(pid, epoch, commit=True)
    assert late.error == ErrorCode.PRODUCER_FENCED
    assert c.state() is TxnState.ONGOING and c.core.get("tx").partitions == {T1}


def test_the_next_transaction_waits_until_the_last_one_has_all_its_markers_and_starts_in_the_same_write():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1})), "held while the markers are out"
    assert c.add(pid, epoch + 1, U0, leader_add=True) == AddHeld("tx", frozenset({U0})), "a second one too"
    assert c.add(pid, epoch + 1, T1, verify_only=True).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert c.state() is TxnState.PREPARE_COMMIT and not answered(c)
    c.hold = True
    c.ack_all()
    (write,) = c.writing
    assert [r.metadata.state for r in write.records] == [TxnState.COMPLETE_COMMIT, TxnState.ONGOING], \
        "the last transaction's end and the next one's start in one write"
    assert write.records[1].metadata.partitions == {T1, U0}
    assert answered(c) == [AddAnswered("tx", AddPartitionsResponse(ErrorCode.NONE, "", {T1: ErrorCode.NONE,
                                                                                      U0: ErrorCode.NONE}))]
    c.persist()
    assert c.state() is TxnState.ONGOING and c.core.get("tx").producer_epoch == epoch + 1


def test_an_add_not_held_is_answered_at_once():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    assert c.add(pid, epoch, T1).error == ErrorCode.PRODUCER_FENCED, "the ended transaction's epoch"
    unknown = c.add(pid, epoch + 1, TopicPartition("t", 7))
    assert unknown.results == {TopicPartition("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    c.ack_all()
    assert c.state() is TxnState.COMPLETE_COMMIT and not answered(c)


def test_a_held_add_taken_back_leaves_the_transaction_to_complete_alone():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=False)
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1})), "after an abort too"
    assert c.core.release_held("tx", frozenset({T1})), "undecided: its driver answers CONCURRENT_TRANSACTIONS"
    c.ack_all()
    assert c.state() is TxnState.COMPLETE_ABORT and not answered(c)
    assert c.add(pid, epoch + 1, T1).error == ErrorCode.NONE


def test_partition_leaders_adding_side_by_side_are_held_while_the_first_add_is_written_then_merged():
    """Transactions v2 (KIP-890 part 2): the leaders of a transaction's partitions add them, at once."""
    c = Coordinator()
    answer = c.init()
    pid, epoch = answer.producer_id, answer.producer_epoch
    c.hold = True
    first = c.add(pid, epoch, T0, leader_add=True)
    assert first.results == {T0: ErrorCode.NONE}, "answered once its write is committed"
    assert c.add(pid, epoch, T1, leader_add=True) == AddHeld("tx", frozenset({T1})), "while T0's write is out"
    assert c.add(pid, epoch, U0, leader_add=True) == AddHeld("tx", frozenset({U0}))
    assert c.add(pid, epoch, T1, verify_only=True).error == ErrorCode.NONE, "a verification decides nothing"
    c.persist()
    (merged,) = c.writing
    assert [r.metadata.partitions for r in merged.records] == [{T0, T1, U0}], "the held adds in one write"
    assert answered(c) == [AddAnswered("tx", AddPartitionsResponse(ErrorCode.NONE, "", {T1: ErrorCode.NONE,
                                                                                      U0: ErrorCode.NONE}))]
    assert c.add(pid, epoch, T0, leader_add=True) == AddHeld("tx", frozenset({T0})), "while the merge is out"
    c.persist()
    assert not c.writing, "T0 is in already: answered without a write"
    assert answered(c)[-1] == AddAnswered("tx", AddPartitionsResponse(ErrorCode.NONE, "", {T0: ErrorCode.NONE}))
    assert c.state() is TxnState.ONGOING and c.core.get("tx").partitions == {T0, T1, U0}


def test_held_adds_are_taken_back_one_by_one_and_let_go_when_the_write_they_waited_for_is_refused():
    c = Coordinator()
    answer = c.init()
    pid, epoch = answer.producer_id, answer.producer_epoch
    c.hold = True
    c.add(pid, epoch, T0, leader_add=True)
    c.add(pid, epoch, T1, leader_add=True)
    c.add(pid, epoch, U0, leader_add=True)
    assert c.core.release_held("tx", frozenset({T1})), "undecided: answered CONCURRENT_TRANSACTIONS"
    c.persist()
    (write,) = c.writing
    assert write.records[0].metadata.partitions == {T0, U0}, "T1 was taken back"
    assert not c.core.release_held("tx", frozenset({U0})), "decided and being written: its write answers it"
    c.refuse()
    assert c.core.release_held("tx", frozenset({U0})), "refused: let go"
    c.add(pid, epoch, T1, leader_add=True)
    c.refuse()
    assert c.state() is TxnState.ONGOING and c.core.get("tx").partitions == {T0}
    c.hold = False
    assert c.add(pid, epoch, T1, leader_add=True).results == {T1: ErrorCode.NONE}, "asked again: added"


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction():
    c = Coordinator()
    pid, old_epoch = started(c, T0)
    answer = c.init()
    assert answer.error == ErrorCode.CONCURRENT_TRANSACTIONS, "the old transaction is being aborted first"
    assert c.state() is TxnState.PREPARE_ABORT
    (markers,) = c.markers
    assert not markers.commit and markers.producer_epoch == old_epoch + 1
    assert any(isinstance(e, ProducerFenced) for e in c.events)
    assert c.end(pid, old_epoch, commit=True).error == ErrorCode.PRODUCER_FENCED
    c.ack_all()
    answer = c.init()
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (ErrorCode.NONE, pid, old_epoch + 2)
    assert c.add(pid, old_epoch, T0).error == ErrorCode.PRODUCER_FENCED
    assert c.end(pid, old_epoch, commit=False).error == ErrorCode.PRODUCER_FENCED, "a fenced epoch is no retry"


def test_a_transaction_open_past_its_timeout_is_aborted_with_an_epoch_bump():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.now_ms += TIMEOUT_MS
    c.take(c.core.tick(c.now_ms))
    assert c.state() is TxnState.ONGOING, "not past it yet"
    c.now_ms += 1
    c.take(c.core.tick(c.now_ms))
    assert c.state() is TxnState.PREPARE_ABORT
    assert any(isinstance(e, TransactionTimedOut) for e in c.events)
    (markers,) = c.markers
    assert not markers.commit and markers.producer_epoch == epoch + 1
    c.ack_all()
    assert c.state() is TxnState.COMPLETE_ABORT


def timed_out(c: Coordinator) -> tuple[int, int]:
    """The id and epoch of a producer whose transaction on T0 its coordinator aborted after the timeout."""
    pid, epoch = started(c, T0)
    c.now_ms += TIMEOUT_MS + 1
    c.take(c.core.tick(c.now_ms))
    c.ack_all()
    assert c.state() is TxnState.COMPLETE_ABORT
    return pid, epoch


def test_a_producer_whose_transaction_timed_out_is_told_so_and_goes_on_once_it_aborts():
    """KIP-588: a timeout is no fence; the producer's calls at its old epoch say the transaction was aborted,
    and its abort is answered the bumped epoch, with which the next transaction commits."""
    c = Coordinator()
    pid, epoch = timed_out(c)
    for late in (c.add(pid, epoch, T1), c.add(pid, epoch, T0, verify_only=True)):
        assert late.error == ErrorCode.INVALID_PRODUCER_EPOCH and "transaction.timeout.ms" in late.message
    assert c.core.add_offsets(AddOffsetsRequest("tx", pid, epoch, "g"), c.now_ms).response.error == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    commit = c.end(pid, epoch, commit=True)
    assert commit.error == ErrorCode.TRANSACTION_ABORTABLE and f"{TIMEOUT_MS} ms" in commit.message
    assert c.state() is TxnState.COMPLETE_ABORT, "nothing written"
    aborted = c.end(pid, epoch, commit=False)
    assert (aborted.error, aborted.producer_id, aborted.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert c.end(pid, epoch, commit=False).producer_epoch == epoch + 1, "a retry gets the same answer"
    assert c.add(pid, epoch + 1, T1).error == ErrorCode.NONE
    assert c.end(pid, epoch + 1, commit=True).error == ErrorCode.NONE
    c.ack_all()
    assert c.state() is TxnState.COMPLETE_COMMIT
    assert c.end(pid, epoch, commit=False).error == ErrorCode.PRODUCER_FENCED, "two transactions late"


def test_a_timed_out_producer_may_also_recover_with_init_producer_id():
    c = Coordinator()
    pid, epoch = timed_out(c)
    again = c.init(producer_id=pid, producer_epoch=epoch)
    assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)


def test_a_newer_instance_after_a_timeout_fences_the_timed_out_producer_for_good():
    c = Coordinator()
    pid, epoch = timed_out(c)
    newer = c.init()
    assert (newer.error, newer.producer_epoch) == (ErrorCode.NONE, epoch + 2)
    assert c.add(pid, epoch, T1).error == ErrorCode.PRODUCER_FENCED
    assert c.end(pid, epoch, commit=False).error == ErrorCode.PRODUCER_FENCED
    assert c.end(pid, epoch, commit=True).error == ErrorCode.PRODUCER_FENCED
    assert c.init(producer_id=pid, producer_epoch=epoch).error == ErrorCode.PRODUCER_FENCED


def test_a_timeout_at_the_last_epoch_fences_since_no_epoch_is_left_to_go_on_with():
    c = Coordinator()
    pid, _ = started(c)
    c.core.replay(TxnRecord("tx", replace(c.core.get("tx"), producer_epoch=PRODUCER_EPOCH_MAX - 2)))
    epoch = PRODUCER_EPOCH_MAX - 2
    assert c.add(pid, epoch, T0).error == ErrorCode.NONE
    c.now_ms += TIMEOUT_MS + 1
    c.take(c.core.tick(c.now_ms))
    c.ack_all()
    assert c.end(pid, epoch, commit=False).error == ErrorCode.PRODUCER_FENCED


def test_init_producer_id_hands_out_new_ids_and_bumps_epochs():
    c = Coordinator()
    first = c.init()
    assert (first.error, first.producer_epoch) == (ErrorCode.NONE, 0)
    second = c.init()
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    other = c.init("other")
    assert other.producer_id != first.producer_id


def test_a_producer_recovering_with_its_epoch_gets_the_next_one_and_a_retry_gets_the_same_answer():
    c = Coordinator()
    pid, epoch = started(c)
    bumped = c.init(producer_id=pid, producer_epoch=epoch)
    assert (bumped.producer_id, bumped.producer_epoch) == (pid, epoch + 1)
    retry = c.init(producer_id=pid, producer_epoch=epoch)
    assert (retry.error, retry.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    assert c.init(producer_id=pid + 1, producer_epoch=0).error == ErrorCode.PRODUCER_FENCED


def test_the_last_epoch_of_a_producer_id_moves_the_producer_to_a_new_id():
    c = Coordinator()
    pid, _ = started(c)
    exhausted = PRODUCER_EPOCH_MAX - 1
    c.core.replay(_at_epoch(c.core, "tx", exhausted))
    c.add(pid, exhausted, T0)
    answer = c.end(pid, exhausted, commit=True)
    new_pid = answer.producer_id
    assert new_pid != pid and answer.producer_epoch == 0
    (markers,) = c.markers
    assert (markers.producer_id, markers.producer_epoch) == (pid, PRODUCER_EPOCH_MAX), "markers end the old id"
    c.ack_all()
    metadata = c.core.get("tx")
    assert (metadata.producer_id, metadata.producer_epoch, metadata.previous_producer_id) == (new_pid, 0, pid)
    retry = c.end(pid, exhausted, commit=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, new_pid, 0)
    assert c.add(new_pid, 0, T1).error == ErrorCode.NONE


def test_init_producer_id_at_the_last_epoch_moves_to_a_new_id():
    c = Coordinator()
    pid, _ = started(c)
    c.core.replay(_at_epoch(c.core, "tx", PRODUCER_EPOCH_MAX - 1))
    answer = c.init(producer_id=pid, producer_epoch=PRODUCER_EPOCH_MAX - 1)
    assert answer.producer_id != pid and answer.producer_epoch == 0
    retry = c.init(producer_id=pid, producer_epoch=PRODUCER_EPOCH_MAX - 1)
    assert (retry.producer_id, retry.producer_epoch) == (answer.producer_id, 0)


def _at_epoch(core: TransactionCoordinator, tid: str, epoch: int) -> TxnRecord:
    """The id's record as if its producer had come to `epoch` (thousands of transactions later)."""
    return TxnRecord(tid, replace(core.get(tid), producer_epoch=epoch, last_producer_epoch=-1))


def test_an_abort_with_nothing_added_still_moves_the_epoch_on_and_sends_no_marker():
    c = Coordinator()
    pid, epoch = started(c)
    answer = c.end(pid, epoch, commit=False)
    assert (answer.error, answer.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    assert c.state() is TxnState.COMPLETE_ABORT and c.markers == []
    assert c.end(pid, epoch + 1, commit=True).error == ErrorCode.INVALID_TXN_STATE, "nothing to commit"


def test_verification_tells_a_partition_leader_whether_a_partition_is_in_the_ongoing_transaction():
    c = Coordinator()
    pid, epoch = started(c, T0)
    answer = c.add(pid, epoch, T0, T1, verify_only=True)
    assert answer.results == {T0: ErrorCode.NONE, T1: ErrorCode.TRANSACTION_ABORTABLE}
    assert c.core.get("tx").partitions == {T0}, "verifying adds nothing"
    assert c.add(pid, epoch - 1 if epoch else epoch + 1, T0, verify_only=True).error == ErrorCode.PRODUCER_FENCED


def test_bad_requests_get_kafkas_errors_and_write_nothing():
    c = Coordinator()
    pid, epoch = started(c)
    written = len(c.log)
    assert c.init("").error == ErrorCode.INVALID_REQUEST
    assert c.init(timeout_ms=0).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert c.init(timeout_ms=c.config.max_timeout_ms + 1).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert c.end(pid, epoch, commit=True, tid="nobody").error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.add(pid + 7, epoch, T0).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    unknown = c.add(pid, epoch, T0, TopicPartition("nope", 0), TopicPartition("t", 9))
    assert unknown.results == {T0: ErrorCode.OPERATION_NOT_ATTEMPTED,
                               TopicPartition("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               TopicPartition("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert c.end(pid, epoch, commit=True).error == ErrorCode.INVALID_TXN_STATE
    assert c.core.describe("nobody").error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert len(c.log) == written


def test_a_coordinator_without_producer_ids_at_hand_asks_the_producer_to_retry():
    c = Coordinator()
    c.ids.exhausted = True
    assert c.init().error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and c.log == []


def test_a_loading_coordinator_answers_coordinator_load_in_progress():
    core = TransactionCoordinator(TxnConfig(), Coordinator().ids, 1)
    assert core.init_producer_id(InitProducerIdRequest("tx", TIMEOUT_MS), 0).response.error == \
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert core.describe("tx").error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_add_offsets_adds_the_groups_consumer_offsets_partition():
    c = Coordinator()
    pid, epoch = started(c)
    assert c.take(c.core.add_offsets(AddOffsetsRequest("tx", pid, epoch, "my-group"), c.now_ms)).error == \
        ErrorCode.NONE
    assert c.core.get("tx").partitions == {TopicPartition("__consumer_offsets", partition_for("my-group", 50))}


def test_after_a_failover_the_new_coordinator_resends_the_markers_of_ending_transactions():
    c = Coordinator(coordinator_epoch=5)
    pid, epoch = started(c, T0, U0)
    c.end(pid, epoch, commit=True)
    c.ack(c.markers.pop(), partitions=[T0])  # U0 never answered before the coordinator died
    core, result = c.reload(coordinator_epoch=6)
    (markers,) = result.markers
    assert (markers.partitions, markers.coordinator_epoch, markers.commit) == ({T0, U0}, 6, True)
    for partition in (T0, U0):
        core.marker_written("tx", pid, epoch + 1, partition, ErrorCode.NONE, c.now_ms)
    assert core.get("tx").state is TxnState.COMPLETE_COMMIT


def test_a_marker_answer_for_another_transaction_changes_nothing():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=False)
    c.take(c.core.marker_written("tx", pid, epoch, T0, ErrorCode.NONE, c.now_ms))  # the epoch before
    assert c.state() is TxnState.PREPARE_ABORT


def test_a_fenced_coordinator_stops_sending_markers():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    c.ack(c.markers.pop(), ErrorCode.TRANSACTION_COORDINATOR_FENCED)
    assert c.markers == [] and c.core.pending_markers() == ()
    assert c.state() is TxnState.PREPARE_COMMIT


def test_idle_transactional_ids_expire_into_tombstones():
    c = Coordinator()
    started(c)
    pid, epoch = started(c)  # bumps
    c.init("busy")
    c.add(*_ids(c, "busy"), T0, tid="busy")
    c.now_ms += c.config.transactional_id_expiration_ms
    expired = c.take(c.core.expire_transactional_ids(c.now_ms))
    assert expired == ("tx",), "an ongoing transaction keeps its id"
    assert c.log[-1] == (c.log[0][0], None)
    core, _ = c.reload(1)
    assert core.get("tx") is None and core.get("busy") is not None


def _ids(c: Coordinator, tid: str) -> tuple[int, int]:
    metadata = c.core.get(tid)
    return metadata.producer_id, metadata.producer_epoch


def test_describe_and_list_show_kafkas_state_names():
    c = Coordinator()
    pid, _ = started(c, T0)
    described = c.core.describe("tx")
    assert (described.state, described.producer_id, described.partitions) == ("Ongoing", pid, (T0,))
    assert [t.state for t in c.core.list_transactions(states=[TxnState.ONGOING])] == ["Ongoing"]
    assert c.core.list_transactions(producer_ids=[pid + 1]) == ()


@pytest.mark.parametrize(("transactional_id", "partition"), [
    ("", 0), ("a", 97 % 50), ("hello", 99162322 % 50),
    ("polygenelubricants", 0),  # hashes to Integer.MIN_VALUE, which Kafka's Utils.abs turns into 0
])
def test_a_transactional_id_lives_where_kafka_puts_it(transactional_id, partition):
    assert partition_for_transactional_id(transactional_id) == partition


def test_every_record_the_coordinator_writes_decodes_to_what_it_holds():
    c = Coordinator()
    pid, epoch = started(c, T0, U0)
    c.end(pid, epoch, commit=True)
    c.ack_all()
    for key, value in c.log:
        record = decode(key, value)
        assert record.encode() == (key, value)


def test_the_brokers_producer_id_blocks_serve_the_coordinator():
    ids = ProducerIds()
    core = TransactionCoordinator(TxnConfig(), ids, 1)
    core.loaded(0)
    request = InitProducerIdRequest("tx", TIMEOUT_MS)
    assert core.init_producer_id(request, 0).response.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    block = next_block(None, broker_id=1)
    ids.refill(block)
    answer = core.init_producer_id(request, 0).response
    assert (answer.error, answer.producer_id, answer.producer_epoch) == (ErrorCode.NONE, block.first, 0)
