"""The transactional producer's table and what each answer means to it, as Kafka's TransactionManager has them."""

import pytest

from replog.core.errors import ErrorCode
from replog.core.txn.producer import (
    TRANSITIONS,
    ProducerTxnEvent,
    ProducerTxnState,
    Reaction,
    Request,
    next_state,
    reaction,
    retried,
)

S = ProducerTxnState
E = ProducerTxnEvent


def run(*events, start=S.UNINITIALIZED):
    state = start
    for event in events:
        state = next_state(state, event)
        assert state is not None, f"{event} refused"
    return state


def test_a_producers_life_initialises_once_then_commits_and_aborts_in_turn():
    state = run(E.INIT, E.INITIALIZED)
    assert state is S.READY
    state = run(E.BEGIN, E.COMMIT, E.ENDED, start=state)
    assert state is S.READY
    assert run(E.BEGIN, E.ABORT, E.ENDED, start=state) is S.READY


def test_an_abortable_error_leaves_only_abort():
    state = run(E.INIT, E.INITIALIZED, E.BEGIN, E.ABORTABLE_ERROR)
    assert state is S.ABORTABLE_ERROR
    for refused in (E.BEGIN, E.COMMIT, E.INIT, E.ENDED):
        assert next_state(state, refused) is None
    assert run(E.ABORT, E.ENDED, start=state) is S.READY


def test_a_prepared_transaction_takes_nothing_more_and_is_ended_by_a_commit_or_an_abort():
    state = run(E.INIT, E.INITIALIZED, E.BEGIN, E.PREPARE)
    assert state is S.PREPARED
    for refused in (E.BEGIN, E.PREPARE, E.INIT, E.ENDED):
        assert next_state(state, refused) is None
    assert run(E.COMMIT, E.ENDED, start=state) is S.READY
    assert run(E.ABORT, E.ENDED, start=state) is S.READY
    assert next_state(S.READY, E.PREPARE) is None  # nothing open to prepare


def test_a_commit_whose_batches_failed_must_be_aborted():
    assert run(E.INIT, E.INITIALIZED, E.BEGIN, E.COMMIT, E.ABORTABLE_ERROR) is S.ABORTABLE_ERROR


def test_errors_of_batches_given_up_while_aborting_change_nothing():
    assert next_state(S.ABORTING, E.ABORTABLE_ERROR) is S.ABORTING


def test_a_fatal_error_is_reached_from_every_state_and_nothing_leaves_it_but_more_fatal_errors():
    for state in S:
        assert next_state(state, E.FATAL_ERROR) is S.FATAL_ERROR
    assert {event for (state, event) in TRANSITIONS if state is S.FATAL_ERROR} == {E.FATAL_ERROR}


def test_the_applications_mistakes_are_not_in_the_table():
    assert next_state(S.UNINITIALIZED, E.BEGIN) is None  # begin before init_transactions()
    assert next_state(S.READY, E.COMMIT) is None  # commit without a transaction
    assert next_state(S.IN_TRANSACTION, E.BEGIN) is None  # begin twice
    assert next_state(S.READY, E.INIT) is None  # init twice


def test_a_call_that_timed_out_may_be_made_again():
    for state, event in ((S.INITIALIZING, E.INIT), (S.COMMITTING, E.COMMIT), (S.ABORTING, E.ABORT)):
        assert next_state(state, event) is state


@pytest.mark.parametrize("request_kind", [r for r in Request if r is not Request.PRODUCE])
def test_coordinator_answers_kafka_retries_and_those_that_fence(request_kind):
    assert reaction(request_kind, ErrorCode.NONE) is Reaction.DONE
    assert reaction(request_kind, ErrorCode.NOT_COORDINATOR) is Reaction.FIND_COORDINATOR
    assert reaction(request_kind, ErrorCode.COORDINATOR_NOT_AVAILABLE) is Reaction.FIND_COORDINATOR
    assert reaction(request_kind, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) is Reaction.RETRY
    assert reaction(request_kind, ErrorCode.CONCURRENT_TRANSACTIONS) is Reaction.RETRY
    assert reaction(request_kind, ErrorCode.PRODUCER_FENCED) is Reaction.FENCED
    assert reaction(request_kind, ErrorCode.INVALID_PRODUCER_EPOCH) is Reaction.ABORTABLE, "timed out (KIP-588)"
    assert reaction(request_kind, ErrorCode.INVALID_TXN_STATE) is Reaction.FATAL
    assert {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR} <= retried(request_kind)


def test_a_partition_or_offsets_the_coordinator_will_not_take_make_the_transaction_abortable():
    assert reaction(Request.ADD_PARTITIONS, ErrorCode.TRANSACTION_ABORTABLE) is Reaction.ABORTABLE
    assert reaction(Request.ADD_PARTITIONS, ErrorCode.INVALID_PRODUCER_ID_MAPPING) is Reaction.ABORTABLE
    assert reaction(Request.ADD_PARTITIONS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) is Reaction.RETRY
    assert reaction(Request.ADD_OFFSETS, ErrorCode.INVALID_PRODUCER_ID_MAPPING) is Reaction.ABORTABLE
    for moved_on in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID,
                     ErrorCode.ILLEGAL_GENERATION):
        assert reaction(Request.TXN_OFFSET_COMMIT, moved_on) is Reaction.ABORTABLE


def test_an_end_the_coordinator_does_not_recognise_is_fatal_not_retried_forever():
    assert reaction(Request.END_TXN, ErrorCode.INVALID_PRODUCER_ID_MAPPING) is Reaction.FATAL
    assert reaction(Request.INIT_PRODUCER_ID, ErrorCode.INVALID_TRANSACTION_TIMEOUT) is Reaction.FATAL


def test_a_batch_that_failed_for_good_is_abortable_unless_it_was_fenced():
    assert reaction(Request.PRODUCE, ErrorCode.NOT_ENOUGH_REPLICAS) is Reaction.ABORTABLE
    assert reaction(Request.PRODUCE, ErrorCode.INVALID_TXN_STATE) is Reaction.ABORTABLE
    # An older epoch than the leader knows: the transaction ended under the producer (a timeout); the
    # abort that follows finds out whether a newer producer fenced it (KIP-588).
    assert reaction(Request.PRODUCE, ErrorCode.INVALID_PRODUCER_EPOCH) is Reaction.ABORTABLE
    assert reaction(Request.PRODUCE, ErrorCode.PRODUCER_FENCED) is Reaction.FENCED
    assert reaction(Request.END_TXN, ErrorCode.TRANSACTION_ABORTABLE) is Reaction.ABORTABLE
