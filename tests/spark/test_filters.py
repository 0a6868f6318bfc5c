"""Spark's pushed filters as row conditions (replog/spark/filters.py), and what the reader keeps of them."""

import datetime

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import (  # noqa: E402
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    Not,
    StringStartsWith,
)

from replog.core.row_conditions import Condition  # noqa: E402
from replog.spark.filters import condition_of  # noqa: E402
from replog.spark.options import source_options  # noqa: E402
from replog.spark.reader import ReplogFilteringBatchReader  # noqa: E402

UTC = datetime.timezone.utc


def test_filters_on_the_rows_columns_become_conditions():
    assert condition_of(EqualTo(("partition",), 2)) == Condition("partition", "=", 2)
    assert condition_of(In(("topic",), ("a", "b"))) == Condition("topic", "in", ("a", "b"))
    assert condition_of(LessThan(("offset",), 10)) == Condition("offset", "<", 10)
    instant = datetime.datetime(2026, 11, 25, 12, 0, 0, 999_999, tzinfo=UTC)
    assert condition_of(GreaterThanOrEqual(("timestamp",), instant)) == Condition(
        "timestamp", ">=", 1_795_608_000_999)  # rounded down: a lower bound may only move earlier


@pytest.mark.parametrize("spark_filter", [
    Not(EqualTo(("partition",), 2)),
    IsNotNull(("offset",)),
    StringStartsWith(("topic",), "a"),
    EqualTo(("value",), b"x"),
    GreaterThan(("timestamp",), datetime.datetime(2026, 11, 25)),  # no zone: no instant
    EqualTo(("a", "b"), 1),
])
def test_other_filters_have_no_condition(spark_filter):
    assert condition_of(spark_filter) is None


def test_the_reader_hands_back_what_spark_must_still_check_by_reference():
    reader = ReplogFilteringBatchReader(source_options({"bootstrap": "127.0.0.1:1", "subscribe": "t",
                                                        "pushFilters": "true"}, streaming=False))
    taken = [EqualTo(("partition",), 1), GreaterThanOrEqual(("offset",), 10), LessThan(("offset",), 20)]
    kept = [In(("offset",), (12, 15)), StringStartsWith(("topic",), "t"),
            GreaterThan(("timestamp",), datetime.datetime(2026, 1, 1, tzinfo=UTC))]
    handed_back = reader.pushFilters([taken[0], kept[0], taken[1], kept[1], taken[2], kept[2]])
    assert [id(f) for f in handed_back] == [id(f) for f in kept]
    assert str(reader._narrowing) == "partitions [1], offsets [12, 16), from time 1767225600000 ms"
