"""What a query's conditions on rows leave to read (replog/core/row_conditions.py)."""

from hypothesis import given
from hypothesis import strategies as st

from replog.core.row_conditions import Condition, Narrowing, narrowing
from replog.core.topic_partition import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
STARTS = {A0: 0, A1: 5, B0: 0}
ENDS = {A0: 100, A1: 100, B0: 50}


def cut(*conditions: Condition, time_starts=None):
    narrowed, left = narrowing(conditions)
    return narrowed.cut(STARTS, ENDS, time_starts), left


def test_no_condition_reads_everything():
    assert cut() == ((STARTS, ENDS), [])
    assert str(Narrowing()) == "everything"


def test_topics_and_partitions_pick_the_ranges_read_and_need_no_second_look():
    (starts, ends), left = cut(Condition("topic", "=", "a"), Condition("partition", "in", (1, 7)))
    assert (starts, ends, left) == ({A1: 5}, {A1: 100}, [])
    (starts, _), _ = cut(Condition("topic", "in", ("a", "b")), Condition("topic", "=", "b"))
    assert list(starts) == [B0]


def test_offset_bounds_cut_every_range_exactly():
    (starts, ends), left = cut(Condition("offset", ">", 9), Condition("offset", "<=", 20))
    assert (starts, ends, left) == ({A0: 10, A1: 10, B0: 10}, {A0: 21, A1: 21, B0: 21}, [])
    (starts, ends), left = cut(Condition("offset", "=", 3))
    assert (starts[A0], ends[A0], starts[A1], ends[A1], left) == (3, 4, 4, 4, [])  # a1 starts at 5: nothing


def test_a_list_of_offsets_reads_from_the_smallest_to_the_largest_and_is_checked_again():
    (starts, ends), left = cut(Condition("offset", "in", (30, 7, 12)))
    assert (starts[A0], ends[A0], left) == (7, 31, [0])


def test_a_time_bound_starts_each_range_at_its_offset_for_that_time_and_is_checked_again():
    narrowed, left = narrowing([Condition("timestamp", ">=", 1_000), Condition("timestamp", ">", 2_000)])
    assert (narrowed.timestamp_from_ms, left) == (2_000, [0, 1])
    (starts, ends) = narrowed.cut(STARTS, ENDS, {A0: 40, A1: 2, B0: 50})
    assert starts == {A0: 40, A1: 5, B0: 50} and ends == ENDS


def test_what_has_no_rule_is_left_to_the_query():
    conditions = [Condition("timestamp", "<", 5), Condition("value", "=", b"x"), Condition("offset", "=", "x"),
                  Condition("partition", "=", True), Condition("key", "in", (b"k",))]
    narrowed, left = narrowing(conditions)
    assert narrowed == Narrowing() and left == [0, 1, 2, 3, 4]


@given(st.lists(st.tuples(st.sampled_from(["=", ">", ">=", "<", "<=", "in"]),
                          st.lists(st.integers(0, 120), min_size=1, max_size=3)), max_size=4),
       st.integers(0, 60), st.integers(0, 130))
def test_the_cut_ranges_hold_exactly_the_offsets_that_meet_every_exact_condition(raw, start, end):
    conditions = [Condition("offset", op, tuple(values) if op == "in" else values[0]) for op, values in raw]
    narrowed, left = narrowing(conditions)
    starts, ends = narrowed.cut({A0: start}, {A0: end})

    def meets(offset: int, c: Condition) -> bool:
        if c.op == "in":
            return offset in c.value  # type: ignore[operator]
        return {"=": offset == c.value, ">": offset > c.value, ">=": offset >= c.value,  # type: ignore[operator]
                "<": offset < c.value, "<=": offset <= c.value}[c.op]  # type: ignore[operator]

    read = set(range(starts[A0], ends[A0]))
    wanted = {o for o in range(start, end) if all(meets(o, c) for c in conditions)}
    assert wanted <= read  # nothing a condition lets through is left unread
    exact = [c for i, c in enumerate(conditions) if i not in left]
    assert {o for o in read if all(meets(o, c) for c in exact)} == read  # what is read meets what was taken
