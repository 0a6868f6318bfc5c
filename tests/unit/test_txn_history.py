"""The history checker finds each anomaly it names, and nothing in a clean history."""

from tests.integration.txn_history import ABORTED, ANOMALIES, COMMITTED, UNKNOWN, Read, Session, Txn, Write, check

B0, B1 = ("b", 0), ("b", 1)


def committed(name, *writes, reads=()):
    return Txn(name, COMMITTED, [Write(p, v, o) for p, v, o in writes], [Read(p, o, v) for p, o, v in reads])


def session(name, *reads, read_committed=True):
    return Session(name, [Read(p, o, v) for p, o, v in reads], read_committed)


def only(found, name):
    assert {anomaly for anomaly, cases in found.items() if cases} == {name}, found
    return found[name]


def test_a_clean_history_has_every_anomaly_named_and_empty():
    txns = [committed("t1", (B0, b"a", 0), (B1, b"b", 0)),
            Txn("t2", ABORTED, [Write(B0, b"x", 1)]),
            committed("t3", (B0, b"c", 3))]  # offset 2 is t2's abort marker
    found = check(txns, [session("r", (B0, 0, b"a"), (B1, 0, b"b"), (B0, 3, b"c"))])
    assert set(found) == set(ANOMALIES)
    assert all(cases == [] for cases in found.values())


def test_a_committed_value_nobody_read_while_later_offsets_were_read_is_a_lost_write():
    txns = [committed("t1", (B0, b"a", 0)), committed("t2", (B0, b"b", 1))]
    cases = only(check(txns, [session("r", (B0, 1, b"b"))]), "lost-write")
    assert cases == ["b'a' of t1 in b-0"]


def test_a_value_of_a_transaction_that_died_undecided_is_no_lost_write():
    txns = [Txn("t1", UNKNOWN, [Write(B0, b"a", 0)]), committed("t2", (B0, b"b", 1))]
    assert all(cases == [] for cases in check(txns, [session("r", (B0, 1, b"b"))]).values())


def test_an_aborted_value_seen_under_read_committed_is_an_aborted_read_but_not_under_read_uncommitted():
    txns = [Txn("t1", ABORTED, [Write(B0, b"x", 0)])]
    assert only(check(txns, [session("r", (B0, 0, b"x"))]), "aborted-read") == ["r read b'x' of aborted t1"]
    assert all(cases == [] for cases in check(txns, [session("r", (B0, 0, b"x"), read_committed=False)]).values())


def test_one_value_at_two_offsets_is_a_duplicate():
    txns = [committed("t1", (B0, b"a", 0))]
    cases = only(check(txns, [session("r", (B0, 0, b"a"), (B0, 1, b"a"))]), "duplicate")
    assert cases == ["b'a' at b-0@0, b-0@1"]


def test_two_values_at_one_offset_are_inconsistent():
    txns = [committed("t1", (B0, b"a", 0))]
    found = check(txns, [session("r", (B0, 0, b"z"))])
    assert found["inconsistent-offsets"] == ["b-0@0: b'a' and b'z'"]


def test_a_session_jumping_over_a_committed_value_skips_it():
    txns = [committed("t1", (B0, b"a", 0)), committed("t2", (B0, b"b", 1)), committed("t3", (B0, b"c", 2))]
    found = check(txns, [session("r1", (B0, 0, b"a"), (B0, 2, b"c")), session("r2", (B0, 1, b"b"))])
    assert only(found, "poll-skip") == ["r1: b-0 0 then 2, skipping [1]"]


def test_a_session_going_back_is_nonmonotonic_but_a_new_session_may_start_anywhere():
    txns = [committed("t1", (B0, b"a", 0)), committed("t2", (B0, b"b", 1))]
    found = check(txns, [session("r1", (B0, 0, b"a"), (B0, 1, b"b"), (B0, 0, b"a"))])
    assert only(found, "nonmonotonic-poll") == ["r1: b-0 1 then 0"]
    clean = check(txns, [session("r1", (B0, 0, b"a"), (B0, 1, b"b")), session("r2", (B0, 0, b"a"))])
    assert all(cases == [] for cases in clean.values())


def test_transactions_that_each_read_what_the_other_wrote_form_a_g1c_cycle():
    t1 = committed("t1", (B0, b"a", 0), reads=[(B1, 0, b"b")])
    t2 = committed("t2", (B1, b"b", 0), reads=[(B0, 0, b"a")])
    assert only(check([t1, t2], []), "G1c") == ["t1 -> t2"]


def test_log_order_one_way_and_a_read_the_other_way_form_a_cycle_too():
    t1 = committed("t1", (B0, b"a", 0), reads=[(B1, 0, b"b")])
    t2 = committed("t2", (B0, b"b0", 1), (B1, b"b", 0))
    # t1 precedes t2 in b-0 (write-write) and read t2's value in b-1 (write-read t2 -> t1)
    assert only(check([t1, t2], []), "G1c") == ["t1 -> t2"]
