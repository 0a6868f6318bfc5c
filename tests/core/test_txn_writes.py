"""The transaction coordinator's writes: they take time and may be refused, and still the log holds each
transactional id's decisions in the order they were made; and whatever the log holds, it loads.

While a change of a transactional id is being written, the id's requests are answered
CONCURRENT_TRANSACTIONS (Kafka's pending state); a refused write takes the id back to its last record
known written, and a transaction that was completing completes again.
"""

from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition
from replog.core.txn.coordinator import TransactionCoordinator
from replog.core.txn.metadata import TransactionMetadata
from replog.core.txn.records import TxnRecord, decode
from replog.core.txn.requests import AddHeld, AddOffsetsRequest, AddPartitionsRequest, TxnConfig
from replog.core.txn.state import NEXT_STATES, TxnState

from .txn_harness import T0, T1, TOPICS, Coordinator, Counter, answered, started

OFFSETS_33, EOS_OUT_0 = TopicPartition("__consumer_offsets", 33), TopicPartition("eos-out", 0)
S = TxnState


def logged_states(c: Coordinator, tid: str = "tx") -> list[TxnState]:
    return [record.metadata.state for record in map(lambda kv: decode(*kv), c.log)
            if record.transactional_id == tid and record.metadata is not None]


def assert_the_log_follows_the_table(c: Coordinator, tid: str = "tx") -> None:
    states = logged_states(c, tid)
    for before, after in zip(states, states[1:]):
        assert after in NEXT_STATES[before], f"the log moves {before.name} --> {after.name}: {states}"


def reloaded(c: Coordinator) -> TransactionCoordinator:
    core, _ = c.reload(coordinator_epoch=9)
    return core


# -- the copier's log: COMPLETE_COMMIT refused, the next transaction's requests arrive -----------------------


def test_a_refused_complete_commit_holds_the_next_transaction_until_it_is_written():
    c = Coordinator()
    pid, epoch = started(c, T0)
    assert c.end(pid, epoch, commit=True).error == ErrorCode.NONE
    c.hold = True
    c.ack_all()  # the marker is written: COMPLETE_COMMIT is decided, and its write is in flight
    assert len(c.writing) == 1 and c.state() is S.COMPLETE_COMMIT
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1})), "held: decided once COMPLETE_COMMIT is written"
    offsets = c.core.add_offsets(AddOffsetsRequest("tx", pid, epoch + 1, "copier"), c.now_ms)
    assert offsets.response.error == ErrorCode.CONCURRENT_TRANSACTIONS and not offsets.records
    assert c.core.describe("tx").state == "PrepareCommit", "described as the log has it"

    c.refuse()  # NOT_ENOUGH_REPLICAS: nothing reached the log
    assert c.state() is S.PREPARE_COMMIT, "back to the last record written"
    (again,) = c.markers[-1:]
    assert (again.producer_epoch, again.commit, again.partitions) == (epoch + 1, True, {T0}), "the markers go on"
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1})), "still completing: held with the first"
    assert not answered(c)

    c.ack(c.markers.pop(), ErrorCode.INVALID_PRODUCER_EPOCH)  # the partition has that marker already
    (write,) = c.writing
    assert [r.metadata.state for r in write.records] == [S.COMPLETE_COMMIT, S.ONGOING], \
        "COMPLETE_COMMIT once more, and the held add with it"
    c.persist()
    assert [a.response.results for a in answered(c)] == [{T1: ErrorCode.NONE}]
    assert logged_states(c) == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING]
    assert_the_log_follows_the_table(c)
    assert reloaded(c).get("tx") == c.core.get("tx"), "a coordinator loading the log holds what this one holds"


