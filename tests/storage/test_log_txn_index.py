"""The .txnindex in the segments' life: written where the marker lies, rolled, collected across segments,
truncated with the log, kept over a restart, deleted with its segment."""

from replog.core.txn.aborted import AbortedTxn
from replog.storage.txn_index import TXN_INDEX_SUFFIX
from tests.storage.conftest import START_MS, batch


def fill(log, count: int) -> None:
    for tag in range(count):
        log.append_as_leader(batch(2, tag=tag), 0, START_MS)


def test_aborts_are_indexed_in_the_segment_of_their_marker_and_collected_across_segments(open_log, partition_dir):
    log = open_log()
    fill(log, 4)
    first = AbortedTxn(7, 0, log.log_end_offset - 1, log.log_end_offset)
    log.index_aborted([first])
    fill(log, 20)  # rolls (1 KiB segments)
    assert len(log.segments) > 2
    second = AbortedTxn(8, 2, log.log_end_offset - 1, log.log_end_offset)
    log.index_aborted([second, second])  # an entry the index has is not written twice
    assert log.aborted_transactions(0, log.log_end_offset) == [first, second]
    assert log.aborted_transactions(first.last_offset + 1, log.log_end_offset) == [second]
    assert len(list(partition_dir.glob(f"*{TXN_INDEX_SUFFIX}"))) == 2

    log.close()
    reopened = open_log()
    assert reopened.aborted_transactions(0, reopened.log_end_offset) == [first, second]
    reopened.truncate_to(second.last_offset)
    assert reopened.aborted_transactions(0, reopened.log_end_offset) == [first]


def test_an_index_goes_with_its_segment(open_log, partition_dir):
    log = open_log()
    fill(log, 4)
    log.index_aborted([AbortedTxn(7, 0, 3, 4)])
    fill(log, 20)
    log.delete_records_before(log.segments[2].base_offset)
    assert not list(partition_dir.glob(f"*{TXN_INDEX_SUFFIX}"))
    assert log.aborted_transactions(log.log_start_offset, log.log_end_offset) == []


def test_a_fetch_below_the_lso_names_an_abort_whose_marker_lies_segments_past_it(open_log):
    # Producer 7 began at offset 2, producer 8 at 4 and stays open (the LSO); 7's abort is written much later,
    # segments past the LSO. A read_committed fetch of [0, LSO) returns 7's batch: it must be told it aborted.
    log = open_log()
    fill(log, 2)
    fill(log, 30)  # rolls (1 KiB segments)
    aborted = AbortedTxn(7, 2, log.log_end_offset - 1, 4)
    log.index_aborted([aborted])
    assert log.segments[-1].base_offset > 4

    assert log.aborted_transactions(0, 4) == [aborted]
