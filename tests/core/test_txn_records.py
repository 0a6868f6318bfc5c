"""__transaction_state records read back exactly as written, and anything else is a clear RecordError;
the state table is Kafka's."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.invariant import InvariantViolation
from replog.core.topic_partition import TopicPartition
from replog.core.txn.metadata import PRODUCER_EPOCH_MAX, TransactionMetadata
from replog.core.txn.records import RecordError, TxnRecord, decode, encode_key, encode_value
from replog.core.txn.state import NEXT_STATES, TRANSITIONS, TxnEvent, TxnState, next_state

S = TxnState
# Kafka's TransactionState: each state and the states it may be entered from (validPreviousStates).
KAFKA_PREVIOUS_STATES = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
KAFKA_MOVES = {(before, after) for after, befores in KAFKA_PREVIOUS_STATES.items() for before in befores}


def test_the_table_allows_exactly_kafkas_moves():
    assert {(before, after) for before, afters in NEXT_STATES.items() for after in afters} == KAFKA_MOVES


@given(st.sampled_from(TxnState), st.sampled_from(TxnEvent))
def test_a_move_the_table_does_not_list_is_refused(state, event):
    if (state, event) in TRANSITIONS:
        assert (state, next_state(state, event)) in KAFKA_MOVES
    else:
        with pytest.raises(InvariantViolation):
            next_state(state, event)


def test_state_names_are_kafkas():
    assert [s.kafka_name for s in TxnState] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"]


partitions = st.frozensets(st.builds(TopicPartition, st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)),
                           max_size=6)


@st.composite
def metadata(draw) -> TransactionMetadata:
    state = draw(st.sampled_from([S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT,
                                  S.COMPLETE_ABORT]))
    in_txn = state.in_transaction
    prepared = state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
    return TransactionMetadata(
        draw(st.text(max_size=20)), draw(st.integers(0, 2**63 - 1)), draw(st.integers(0, PRODUCER_EPOCH_MAX)),
        draw(st.integers(1, 900_000)), state, draw(st.integers(-1, 2**62)),
        draw(partitions) if in_txn else frozenset(), draw(st.integers(-1, 2**62)), draw(st.integers(-1, 32766)),
        draw(st.integers(-1, 2**62)), draw(st.integers(0, 2**62)) if prepared and draw(st.booleans()) else -1)


@given(metadata())
def test_a_record_reads_back_as_written(value):
    key, data = TxnRecord(value.transactional_id, value).encode()
    assert decode(key, data) == TxnRecord(value.transactional_id, value)


def test_a_tombstone_reads_back_as_a_tombstone():
    assert decode(encode_key("gone"), None) == TxnRecord("gone", None)


@given(metadata(), st.data())
def test_a_record_cut_short_or_with_bytes_over_is_a_record_error(value, data):
    key, body = encode_key(value.transactional_id), encode_value(value)
    cut = data.draw(st.integers(0, len(body) - 1))
    with pytest.raises(RecordError):
        decode(key, body[:cut])
    with pytest.raises(RecordError):
        decode(key, body + b"\x00")
    with pytest.raises(RecordError):
        decode(key[:-1] if len(key) > 2 else key[:1], body)


ONGOING = TransactionMetadata("tx", 7, 3, 60_000, S.ONGOING, 5, frozenset({TopicPartition("t", 0)}), 5)


@pytest.mark.parametrize(("change", "says"), [
    (lambda body: struct.pack(">h", 1) + body[2:], "value version 1"),
    (lambda body: body[:34] + struct.pack(">b", 6) + body[35:], "state 6, which is never written"),
    (lambda body: body[:34] + struct.pack(">b", 7) + body[35:], "state 7"),
    (lambda body: body[:34] + struct.pack(">b", 42) + body[35:], "state 42"),
    (lambda body: body[:2] + struct.pack(">q", -5) + body[10:], "does not hold together"),
    (lambda body: body[:30] + struct.pack(">i", -1) + body[34:], "timeout"),
])
def test_a_value_that_is_not_one_this_coordinator_writes_is_refused_in_one_sentence(change, says):
    body = change(encode_value(ONGOING))
    with pytest.raises(RecordError, match=says):
        decode(encode_key("tx"), body)


def test_a_key_of_another_version_is_refused():
    with pytest.raises(RecordError, match="key version 3"):
        decode(struct.pack(">h", 3) + encode_key("tx")[2:], None)


@given(st.binary(max_size=80), st.none() | st.binary(max_size=120))
def test_arbitrary_bytes_are_a_record_error_or_a_record_never_a_crash(key, value):
    try:
        decode(key, value)
    except RecordError:
        pass
