"""Transactions on a partition: a producer's transaction opens at its first transactional batch and a
marker closes it; the last stable offset stays below every open transaction and every marker the high
watermark has not passed; aborts are indexed; writes and markers of ended transactions are refused."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.log import MemoryBatch
from replog.core.messages import ACKS_ALL, ProduceRequest
from replog.core.producer_state import ProducerAppend, ProducerEntry, ProducerStates, last_sequence, rebuild
from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.markers import TxnMarker

from .harness import Node, catch_up, partition_state

A, B = 7, 8


class Partition:
    """A leader's log of producer batches and markers, with its producer states and high watermark."""

    def __init__(self, verify: bool = True) -> None:
        self.states = ProducerStates(verify_transactions=verify)
        self.log_end_offset = 0
        self.high_watermark = 0
        self.items: list = []
        self.completed = []

    def write(self, pid: int, epoch: int, count: int = 2, transactional: bool = True, verify: bool = True,
              sequence: int | None = None) -> ErrorCode:
        entry = self.states.get(pid)
        if sequence is None:
            sequence = entry.last_sequence + 1 if entry is not None and entry.epoch == epoch and entry.batches else 0
        first = sequence
        append = ProducerAppend(pid, epoch, first, last_sequence(first, count), transactional)
        if verify and self.states.needs_verification(append):
            self.states.verified(pid, epoch, 0)
        check = self.states.check(append)
        if check.error != ErrorCode.NONE or check.duplicate_of is not None:
            return check.error
        self.states.update(append, self.log_end_offset, self.log_end_offset + count - 1, 0)
        self.items.append((append, self.log_end_offset, self.log_end_offset + count - 1))
        self.log_end_offset += count
        return ErrorCode.NONE

    def mark(self, pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> ErrorCode:
        marker = TxnMarker(pid, epoch, coordinator_epoch, commit)
        check = self.states.check_marker(marker)
        if check.error != ErrorCode.NONE or check.duplicate_of is not None:
            self.retried_at = None if check.duplicate_of is None else check.duplicate_of.first_offset
            return check.error
        done = self.states.complete(marker, self.log_end_offset, 0)
        if done is not None:
            self.completed.append(done)
        self.items.append((marker, self.log_end_offset, self.log_end_offset))
        self.log_end_offset += 1
        return ErrorCode.NONE

    def replicate(self) -> None:
        self.high_watermark = self.log_end_offset
        self.states.forget_stable(self.high_watermark)

    @property
    def lso(self) -> int:
        return self.states.last_stable_offset(self.high_watermark)


def test_the_last_stable_offset_stays_at_an_open_transaction_until_its_marker_is_replicated():
    p = Partition()
    p.write(B, 0, transactional=False)  # offsets 0-1, not in a transaction
    p.write(A, 0)  # 2-3 opens A's transaction
    p.replicate()
    assert p.lso == 2
    p.write(B, 0, transactional=False)  # 4-5
    assert p.mark(A, 1, commit=True) == ErrorCode.NONE  # 6
    assert p.lso == 2, "the marker is not below the high watermark yet"
    p.replicate()
    assert p.lso == p.high_watermark == 7
    (done,) = p.completed
    assert (done.first_offset, done.last_offset, done.aborted, done.aborted_txn()) == (2, 6, False, None)


def test_an_abort_is_indexed_with_the_lso_of_the_transactions_still_open():
    p = Partition()
    p.write(A, 0)  # 0-1
    p.write(B, 0)  # 2-3
    p.mark(A, 1, commit=False)  # 4
    p.mark(B, 1, commit=False)  # 5
    first, second = (done.aborted_txn() for done in p.completed)
    assert first == AbortedTxn(A, 0, 4, 2), "B's transaction, open from 2, holds the LSO when A's ends"
    assert second == AbortedTxn(B, 2, 5, 6)


def test_a_write_of_an_ended_transaction_arriving_late_is_refused():
    p = Partition()
    p.write(A, 0)
    p.mark(A, 1, commit=False)
    assert p.write(A, 0, sequence=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert p.write(A, 1) == ErrorCode.NONE, "the next transaction writes at the bumped epoch"


def test_a_marker_of_an_ended_transaction_arriving_late_cannot_end_the_next_one():
    """Jepsen 2024: a delayed ABORT must not abort a later transaction."""
    p = Partition()
    p.write(A, 0)
    assert p.mark(A, 1, commit=True) == ErrorCode.NONE
    p.write(A, 1)
    assert p.mark(A, 1, commit=False) == ErrorCode.INVALID_PRODUCER_EPOCH, "the delayed one, or a retry"
    assert p.states.get(A).in_transaction and len(p.completed) == 1


def test_a_retried_marker_not_yet_replicated_is_answered_as_a_retry_not_as_there_already():
    """Answering INVALID_PRODUCER_EPOCH ("written") before the first copy is committed would let the
    coordinator complete a transaction whose marker a leader change then loses (the simulator found it)."""
    p = Partition()
    p.write(A, 0)
    assert p.mark(A, 1, commit=True) == ErrorCode.NONE
    marker_offset = p.log_end_offset - 1
    assert p.mark(A, 1, commit=True) == ErrorCode.NONE and p.retried_at == marker_offset
    assert p.log_end_offset == marker_offset + 1, "not appended twice"
    assert p.mark(A, 1, commit=True, coordinator_epoch=1) == ErrorCode.NONE and p.retried_at == marker_offset, \
        "the next coordinator resending the decision after a failover"
    assert p.mark(A, 1, commit=False) == ErrorCode.INVALID_PRODUCER_EPOCH, "not the same decision: refused"
    p.replicate()
    assert p.mark(A, 1, commit=True) == ErrorCode.INVALID_PRODUCER_EPOCH, "committed: there already"


def test_a_marker_from_a_stale_coordinator_is_refused():
    p = Partition()
    p.write(A, 0)
    p.mark(A, 1, commit=True, coordinator_epoch=4)
    p.write(A, 1)
    assert p.mark(A, 2, commit=True, coordinator_epoch=3) == ErrorCode.TRANSACTION_COORDINATOR_FENCED


def test_a_transactional_batch_needs_the_coordinators_word_before_it_opens_a_transaction():
    p = Partition()
    unverified = ProducerAppend(A, 0, 0, 1, transactional=True)
    assert p.states.needs_verification(unverified)
    assert p.states.check(unverified).error == ErrorCode.INVALID_TXN_STATE
    p.states.verified(A, 0, 0)
    assert p.states.check(unverified).error == ErrorCode.NONE
    p.states.complete(TxnMarker(A, 1, 0, commit=False), 0, 0)  # the transaction ended before the batch came
    assert p.states.check(ProducerAppend(A, 1, 0, 1, transactional=True)).error == ErrorCode.INVALID_TXN_STATE
    assert not Partition(verify=False).states.needs_verification(unverified)


def test_a_producer_on_transaction_version_2_has_its_partition_added_even_with_verification_off():
    """Nobody but the leader adds its partition to the transaction, so the leader asks whatever
    transaction.partition.verification.enable says; a batch not yet added is refused."""
    p = Partition(verify=False)
    unadded = ProducerAppend(A, 0, 0, 1, transactional=True, leader_add=True)
    assert p.states.needs_verification(unadded)
    assert p.states.check(unadded).error == ErrorCode.INVALID_TXN_STATE
    p.states.verified(A, 0, 0)
    assert not p.states.needs_verification(unadded)
    assert p.states.check(unadded).error == ErrorCode.NONE


def test_once_a_transaction_is_open_its_batches_need_no_more_verification():
    p = Partition()
    p.write(A, 0)
    assert not p.states.needs_verification(ProducerAppend(A, 0, 2, 3, transactional=True))
    assert p.write(A, 0, verify=False) == ErrorCode.NONE


def test_a_producer_cannot_write_outside_its_open_transaction():
    p = Partition()
    p.write(A, 0)
    assert p.write(A, 0, transactional=False) == ErrorCode.INVALID_TXN_STATE


def test_truncating_a_marker_opens_its_transaction_again():
    p = Partition()
    p.write(A, 0)  # 0-1
    p.replicate()
    p.mark(A, 1, commit=True)  # 2
    p.write(A, 1)  # 3-4, the next transaction
    p.states.truncate(2)
    entry = p.states.get(A)
    assert (entry.epoch, entry.current_txn_first_offset) == (0, 0)
    assert p.states.last_stable_offset(5) == 0
    assert p.states.check_marker(TxnMarker(A, 1, 0, commit=True)).error == ErrorCode.NONE, "the marker again"


def test_truncating_the_first_batch_of_a_transaction_closes_it():
    p = Partition()
    p.write(B, 0, transactional=False)  # 0-1
    p.write(A, 0)  # 2-3
    p.states.truncate(2)
    assert not p.states.get(A).in_transaction and p.states.last_stable_offset(2) == 2


def test_a_producer_with_an_open_transaction_is_not_expired():
    p = Partition()
    p.write(A, 0)
    p.write(B, 0, transactional=False)
    assert p.states.expire(10**9, 1_000) == [B]


def test_a_rebuild_from_the_log_finds_the_open_transactions_and_the_completed_ones():
    p = Partition()
    p.write(A, 0)
    p.write(B, 0)
    p.mark(A, 1, commit=False)
    rebuilt = ProducerStates(rebuild((), p.items, 0))
    assert rebuilt.open_transactions() == ((B, 2),)
    replayed = ProducerStates()
    assert [c.aborted_txn() for c in replayed.replay(p.items, 0)] == [AbortedTxn(A, 0, 4, 2)]


def test_a_rebuild_from_a_snapshot_keeps_the_open_transaction():
    snapshot = (ProducerEntry(A, 3, (), 0, coordinator_epoch=2, current_txn_first_offset=40),)
    (entry,) = rebuild(snapshot, [(TxnMarker(A, 4, 2, commit=True), 50, 50)], 0)
    assert (entry.epoch, entry.in_transaction, entry.coordinator_epoch) == (4, False, 2)


def test_a_truncation_below_every_cached_batch_of_a_transaction_keeps_it_open_once_restored_from_the_log():
    p = Partition()
    p.write(B, 0, count=1)  # 0: opens B's transaction
    p.mark(B, 1, commit=True)  # 1: commits it
    p.replicate()
    p.write(B, 1, count=1, transactional=False)  # 2
    for _ in range(8):
        p.write(A, 0, count=1)  # 3..10: A's transaction, eight batches
    p.mark(B, 2, commit=False)  # 11: a marker for nothing open here, not replicated yet
    truncate_and_restore(p, 6)
    entry = p.states.get(A)
    assert [b.first_offset for b in entry.batches] == [3, 4, 5] and entry.current_txn_first_offset == 3
    assert p.states.open_transactions() == ((A, 3),) and p.lso == 2
    assert p.write(A, 0, count=1) == ErrorCode.NONE, "sequence 3 follows the batches the log still holds"


def truncate_and_restore(p: Partition, offset: int) -> None:
    """A follower's truncation, as the driver carries it out: the core cuts its cache, then takes the
    producers rebuilt from what the log holds below `offset`."""
    p.states.truncate(offset)
    p.items = [item for item in p.items if item[1] < offset]
    p.log_end_offset = offset
    p.states.restore(rebuild((), p.items, 0))


def test_a_restore_keeps_the_last_timestamp_of_a_producer_known_here():
    states = ProducerStates()
    states.update(ProducerAppend(A, 0, 0, 0), 0, 0, 500)
    states.restore(rebuild((), [(ProducerAppend(A, 0, 0, 0), 0, 0), (ProducerAppend(B, 0, 0, 0), 1, 1)], 900))
    assert [(e.producer_id, e.last_timestamp_ms) for e in states.entries()] == [(A, 500), (B, 900)]


# -- properties ----------------------------------------------------------------------------------------

ACTIONS = st.lists(st.tuples(st.sampled_from(["write", "plain", "commit", "abort", "replicate", "truncate"]),
                             st.sampled_from([A, B, 9]), st.integers(1, 3)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ACTIONS)
def test_the_lso_never_passes_an_open_transactions_first_offset_nor_the_high_watermark(actions):
    p = Partition()
    epochs = {A: 0, B: 0, 9: 0}
    for action, pid, count in actions:
        if action in ("write", "plain"):
            p.write(pid, epochs[pid], count, transactional=action == "write")
        elif action in ("commit", "abort"):
            if p.mark(pid, epochs[pid] + 1, commit=action == "commit") == ErrorCode.NONE:
                epochs[pid] += 1
        elif action == "replicate":
            p.replicate()
        else:
            truncate_and_restore(p, max(p.high_watermark, p.log_end_offset - 4 * count))
            epochs = {pid: (p.states.get(pid).epoch if p.states.get(pid) else 0) for pid in epochs}
        lso = p.lso
        assert lso <= p.high_watermark
        for _, first_offset in p.states.open_transactions():
            assert lso <= first_offset
        # The same state follows from the log alone: every producer, its open transaction, and the LSO.
        from_log = ProducerStates()
        from_log.replay(p.items, 0)
        from_log.forget_stable(p.high_watermark)
        assert from_log.entries() == p.states.entries()
        assert from_log.last_stable_offset(p.high_watermark) == lso


def test_a_leader_answers_a_retried_marker_only_once_the_first_copy_is_committed():
    leader, follower = Node(1), Node(2)
    state = partition_state(leader=1, isr=(1, 2), replicas=(1, 2))
    for node in (leader, follower):
        node.replica.handle_leader_and_isr(state, 0)
    leader.apply()
    marker = TxnMarker(A, 1, 0, commit=True)
    request = ProduceRequest("marker", (MemoryBatch((b"commit",), producer_id=A, producer_epoch=1, marker=marker),),
                             1, ACKS_ALL, 1_000, marker=marker)
    leader.replica.handle_produce(request, 0)
    leader.apply()
    leader.replica.handle_produce(replace(request, request_id="marker-again"), 1)
    retry = leader.apply()
    assert retry.log_ops == () and retry.completions == (), "not committed yet: the retry waits"
    catch_up(follower, leader, 2)
    assert sorted((c.request_id, c.error, c.base_offset) for c in leader.completions) == [
        ("marker", ErrorCode.NONE, 0), ("marker-again", ErrorCode.NONE, 0)]
    assert leader.log.log_end_offset == 1
