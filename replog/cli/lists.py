"""Comma-separated lists given on the command line, checked with a sentence that names the option."""

from __future__ import annotations

from replog.cli.numbers import INT32_MAX, first_out_of_range
from replog.client import AdminError
from replog.core.errors import ErrorCode


def whole_numbers(given: str | None, option: str, what: str, example: str) -> list[int] | None:
    """`given` ("0,2,5") as numbers in the order given; None when the option was left out."""
    if given is None:
        return None
    parts = [part.strip() for part in given.split(",")]
    if not all(part.isascii() and part.isdigit() for part in parts):
        raise AdminError(f"{option} takes {what} separated by commas, such as {example}, not {given!r}",
                         ErrorCode.INVALID_REQUEST)
    numbers = [int(part) for part in parts]
    problem = first_out_of_range(numbers, 0, INT32_MAX)
    if problem:
        raise AdminError(f"{option}: {problem}", ErrorCode.INVALID_REQUEST)
    return numbers
