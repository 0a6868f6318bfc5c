"""A read_committed consumer never sees an aborted record, a control record, or a record at or past the
last stable offset, and sees every other record below it."""

from collections import namedtuple

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.producer_state import ProducerAppend, ProducerStates
from replog.core.txn.aborted import collect_aborted
from replog.core.txn.markers import ControlType, TxnMarker
from replog.core.txn.read_committed import FetchedBatch, read_committed

Rec = namedtuple("Rec", "offset value")
PRODUCERS = (1, 2, 3)


@st.composite
def logs(draw):
    """A partition's log as a leader builds it: interleaved producers, each writing transactions (or plain
    batches) that end with a COMMIT or ABORT marker, or stay open; what each record's fate is."""
    states = ProducerStates(verify_transactions=False)
    batches, fate, aborted = [], {}, []
    epochs = dict.fromkeys(PRODUCERS, 0)
    open_records: dict[int, list[int]] = {pid: [] for pid in PRODUCERS}
    offset = 0
    for _ in range(draw(st.integers(0, 30))):
        pid = draw(st.sampled_from(PRODUCERS))
        action = draw(st.sampled_from(["txn", "txn", "plain", "commit", "abort"]))
        if action in ("commit", "abort"):
            marker = TxnMarker(pid, epochs[pid] + 1, 0, action == "commit")
            done = states.complete(marker, offset, 0)
            epochs[pid] += 1
            for record_offset in open_records[pid]:
                fate[record_offset] = action
            open_records[pid] = []
            if done is not None and done.aborted:
                aborted.append(done.aborted_txn())
            batches.append(FetchedBatch(offset, offset, pid, True, marker.control_type, ()))
            offset += 1
            continue
        count = draw(st.integers(1, 3))
        transactional = action == "txn"
        if action == "plain" and states.get(pid) is not None and states.get(pid).in_transaction:
            transactional = True  # a producer inside a transaction writes only transactionally
        states.update(ProducerAppend(pid, epochs[pid], 0, count - 1, transactional), offset, offset + count - 1, 0)
        records = tuple(Rec(o, (pid, o)) for o in range(offset, offset + count))
        for record in records:
            if transactional:
                open_records[pid].append(record.offset)
            else:
                fate[record.offset] = "plain"
        batches.append(FetchedBatch(offset, offset + count - 1, pid, transactional, None, records))
        offset += count
    for pid in PRODUCERS:
        for record_offset in open_records[pid]:
            fate[record_offset] = "open"
    high_watermark = draw(st.integers(0, offset))
    states.forget_stable(high_watermark)
    return batches, fate, aborted, states.last_stable_offset(high_watermark)


@settings(max_examples=400, deadline=None)
@given(logs(), st.data())
def test_read_committed_returns_exactly_the_decided_records_below_the_lso(log, data):
    batches, fate, aborted, lso = log
    fetch_offset = data.draw(st.integers(0, max(lso, 0)))
    fetched = [b for b in batches if b.last_offset >= fetch_offset]
    named, _ = collect_aborted(aborted, fetch_offset, lso)
    seen = read_committed(fetched, [(a.producer_id, a.first_offset) for a in named], lso)
    offsets = [record.offset for record in seen]
    assert offsets == sorted(offsets)
    for record in seen:
        assert record.offset < lso
        assert fate[record.offset] in ("plain", "commit"), f"{fate[record.offset]} record {record.offset} was read"
    expected = {o for o, f in fate.items() if f in ("plain", "commit") and o < lso}
    expected = {o for o in expected if any(b.base_offset <= o <= b.last_offset for b in fetched)}
    assert set(offsets) == expected, "every committed record below the LSO is read"


def test_an_aborted_transaction_is_dropped_up_to_its_marker_and_the_producers_next_one_is_read():
    batches = [
        FetchedBatch(0, 1, 5, True, None, (Rec(0, "a"), Rec(1, "b"))),
        FetchedBatch(2, 2, 6, False, None, (Rec(2, "plain"),)),
        FetchedBatch(3, 3, 5, True, ControlType.ABORT, ()),
        FetchedBatch(4, 4, 5, True, None, (Rec(4, "next"),)),
        FetchedBatch(5, 5, 5, True, ControlType.COMMIT, ()),
        FetchedBatch(6, 6, 6, False, None, (Rec(6, "past the LSO"),)),
    ]
    assert [r.value for r in read_committed(batches, [(5, 0)], last_stable_offset=6)] == ["plain", "next"]
