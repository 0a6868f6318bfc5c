"""Spark's pushed-down filters as the core's row conditions (replog/core/row_conditions.py).

Spark hands a reader the filters of a query it may take over (`pushFilters`, PySpark 4.1+, with
`spark.sql.python.filterPushdown.enabled`); each is turned into a `Condition` on one of the row
schema's columns, or None when the core has no rule for it (a NOT, IS NULL, a string match, a
column of its own). Timestamps arrive as datetimes and become milliseconds since the Unix epoch,
rounded down: a lower bound moved earlier reads a little more, never less.
"""

from __future__ import annotations

import datetime

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from replog.core.row_conditions import Condition

OPS = {EqualTo: "=", In: "in", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}
COLUMNS = ("topic", "partition", "offset", "timestamp")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
MILLISECOND = datetime.timedelta(milliseconds=1)


def _value(value: object) -> object:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return None  # a time without a zone: no instant to look up
        return (value - EPOCH) // MILLISECOND
    return value


def condition_of(spark_filter: Filter) -> Condition | None:
    op = OPS.get(type(spark_filter))
    attribute = getattr(spark_filter, "attribute", ())
    if op is None or len(attribute) != 1 or attribute[0] not in COLUMNS:
        return None
    value = spark_filter.value  # type: ignore[attr-defined]
    converted = tuple(_value(v) for v in value) if op == "in" else _value(value)
    if converted is None or (op == "in" and None in converted):  # type: ignore[operator]
        return None
    return Condition(attribute[0], op, converted)
