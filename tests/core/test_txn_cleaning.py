"""The cleaner's rule for transactions: aborted batches go, markers wait for their batches, then for their
delete horizon."""

from replog.core.txn.aborted import AbortedTxn
from replog.core.txn.cleaning import CleanedTransactions, MarkerFate, MarkerVerdict, marker_fate

ABORTED = AbortedTxn(producer_id=5, first_offset=10, last_offset=20, last_stable_offset=21)


def test_an_aborted_transactions_batches_go_and_its_marker_keeps_its_index_entry():
    walk = CleanedTransactions([ABORTED])
    assert walk.data_batch(5, True, 9) is False  # before the aborted transaction began: an earlier one
    assert walk.data_batch(5, True, 10) is True
    assert walk.data_batch(6, True, 11) is False  # another producer's
    assert walk.data_batch(5, False, 12) is False  # not transactional
    assert walk.marker(5, abort=True, offset=20) == MarkerVerdict(False, ABORTED)


def test_a_marker_with_no_batch_left_of_its_transaction_may_go():
    walk = CleanedTransactions([ABORTED])
    assert walk.marker(5, abort=True, offset=20) == MarkerVerdict(True, None)
    assert walk.marker(6, abort=False, offset=21) == MarkerVerdict(True, None)


def test_a_commit_marker_stays_while_its_transaction_has_a_batch():
    walk = CleanedTransactions([])
    walk.data_batch(7, True, 3)
    assert walk.marker(7, abort=False, offset=4) == MarkerVerdict(False, None)
    assert walk.marker(7, abort=False, offset=9) == MarkerVerdict(True, None)  # the next one: nothing met since


def test_the_fate_of_a_marker():
    kept, removable = MarkerVerdict(False, None), MarkerVerdict(True, None)
    assert marker_fate(kept, None, now_ms=100) is MarkerFate.KEEP
    assert marker_fate(kept, 50, now_ms=100) is MarkerFate.KEEP
    assert marker_fate(removable, None, now_ms=100) is MarkerFate.STAMP
    assert marker_fate(removable, 101, now_ms=100) is MarkerFate.KEEP
    assert marker_fate(removable, 100, now_ms=100) is MarkerFate.DROP
