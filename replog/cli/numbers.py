"""Whole numbers given on the command line, checked against what the wire can carry.

A partition, a count or a broker id travels as int32 and an offset, a time or a producer id as int64: a
number past that is a typo, and is refused with the option's name before any request is made.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from replog.core.log_config import INT32_MAX, INT64_MAX
from replog.core.txn.metadata import PRODUCER_EPOCH_MAX


def out_of_range(value: int, low: int, high: int) -> str | None:
    """Why `value` is not between low and high, or None when it is."""
    if value < low:
        return f"{value} is below {low}, the least it can be"
    if value > high:
        return f"{value} is above {high}, the most it can be"
    return None


def first_out_of_range(values, low: int, high: int) -> str | None:
    """Why the first of `values` outside low..high is, or None when all are within."""
    return next(filter(None, (out_of_range(value, low, high) for value in values)), None)


def whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from low to high; argparse names the option in its refusal."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        problem = out_of_range(value, low, high)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    return parse


PARTITION = whole_number(0, INT32_MAX)
BROKER_ID = whole_number(0, INT32_MAX)
COUNT = whole_number(1, INT32_MAX)  # partitions, replicas
OFFSET = whole_number(0, INT64_MAX)
PRODUCER_ID = whole_number(0, INT64_MAX)
PRODUCER_EPOCH = whole_number(0, PRODUCER_EPOCH_MAX)
SHIFT = whole_number(-INT64_MAX, INT64_MAX)