def test_a_held_add_decided_in_a_refused_write_is_held_again_while_the_transaction_completes_again():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1}))
    c.hold = True
    c.ack_all()  # COMPLETE_COMMIT and ONGOING in one write...
    assert not c.core.release_held("tx", frozenset({T1})), "decided: the write's answer answers it"
    c.refuse()  # ...refused: back to PREPARE_COMMIT, the markers again, the add held again
    assert c.state() is S.PREPARE_COMMIT and not c.writing
    c.ack_all()
    (write,) = c.writing
    assert [(r.metadata.state, r.metadata.partitions) for r in write.records] == [
        (S.COMPLETE_COMMIT, frozenset()), (S.ONGOING, {T1})]
    c.persist()
    assert c.state() is S.ONGOING
    assert logged_states(c)[-3:] == [S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING]
    assert_the_log_follows_the_table(c)


def test_a_held_add_whose_own_write_is_refused_is_let_go():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.end(pid, epoch, commit=True)
    c.hold = True
    c.ack_all()  # COMPLETE_COMMIT in flight
    assert c.add(pid, epoch + 1, T1) == AddHeld("tx", frozenset({T1}))
    c.persist()  # COMPLETE_COMMIT written: the add is decided, its ONGOING in flight
    assert len(c.writing) == 1 and not c.core.release_held("tx", frozenset({T1}))
    c.refuse()
    assert c.state() is S.COMPLETE_COMMIT and not c.writing
    assert c.core.release_held("tx", frozenset({T1})), "nothing holds it: its driver answers CONCURRENT_TRANSACTIONS"
    assert c.add(pid, epoch + 1, T1).error == ErrorCode.NONE, "the producer's retry"
    c.persist()
    assert logged_states(c)[-2:] == [S.COMPLETE_COMMIT, S.ONGOING]


def test_with_writes_answered_late_the_log_never_inverts_a_transactions_end_and_the_next_start():
    """The copier's loop (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) with every write slow."""
    c = Coordinator()
    pid, epoch = started(c, T0)

    def add_offsets():
        result = c.core.add_offsets(AddOffsetsRequest("tx", pid, epoch, "copier"), c.now_ms)
        return c.take(result).error
    c.hold = True
    for round_ in range(3):
        c.end(pid, epoch, commit=True)
        c.persist()  # PREPARE_COMMIT
        epoch += 1
        c.ack_all()  # COMPLETE_COMMIT in flight
        assert add_offsets() == ErrorCode.CONCURRENT_TRANSACTIONS
        assert c.add(pid, epoch, T0) == AddHeld("tx", frozenset({T0}))
        assert c.add(pid, epoch, T0) == AddHeld("tx", frozenset({T0})), "a retry is held with it"
        c.persist()  # COMPLETE_COMMIT is written: the held add is decided, its ONGOING in flight
        assert len(c.writing) == 1 and len(answered(c)) == round_ + 1
        assert add_offsets() == ErrorCode.CONCURRENT_TRANSACTIONS, "ONGOING is being written"
        c.persist()
        assert add_offsets() == ErrorCode.NONE
        c.persist()
    assert not c.writing
    assert_the_log_follows_the_table(c)
    assert logged_states(c)[-4:] == [S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING, S.ONGOING]


