"""A segment's .txnindex: Kafka's 34-byte entries, appended in marker order, collected for a fetch,
truncated with the log, a torn last entry cut off on load and an unsound index refused."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.invariant import InvariantViolation
from replog.core.txn.aborted import AbortedTxn
from replog.storage.txn_index import ENTRY, CorruptTxnIndexError, TransactionIndex


def index_at(tmp_path, base_offset: int = 100) -> TransactionIndex:
    return TransactionIndex(tmp_path / f"{base_offset:020d}.txnindex", base_offset)


def test_an_entry_is_kafkas_34_bytes():
    assert ENTRY.size == 34


def test_appended_entries_load_back_in_order(tmp_path):
    index = index_at(tmp_path)
    entries = [AbortedTxn(7, 90, 105, 95), AbortedTxn(8, 101, 110, 111)]
    for entry in entries:
        index.append(entry)
    index.flush()
    data = index.path.read_bytes()
    assert data[:ENTRY.size] == struct.pack(">hqqqq", 0, 7, 90, 105, 95)
    assert TransactionIndex.load(index.path, 100).entries() == tuple(entries)


def test_a_fetch_collects_the_aborted_transactions_overlapping_it_and_stops_at_the_lso(tmp_path):
    index = index_at(tmp_path, 0)
    for entry in (AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 12, 4), AbortedTxn(3, 15, 20, 21),
                  AbortedTxn(4, 22, 30, 31)):
        index.append(entry)
    found, complete = index.collect(fetch_offset=6, upper_bound_offset=21)
    assert [e.producer_id for e in found] == [2, 3] and complete, "entry 3's LSO reached the bound"
    found, complete = index.collect(fetch_offset=0, upper_bound_offset=100)
    assert len(found) == 4 and not complete, "a later segment may hold more"


def test_a_truncation_drops_the_transactions_aborted_past_it(tmp_path):
    index = index_at(tmp_path, 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.append(AbortedTxn(2, 6, 9, 10))
    index.truncate_to(9)
    assert TransactionIndex.load(index.path, 0).entries() == (AbortedTxn(1, 0, 5, 6),)


def test_a_torn_last_entry_is_cut_off_on_load(tmp_path):
    index = index_at(tmp_path, 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    with open(index.path, "ab") as handle:
        handle.write(ENTRY.pack(0, 2, 6, 9, 10)[:20])
    loaded = TransactionIndex.load(index.path, 0)
    assert loaded.entries() == (AbortedTxn(1, 0, 5, 6),)
    assert index.path.stat().st_size == ENTRY.size
    loaded.append(AbortedTxn(2, 6, 9, 10))
    assert len(TransactionIndex.load(index.path, 0).entries()) == 2


@pytest.mark.parametrize(("raw", "says"), [
    (ENTRY.pack(1, 1, 100, 105, 106), "version 1"),
    (ENTRY.pack(0, 1, 10, 50, 51), "below the segment's base offset 100"),
    (ENTRY.pack(0, 1, 110, 105, 106), "after its end"),
    (ENTRY.pack(0, 1, 100, 105, 106) + ENTRY.pack(0, 2, 100, 105, 106), "not after the entry before"),
])
def test_an_unsound_index_is_refused_in_one_sentence(tmp_path, raw, says):
    path = tmp_path / "x.txnindex"
    path.write_bytes(raw)
    with pytest.raises(CorruptTxnIndexError, match=says):
        TransactionIndex.load(path, 100)


def test_a_missing_index_is_empty_and_entries_must_follow_each_other(tmp_path):
    index = TransactionIndex.load(tmp_path / "none.txnindex", 0)
    assert index.entries() == ()
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(InvariantViolation):
        index.append(AbortedTxn(2, 0, 5, 6))


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 50), st.integers(1, 50), st.integers(0, 60)),
                max_size=20), st.integers(0, 2000))
def test_any_index_reads_back_and_truncates_as_the_list_it_holds(tmp_path_factory, rows, truncate_at):
    path = tmp_path_factory.mktemp("txn") / "i.txnindex"
    index = TransactionIndex(path, 0)
    last = -1
    entries = []
    for producer_id, length, gap, lso_gap in rows:
        last_offset = last + gap
        entry = AbortedTxn(producer_id, max(0, last_offset - length), last_offset, last_offset + 1 - lso_gap % 2)
        index.append(entry)
        entries.append(entry)
        last = last_offset
    index.truncate_to(truncate_at)
    assert TransactionIndex.load(path, 0).entries() == tuple(e for e in entries if e.last_offset < truncate_at)