def test_a_refused_prepare_leaves_the_transaction_open_for_the_end_txn_retry():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.hold = True
    c.end(pid, epoch, commit=True)
    assert c.end(pid, epoch, commit=True).error == ErrorCode.CONCURRENT_TRANSACTIONS, "the first is being written"
    c.refuse()
    assert c.markers == [], "no marker for a decision the log does not hold"
    assert (c.state(), c.core.get("tx").producer_epoch) == (S.ONGOING, epoch)
    retried = c.end(pid, epoch, commit=True)
    assert (retried.error, retried.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    c.persist()
    assert [m.partitions for m in c.markers] == [{T0}]
    assert_the_log_follows_the_table(c)


def test_a_refused_new_transactional_id_is_unknown_again():
    c = Coordinator()
    c.hold = True
    first = c.init()
    assert c.init().error == ErrorCode.CONCURRENT_TRANSACTIONS
    c.refuse()
    assert c.core.get("tx") is None and c.core.describe("tx").error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    second = c.init()
    assert second.error == ErrorCode.NONE and second.producer_id != first.producer_id
    c.persist()
    assert c.core.describe("tx").state == "Empty"


def test_a_partition_leader_verifying_is_answered_from_what_the_log_holds():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.hold = True
    c.add(pid, epoch, T1)

    def verified(partition):
        answer = c.core.add_partitions(AddPartitionsRequest("tx", pid, epoch, frozenset({partition}),
                                                            verify_only=True), TOPICS, c.now_ms).response
        return answer.error, answer.results.get(partition)
    assert verified(T0) == (ErrorCode.NONE, ErrorCode.NONE), "T0 was added before"
    assert verified(T1) == (ErrorCode.NONE, ErrorCode.TRANSACTION_ABORTABLE), "T1 is not written yet"
    c.persist()
    assert verified(T1) == (ErrorCode.NONE, ErrorCode.NONE)


def test_the_timer_and_the_expiry_decide_nothing_for_an_id_whose_write_is_in_flight():
    c = Coordinator(config=TxnConfig(transactional_id_expiration_ms=1_000))
    pid, epoch = started(c, T0)
    c.hold = True
    c.end(pid, epoch, commit=False)
    c.persist()
    c.ack_all()  # COMPLETE_ABORT in flight
    c.now_ms += 10_000_000
    assert not c.core.tick(c.now_ms).records
    assert not c.core.expire_transactional_ids(c.now_ms).records
    c.persist()
    assert c.core.expire_transactional_ids(c.now_ms).response == ("tx",)


def test_a_refused_timeout_abort_is_decided_again_at_the_next_tick():
    c = Coordinator()
    pid, epoch = started(c, T0)
    c.hold = True
    c.now_ms += 10 * 60_000
    c.take(c.core.tick(c.now_ms))
    c.refuse()
    assert (c.state(), c.core.get("tx").producer_epoch) == (S.ONGOING, epoch)
    c.take(c.core.tick(c.now_ms))
    c.persist()
    assert c.state() is S.PREPARE_ABORT and [m.commit for m in c.markers] == [False]
    assert_the_log_follows_the_table(c)


# -- loading takes the log as it is ----------------------------------------------------------------------------


def _copier(state: TxnState, epoch: int, *partitions: TopicPartition) -> TxnRecord:
    return TxnRecord("copier-0", TransactionMetadata("copier-0", 1000, epoch, 60_000, state, 1, frozenset(partitions),
                                                     1, epoch - 1))


def test_a_log_with_an_ids_records_out_of_the_tables_order_still_loads_and_its_last_record_is_the_state():
    # The __transaction_state-33 segment a broker could not load (offsets 55 to 60).
    log = [_copier(S.PREPARE_COMMIT, 14, OFFSETS_33, EOS_OUT_0), _copier(S.ONGOING, 14, OFFSETS_33),
           _copier(S.ONGOING, 14, OFFSETS_33, EOS_OUT_0), _copier(S.COMPLETE_COMMIT, 14),
           _copier(S.PREPARE_COMMIT, 15, OFFSETS_33, EOS_OUT_0), _copier(S.COMPLETE_COMMIT, 15)]
    for end in range(1, len(log) + 1):
        core = TransactionCoordinator(TxnConfig(), Counter(), 3)
        for record in log[:end]:
            core.replay(decode(*record.encode()))
        loaded = core.loaded(0)
        assert core.get("copier-0") == log[end - 1].metadata, "the last record is the state"
        pending = log[end - 1].metadata.state is S.PREPARE_COMMIT
        assert [m.partitions for m in loaded.markers] == ([{OFFSETS_33, EOS_OUT_0}] if pending else [])
    answer = core.add_partitions(AddPartitionsRequest("copier-0", 1000, 15, frozenset({EOS_OUT_0})), {"eos-out": 1},
                                 0)
    assert answer.response.error == ErrorCode.NONE and answer.records, "and it serves"


def test_a_forgotten_id_that_comes_back_in_the_log_loads():
    core = TransactionCoordinator(TxnConfig(), Counter(), 3)
    log = [_copier(S.ONGOING, 2, EOS_OUT_0), TxnRecord("copier-0", None), _copier(S.PREPARE_ABORT, 3, EOS_OUT_0)]
    for record in log:
        core.replay(record)
    assert [m.commit for m in core.loaded(0).markers] == [False]
